// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::sgd: plain stochastic gradient descent, w <- w - lr * g.
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/device/concepts.hpp>

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstddef>

namespace dsgd::optim {

namespace detail {

struct sgd_kernel {
  float* w;
  const float* g;
  float learning_rate;
  float grad_scale;
  // Scaling g first keeps the rounding identical to the other optimizers' `g = grad_scale * g`.
  DSGD_HOST_DEVICE void operator()(std::size_t i) const {
    w[i] -= learning_rate * (grad_scale * g[i]);
  }
};

}  // namespace detail

/// Plain SGD: with `g = grad_scale * grad`, `w <- w - learning_rate * g`.
struct sgd {
  float learning_rate = 0.01f;

  /// SGD keeps no per-variable state.
  template <Device D>
  struct state {
    state(const D&, std::size_t) {}
    /// Plain SGD keeps no state beside the variable: nothing to visit.
    template <class F>
    void visit(F&&) {}
  };

  /// Applies one update to the @p n elements at @p w (raw pointers into @p device's memory).
  template <Device D>
  void apply(const D& device, state<D>&, float* w, const float* g, std::size_t n,
             float grad_scale = 1.f) const {
    thrust::for_each_n(device.policy(), thrust::counting_iterator<std::size_t>(0), n,
                       detail::sgd_kernel{w, g, learning_rate, grad_scale});
  }
};

}  // namespace dsgd::optim
