// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Little-endian loads and stores of the compressed payloads, at any alignment, and the
/// float <-> fp16 / bf16 conversions (round to nearest even; infinities and NaNs kept).
// IWYU pragma: private, include <dsgd/compress/fp16.hpp>
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dsgd::compress::detail {

// Payloads are little-endian, as the raw floats of a plain push are (frame.hpp).
static_assert(std::endian::native == std::endian::little, "dsgd's wire format assumes a little-endian host");

template <class T>
inline T load(const std::byte* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
inline void store(std::byte* p, T v) noexcept {
  std::memcpy(p, &v, sizeof v);
}

/// @returns @p f as IEEE binary16, rounded to nearest, ties to even; overflow gives infinity,
/// NaN stays a (quiet) NaN with the top bits of its payload.
inline std::uint16_t to_fp16(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));  // NaN
  if (mag >= 0x47800000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65536 or infinity
  if (mag < 0x38800000u) {  // below 2^-14: a subnormal half (or zero) in units of 2^-24
    if (mag < 0x33000000u) return static_cast<std::uint16_t>(sign);  // below 2^-25: zero
    const std::uint32_t e = mag >> 23, m = (mag & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - e;  // 14 .. 24
    std::uint32_t r = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<std::uint16_t>(sign | r);
  }
  std::uint32_t h = (mag - 0x38000000u) >> 13;  // exponent rebiased from 127 to 15
  const std::uint32_t rem = mag & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry rounds up to infinity
  return static_cast<std::uint16_t>(sign | h);
}

/// @returns the float @p h (binary16) is, exactly.
inline float from_fp16(std::uint16_t h) noexcept {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    const float v = static_cast<float>(m) * 0x1p-24f;  // exact: m < 2^10
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
}

/// @returns @p f as bfloat16 (its top 16 bits), rounded to nearest, ties to even; NaN stays a
/// quiet NaN.
inline std::uint16_t to_bf16(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/// @returns the float @p b (bfloat16) is, exactly.
inline float from_bf16(std::uint16_t b) noexcept { return std::bit_cast<float>(std::uint32_t(b) << 16); }

}  // namespace dsgd::compress::detail
