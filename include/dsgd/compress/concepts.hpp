// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The Compressor concept: how a worker encodes a gradient for the wire (push) and how a ps
/// decodes it into its accumulator; the wire ids of the encodings.
#pragma once

#include <dsgd/error.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace dsgd {

namespace compress {

/// The encodings dsgd knows, as they travel (one byte; docs/compression.md has their layouts).
enum class encoding : std::uint8_t {
  none = 0,     ///< raw floats (a plain push)
  fp16 = 1,     ///< IEEE half, round to nearest even
  bf16 = 2,     ///< bfloat16, round to nearest even
  top_k = 3,    ///< the k largest magnitudes of gradient + residual, with their indices
  two_bit = 4,  ///< MXNet's 2-bit quantisation: +threshold, -threshold or 0 per element
};

/// @returns the encoding's name ("top_k").
constexpr const char* to_string(encoding e) noexcept {
  switch (e) {
    case encoding::none:
      return "none";
    case encoding::fp16:
      return "fp16";
    case encoding::bf16:
      return "bf16";
    case encoding::top_k:
      return "top_k";
    case encoding::two_bit:
      return "two_bit";
  }
  return "unknown";
}

/// Throws what every decoder throws for bytes that are no payload of its encoding.
/// @throws dsgd::error(errc::bad_frame) "malformed <encoding> payload of <what>: <why>"
[[noreturn]] inline void malformed(encoding e, std::string_view what, const std::string& why) {
  throw error(errc::bad_frame,
              std::string("malformed ") + to_string(e) + " payload of " + std::string(what) + ": " + why);
}

}  // namespace compress

/// A Compressor @p C turns a gradient of n floats into a payload and back, on the host:
///  - `C::id`: its compress::encoding; `C::uses_residual`: whether it keeps an error-feedback
///    residual (one float per element, per worker and variable, owned by the caller);
///  - `c.describe()`: its name and parameters ("top_k(0.01)"), which a ps and a worker compare
///    when the worker registers;
///  - `c.max_bytes(n)`: the largest payload of n elements, the cap a ps checks a push's length
///    against before it allocates anything;
///  - `c.encode(grad, residual, out) -> bytes`: one fused pass that reads the gradient and the
///    residual (empty without uses_residual) once and writes the payload into @p out (at least
///    max_bytes(n), 4-byte aligned) and the new residual; decoded + new residual equals
///    gradient + old residual, element by element;
///  - `c.check(payload, n, what)`: throws dsgd::error(errc::bad_frame) naming @p what (the
///    variable) for bytes that are no payload of n elements (truncated, an odd length, an index
///    out of range, a count above n), touching nothing;
///  - `c.decode_add(payload, acc, n)`: adds a checked payload into @p acc (n floats), the ps's
///    accumulator, with no temporary of n elements.
/// Compressors are pure: they know nothing of the network. See docs/compression.md.
template <class C>
concept Compressor = std::copy_constructible<C> &&
    requires(const C& c, std::size_t n, std::span<const float> g, std::span<float> r, std::span<std::byte> out,
             std::span<const std::byte> in, float* acc) {
  { C::id } -> std::convertible_to<compress::encoding>;
  { C::uses_residual } -> std::convertible_to<bool>;
  { c.describe() } -> std::convertible_to<std::string>;
  { c.max_bytes(n) } -> std::same_as<std::size_t>;
  { c.encode(g, r, out) } -> std::same_as<std::size_t>;
  c.check(in, n, std::string_view());
  c.decode_add(in, acc, n);
};

}  // namespace dsgd
