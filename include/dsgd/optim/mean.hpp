// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::accumulate and optim::mean_of: the gradient reductions that sync updates need.
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/device/concepts.hpp>
#include <dsgd/error.hpp>

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <cstddef>
#include <span>

namespace dsgd::optim {

namespace detail {

struct accumulate_kernel {
  float* acc;
  const float* g;
  DSGD_HOST_DEVICE void operator()(std::size_t i) const { acc[i] += g[i]; }
};

/// How many arrays one pass of mean_of reads: the kernel carries their pointers by value.
inline constexpr std::size_t mean_group = 8;

// One pass: out = scale * (in[0] + ... + in[Count - 1]), or with Carry
// out = scale * (out + in[0] + ... + in[Count - 1]), summed left to right. Count is a template
// parameter so that the sum unrolls and the loop over elements vectorises; the running sum is
// read through `out` itself, never through an input pointer, so that the compiler sees that it
// reads and writes the same element. scale is 1 (exact) until the last pass.
template <std::size_t Count, bool Carry>
struct mean_kernel {
  const float* in[Count];
  float* out;
  float scale;
  DSGD_HOST_DEVICE void operator()(std::size_t i) const {
    float sum;
    if constexpr (Carry) {
      sum = out[i] + in[0][i];
    } else {
      sum = in[0][i];
    }
    for (std::size_t j = 1; j < Count; ++j) sum += in[j][i];
    out[i] = sum * scale;
  }
};

template <std::size_t Count, bool Carry, Device D>
void mean_pass(const D& device, float* out, const float* const* in, std::size_t n, float scale) {
  mean_kernel<Count, Carry> kernel{};
  for (std::size_t j = 0; j < Count; ++j) kernel.in[j] = in[j];
  kernel.out = out;
  kernel.scale = scale;
  thrust::for_each_n(device.policy(), thrust::counting_iterator<std::size_t>(0), n, kernel);
}

template <bool Carry, Device D>
void mean_pass(const D& device, float* out, const float* const* in, std::size_t count, std::size_t n, float scale) {
  static_assert(mean_group == 8, "the cases below cover 1..mean_group inputs");
  switch (count) {
    case 1:
      return mean_pass<1, Carry>(device, out, in, n, scale);
    case 2:
      return mean_pass<2, Carry>(device, out, in, n, scale);
    case 3:
      return mean_pass<3, Carry>(device, out, in, n, scale);
    case 4:
      return mean_pass<4, Carry>(device, out, in, n, scale);
    case 5:
      return mean_pass<5, Carry>(device, out, in, n, scale);
    case 6:
      return mean_pass<6, Carry>(device, out, in, n, scale);
    case 7:
      return mean_pass<7, Carry>(device, out, in, n, scale);
    default:
      return mean_pass<8, Carry>(device, out, in, n, scale);
  }
}

}  // namespace detail

/// Adds the @p n gradients at @p g into the @p n sums at @p acc: `acc[i] += g[i]`.
///
/// Raw pointers into @p device's memory. Apply the sum later with `grad_scale = 1 / k`.
template <Device D>
void accumulate(const D& device, float* acc, const float* g, std::size_t n) {
  thrust::for_each_n(device.policy(), thrust::counting_iterator<std::size_t>(0), n, detail::accumulate_kernel{acc, g});
}

/// Writes the element-wise mean of the k = `inputs.size()` arrays of @p n floats to @p out.
///
/// One fused pass reads all inputs when k <= 8; a larger k takes ceil(k / 8) passes, each later
/// one reading the running sum back from @p out. Elements are summed in input order,
/// then multiplied by 1/k. @p out must not overlap any input.
/// @throws dsgd::error (errc::invalid_argument) when @p inputs is empty.
template <Device D>
void mean_of(const D& device, float* out, std::span<const float* const> inputs, std::size_t n) {
  const std::size_t k = inputs.size();
  if (k == 0) {
    throw error(errc::invalid_argument,
                "optim::mean_of: no input arrays (k = 0); the mean of no gradients is undefined");
  }
  const float scale = 1.f / static_cast<float>(k);
  for (std::size_t done = 0; done < k;) {
    const std::size_t count = k - done < detail::mean_group ? k - done : detail::mean_group;
    const float pass_scale = done + count == k ? scale : 1.f;
    if (done == 0) {
      detail::mean_pass<false>(device, out, inputs.data(), count, n, pass_scale);
    } else {
      detail::mean_pass<true>(device, out, inputs.data() + done, count, n, pass_scale);
    }
    done += count;
  }
}

}  // namespace dsgd::optim
