// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::momentum: SGD with (optionally Nesterov) momentum, in TensorFlow/PyTorch form.
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/device/concepts.hpp>
#include <dsgd/error.hpp>

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/memory.h>

#include <cstddef>
#include <string>

namespace dsgd::optim {

namespace detail {

// Nesterov is a template parameter so that the per-element loop carries no branch.
template <bool Nesterov>
struct momentum_kernel {
  float* w;
  float* v;
  const float* g;
  float learning_rate;
  float momentum;
  float grad_scale;
  DSGD_HOST_DEVICE void operator()(std::size_t i) const {
    const float gi = grad_scale * g[i];
    const float vi = momentum * v[i] + gi;
    v[i] = vi;
    if constexpr (Nesterov) {
      w[i] -= learning_rate * (gi + momentum * vi);
    } else {
      w[i] -= learning_rate * vi;
    }
  }
};

}  // namespace detail

/// SGD with momentum, as TensorFlow's MomentumOptimizer and PyTorch's SGD(momentum=m) define it.
///
/// With `g = grad_scale * grad`, every element is updated by
/// `v <- momentum * v + g`, then `w <- w - learning_rate * v`, or with Nesterov
/// `w <- w - learning_rate * (g + momentum * v)` using the updated `v`. The velocity starts at 0.
struct momentum {
  float learning_rate = 0.01f;
  float momentum = 0.9f;
  bool nesterov = false;

  /// The per-variable slot: one velocity per element, in @p D's memory.
  template <Device D>
  struct state {
    /// Allocates @p n zero velocities on @p device.
    state(const D&, std::size_t n) : velocity(n, 0.f) {}
    /// The velocity `v`, one per element of the variable.
    typename D::template vector<float> velocity;
    /// Calls `f(name, slot)` for each slot: what a checkpoint holds of this state.
    template <class F>
    void visit(F&& f) {
      f("velocity", velocity);
    }
  };

  /// Applies one update to the @p n elements at @p w from the gradient at @p g (raw pointers into
  /// @p device's memory; @p w and @p g must not overlap), in one fused pass.
  /// @throws dsgd::error (errc::shape_mismatch) when @p s was made for a different size.
  template <Device D>
  void apply(const D& device, state<D>& s, float* w, const float* g, std::size_t n,
             float grad_scale = 1.f) const {
    if (s.velocity.size() != n) {
      throw error(errc::shape_mismatch, "optim::momentum::apply: the state holds " +
                                            std::to_string(s.velocity.size()) +
                                            " velocities but n = " + std::to_string(n));
    }
    float* v = thrust::raw_pointer_cast(s.velocity.data());
    const auto first = thrust::counting_iterator<std::size_t>(0);
    const float m = momentum;
    if (nesterov) {
      thrust::for_each_n(device.policy(), first, n,
                         detail::momentum_kernel<true>{w, v, g, learning_rate, m, grad_scale});
    } else {
      thrust::for_each_n(device.policy(), first, n,
                         detail::momentum_kernel<false>{w, v, g, learning_rate, m, grad_scale});
    }
  }
};

}  // namespace dsgd::optim
