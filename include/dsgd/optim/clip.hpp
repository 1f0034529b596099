// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::global_norm and optim::clip_by_global_norm: gradient clipping over all of a worker's
/// gradients at once, as TensorFlow's `tf.clip_by_global_norm` and PyTorch's
/// `torch.nn.utils.clip_grad_norm_`.
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/device/concepts.hpp>
#include <dsgd/error.hpp>

#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform_reduce.h>

#include <cmath>
#include <cstddef>
#include <iterator>
#include <ranges>
#include <string>

namespace dsgd::optim {

namespace detail {

struct square_kernel {
  DSGD_HOST_DEVICE double operator()(float x) const { return static_cast<double>(x) * static_cast<double>(x); }
};

struct scale_kernel {
  float* g;
  float scale;
  DSGD_HOST_DEVICE void operator()(std::size_t i) const { g[i] *= scale; }
};

}  // namespace detail

/// A range of gradient arrays: each element `g` is a contiguous float array in a device's
/// memory, `std::data(g)` and `std::size(g)` (a dsgd::tensor, a std::span<float>, a
/// std::vector<float> of a host device).
template <class R>
concept gradient_arrays = std::ranges::input_range<R> && requires(std::ranges::range_reference_t<R> g) {
  { std::data(g) } -> std::convertible_to<const float*>;
  { std::size(g) } -> std::convertible_to<std::size_t>;
};

/// gradient_arrays whose elements may be written (`std::data(g)` is a `float*`).
template <class R>
concept writable_gradient_arrays = gradient_arrays<R> && requires(std::ranges::range_reference_t<R> g) {
  { std::data(g) } -> std::convertible_to<float*>;
};

/// @returns `sqrt(sum of g[i]^2 over every element of every array in @p gradients)`, the
/// global norm of TensorFlow's `tf.linalg.global_norm` (0 for no arrays), summed in double on
/// @p device, array by array in order (the same inputs give the same norm, bit for bit, on the
/// same device and thread count).
template <Device D, gradient_arrays R>
float global_norm(const D& device, const R& gradients) {
  double sum = 0;
  for (const auto& g : gradients) {
    const float* p = std::data(g);
    const std::size_t n = std::size(g);
    if (n == 0) continue;
    sum += thrust::transform_reduce(device.policy(), p, p + n, detail::square_kernel{}, 0.0, thrust::plus<double>{});
  }
  return static_cast<float>(std::sqrt(sum));
}

/// Clips @p gradients in place so that their global norm is at most @p clip_norm, as
/// `tf.clip_by_global_norm(gradients, clip_norm)`: when the global norm `N` (global_norm())
/// exceeds @p clip_norm, every element of every array is multiplied by `clip_norm / N`
/// (computed in double), so the direction of the whole update is kept; otherwise nothing
/// changes. A worker calls it on its gradients after computing them and before push():
///
/// @code
///   model.forward_backward(images, labels, batch);
///   const float norm = dsgd::optim::clip_by_global_norm(model.device(), model.gradients(), 5.f);
///   trainer.push_pull(model.gradients(), model.parameters());
/// @endcode
///
/// @returns the global norm before clipping (for a summary). A norm that is not finite (a NaN or
/// an infinity in some gradient) leaves the gradients as they are, so that the push's check
/// names the variable that holds it; TensorFlow would fill them with NaN instead.
/// @throws dsgd::error (errc::invalid_argument) when @p clip_norm is not a finite number > 0
template <Device D, writable_gradient_arrays R>
float clip_by_global_norm(const D& device, R&& gradients, float clip_norm) {
  if (!(clip_norm > 0.f) || !std::isfinite(clip_norm))
    throw error(errc::invalid_argument, "optim::clip_by_global_norm: clip_norm is " + std::to_string(clip_norm) +
                                            "; expected a finite number > 0");
  const float norm = global_norm(device, gradients);
  if (!std::isfinite(norm) || norm <= clip_norm) return norm;
  const float scale = static_cast<float>(static_cast<double>(clip_norm) / static_cast<double>(norm));
  for (auto&& g : gradients) {
    const std::size_t n = std::size(g);
    if (n == 0) continue;
    thrust::for_each_n(device.policy(), thrust::counting_iterator<std::size_t>(0), n,
                       detail::scale_kernel{std::data(g), scale});
  }
  device.synchronize();
  return norm;
}

}  // namespace dsgd::optim
