// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// compress::top_k: top-k sparsification with error feedback (Stich et al., "Sparsified SGD
/// with memory", 2018; Lin et al., "Deep gradient compression", 2018).
#pragma once

#include <dsgd/compress/concepts.hpp>
#include <dsgd/compress/detail/bytes.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsgd::compress {

/// Sends the k = ceil(ratio x n) elements of largest magnitude of gradient + residual, with
/// their indices; what is not sent stays in the residual (error feedback) and is sent once it
/// has grown large enough. The residual is kept per worker and per variable shard.
///
/// Payload: u32 count, then count u32 indices (strictly increasing, below n), then count f32
/// values: 4 + 8 x count bytes, count <= k.
struct top_k {
  static constexpr std::string_view name = "top_k";  ///< registered by
  static constexpr bool uses_residual = true;        ///< error feedback

  float ratio = 0.01f;  ///< the fraction of elements sent, in (0, 1]

  /// @returns "top_k(0.01)": what registration compares.
  std::string describe() const {
    char buf[48];
    std::snprintf(buf, sizeof buf, "top_k(%g)", static_cast<double>(ratio));
    return buf;
  }
  /// @returns k for @p n elements: ceil(ratio x n), at least 1 and at most n.
  std::size_t k(std::size_t n) const noexcept {
    if (n == 0) return 0;
    // The product in float, as written: 0.1f x 100 is 10, where in double it is 10.0000001.
    const auto want = static_cast<std::size_t>(std::ceil(ratio * static_cast<float>(n)));
    return std::clamp<std::size_t>(want, 1, n);
  }
  std::size_t max_bytes(std::size_t n) const noexcept { return 4 + 8 * k(n); }

  /// residual += grad in one pass, keeping the k largest magnitudes in a heap of k entries
  /// (no temporary of n elements); those are written to @p out and zeroed in the residual.
  /// @returns the payload's bytes
  std::size_t encode(std::span<const float> grad, std::span<float> residual, std::span<std::byte> out) const {
    const std::size_t n = grad.size(), kk = k(n);
    struct entry {
      float magnitude;
      std::uint32_t index;
    };
    const auto smaller_first = [](const entry& a, const entry& b) { return a.magnitude > b.magnitude; };
    std::vector<entry> heap;  // a min-heap by magnitude: its front is the smallest kept
    heap.reserve(kk);
    float* r = residual.data();
    for (std::size_t i = 0; i < n; ++i) {
      const float v = r[i] + grad[i];
      r[i] = v;
      const float m = std::fabs(v);
      if (heap.size() < kk) {
        heap.push_back({m, static_cast<std::uint32_t>(i)});
        std::push_heap(heap.begin(), heap.end(), smaller_first);
      } else if (m > heap.front().magnitude) {
        std::pop_heap(heap.begin(), heap.end(), smaller_first);
        heap.back() = {m, static_cast<std::uint32_t>(i)};
        std::push_heap(heap.begin(), heap.end(), smaller_first);
      }
    }
    std::sort(heap.begin(), heap.end(), [](const entry& a, const entry& b) { return a.index < b.index; });
    std::byte* o = out.data();
    detail::store<std::uint32_t>(o, static_cast<std::uint32_t>(heap.size()));
    std::byte* values = o + 4 + 4 * heap.size();
    for (std::size_t j = 0; j < heap.size(); ++j) {
      const auto i = heap[j].index;
      detail::store<std::uint32_t>(o + 4 + 4 * j, i);
      detail::store<float>(values + 4 * j, r[i]);
      r[i] = 0.f;  // sent: nothing of it is left behind
    }
    return 4 + 8 * heap.size();
  }

  /// @throws dsgd::error(errc::bad_frame) naming @p what for a truncated payload, a count
  ///         above @p n or k(n), a length other than 4 + 8 x count, or an index that is out of
  ///         range or not above the one before it
  void check(std::span<const std::byte> in, std::size_t n, std::string_view what) const {
    if (in.size() < 4) malformed(name, what, "truncated: " + std::to_string(in.size()) + " bytes, no count");
    const std::uint64_t count = detail::load<std::uint32_t>(in.data());
    if (count > n)
      malformed(name, what,
                "count " + std::to_string(count) + " is larger than the variable's " + std::to_string(n) + " elements");
    if (count > k(n))
      malformed(name, what,
                "count " + std::to_string(count) + " is above k = " + std::to_string(k(n)) + " of " + describe());
    if (in.size() != 4 + 8 * count)
      malformed(name, what,
                std::to_string(in.size()) + " bytes for " + std::to_string(count) + " entries (expected " +
                    std::to_string(4 + 8 * count) + ")");
    std::uint64_t last = 0;
    for (std::uint64_t j = 0; j < count; ++j) {
      const std::uint64_t i = detail::load<std::uint32_t>(in.data() + 4 + 4 * j);
      if (i >= n)
        malformed(name, what,
                  "index " + std::to_string(i) + " (entry " + std::to_string(j) + ") is out of range for " +
                      std::to_string(n) + " elements");
      if (j > 0 && i <= last)
        malformed(
            name, what,
            "index " + std::to_string(i) + " (entry " + std::to_string(j) + ") is not above " + std::to_string(last));
      last = i;
    }
  }

  /// acc[index] += value for every entry of checked @p in.
  void decode_add(std::span<const std::byte> in, float* acc, std::size_t /*n*/) const noexcept {
    const std::size_t count = detail::load<std::uint32_t>(in.data());
    const std::byte* values = in.data() + 4 + 4 * count;
    for (std::size_t j = 0; j < count; ++j)
      acc[detail::load<std::uint32_t>(in.data() + 4 + 4 * j)] += detail::load<float>(values + 4 * j);
  }
};

static_assert(Compressor<top_k>);

}  // namespace dsgd::compress
