// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// What fp16 and bf16 share: a payload of n 16-bit values, little-endian, no residual.
// IWYU pragma: private, include <dsgd/compress/fp16.hpp>
#pragma once

#include <dsgd/compress/concepts.hpp>
#include <dsgd/compress/detail/bytes.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace dsgd::compress::detail {

/// A Compressor that sends each element as 16 bits: @p To and @p From convert one float;
/// @p Brain picks the name, "bf16" (bfloat16) or "fp16" (IEEE half).
template <bool Brain, std::uint16_t (*To)(float), float (*From)(std::uint16_t)>
struct sixteen_bit {
  static constexpr std::string_view name = Brain ? "bf16" : "fp16";  ///< registered by
  static constexpr bool uses_residual = false;                       ///< rounding errors are not fed back

  std::string describe() const { return std::string(name); }
  std::size_t max_bytes(std::size_t n) const noexcept { return 2 * n; }

  /// Writes every element of @p grad as 16 bits into @p out. @returns 2 x grad.size()
  std::size_t encode(std::span<const float> grad, std::span<float> /*residual*/, std::span<std::byte> out) const {
    std::byte* o = out.data();
    for (std::size_t i = 0; i < grad.size(); ++i) store<std::uint16_t>(o + 2 * i, To(grad[i]));
    return 2 * grad.size();
  }

  /// @throws dsgd::error(errc::bad_frame) unless @p in is exactly 2 x @p n bytes
  void check(std::span<const std::byte> in, std::size_t n, std::string_view what) const {
    if (in.size() != 2 * n)
      malformed(name, what,
                std::to_string(in.size()) + " bytes for " + std::to_string(n) + " elements (expected " +
                    std::to_string(2 * n) + ")");
  }

  /// acc[i] += the i-th value of checked @p in.
  void decode_add(std::span<const std::byte> in, float* acc, std::size_t n) const noexcept {
    const std::byte* p = in.data();
    for (std::size_t i = 0; i < n; ++i) acc[i] += From(load<std::uint16_t>(p + 2 * i));
  }
};

}  // namespace dsgd::compress::detail
