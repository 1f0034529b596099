// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// update::chunked_apply: an optimizer's update written out of place, a range of elements at a
/// time, so that a ps can apply a large push chunk by chunk while the rest is still arriving.
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/device/concepts.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/sgd.hpp>

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/memory.h>

#include <cstddef>

namespace dsgd::update {

namespace detail {

// The same expressions as optim::detail::sgd_kernel and momentum_kernel, reading the old values
// and slots and writing new ones, so a chunked push ends bit for bit where an in-place one does.
struct chunked_sgd_kernel {
  const float* w_in;
  float* w_out;
  const float* g;
  std::size_t first;
  float learning_rate;
  float grad_scale;
  DSGD_HOST_DEVICE void operator()(std::size_t k) const {
    const std::size_t i = first + k;
    w_out[i] = w_in[i] - learning_rate * (grad_scale * g[i]);
  }
};

template <bool Nesterov>
struct chunked_momentum_kernel {
  const float* w_in;
  float* w_out;
  const float* v_in;
  float* v_out;
  const float* g;
  std::size_t first;
  float learning_rate;
  float momentum;
  float grad_scale;
  DSGD_HOST_DEVICE void operator()(std::size_t k) const {
    const std::size_t i = first + k;
    const float gi = grad_scale * g[i];
    const float vi = momentum * v_in[i] + gi;
    v_out[i] = vi;
    if constexpr (Nesterov) {
      w_out[i] = w_in[i] - learning_rate * (gi + momentum * vi);
    } else {
      w_out[i] = w_in[i] - learning_rate * vi;
    }
  }
};

}  // namespace detail

/// How optimizer @p O updates elements [first, first + count) of a variable out of place: new
/// values and slots are written to other buffers while the old ones stay readable. With it, the
/// async and bounded-staleness shards apply a push chunk by chunk as it arrives and publish the
/// result when the last chunk is in (docs/design.md, "Chunked apply"). Specialise it with
/// `available = true` and the `apply` below; an optimizer without one is applied whole, when
/// the push is complete. Reading only the old state and writing only the new is what makes a
/// push that never completes cost nothing: its half-written new buffers are simply dropped.
template <class O>
struct chunked_apply {
  static constexpr bool available = false;  ///< O is applied whole
};

/// Plain SGD, out of place: `w_out[i] = w_in[i] - lr * scale * g[i]`.
template <>
struct chunked_apply<optim::sgd> {
  static constexpr bool available = true;  ///< optim::sgd has a chunked apply
  /// Writes elements [first, first + count) of @p w_out (and of @p out's slots) from those of
  /// @p w_in (and @p in's slots) and @p g; every pointer is a whole variable in @p device's
  /// memory, and no output aliases an input.
  template <Device D>
  static void apply(const optim::sgd& o, const D& device, const typename optim::sgd::template state<D>& /*in*/,
                    typename optim::sgd::template state<D>& /*out*/, const float* w_in, float* w_out, const float* g,
                    std::size_t first, std::size_t count, float grad_scale) {
    thrust::for_each_n(device.policy(), thrust::counting_iterator<std::size_t>(0), count,
                       detail::chunked_sgd_kernel{w_in, w_out, g, first, o.learning_rate, grad_scale});
  }
};

/// Momentum (and Nesterov), out of place: the velocity slot is read from @p in and written to
/// @p out.
template <>
struct chunked_apply<optim::momentum> {
  static constexpr bool available = true;  ///< optim::momentum has a chunked apply
  /// As chunked_apply<optim::sgd>::apply, with the velocity.
  template <Device D>
  static void apply(const optim::momentum& o, const D& device, const typename optim::momentum::template state<D>& in,
                    typename optim::momentum::template state<D>& out, const float* w_in, float* w_out,
                    const float* g, std::size_t first, std::size_t count, float grad_scale) {
    const float* v_in = thrust::raw_pointer_cast(in.velocity.data());
    float* v_out = thrust::raw_pointer_cast(out.velocity.data());
    const auto k = thrust::counting_iterator<std::size_t>(0);
    if (o.nesterov) {
      thrust::for_each_n(device.policy(), k, count,
                         detail::chunked_momentum_kernel<true>{w_in, w_out, v_in, v_out, g, first, o.learning_rate,
                                                               o.momentum, grad_scale});
    } else {
      thrust::for_each_n(device.policy(), k, count,
                         detail::chunked_momentum_kernel<false>{w_in, w_out, v_in, v_out, g, first, o.learning_rate,
                                                                o.momentum, grad_scale});
    }
  }
};

}  // namespace dsgd::update
