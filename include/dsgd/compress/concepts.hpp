// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The Compressor concept: how a worker encodes a gradient for the wire (push) and how a ps
/// decodes it into its accumulator; the error a decoder throws for a malformed payload.
#pragma once

#include <dsgd/error.hpp>

#include <concepts>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace dsgd {

namespace compress {

/// Throws what every decoder throws for bytes that are no payload of compressor @p name.
/// @throws dsgd::error(errc::bad_frame) "malformed <name> payload of <what>: <why>"
[[noreturn]] inline void malformed(std::string_view name, std::string_view what, const std::string& why) {
  throw error(errc::bad_frame, "malformed " + std::string(name) + " payload of " + std::string(what) + ": " + why);
}

}  // namespace compress

/// A Compressor @p C turns a gradient of n floats into a payload and back, on the host:
///  - `C::name`: the name it is registered by (compress::registry) and that starts its
///    describe() ("top_k"); `C::uses_residual`: whether it keeps an error-feedback residual (one
///    float per element, per worker and variable, owned by the caller);
///  - `c.describe()`: its name and parameters ("top_k(0.01)"), which travels in a worker's
///    registration and which the ps compares with its own choice: the wire names a compressor,
///    it has no closed list of ids, so a user's compressor travels as the shipped ones do;
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
/// Compressors are pure: they know nothing of the network. compress::codec holds any of them;
/// compress::registry makes one from its text ("top_k(0.01)"). See docs/compression.md.
template <class C>
concept Compressor = std::copy_constructible<C> &&
    requires(const C& c, std::size_t n, std::span<const float> g, std::span<float> r, std::span<std::byte> out,
             std::span<const std::byte> in, float* acc) {
  { C::name } -> std::convertible_to<std::string_view>;
  { C::uses_residual } -> std::convertible_to<bool>;
  { c.describe() } -> std::convertible_to<std::string>;
  { c.max_bytes(n) } -> std::same_as<std::size_t>;
  { c.encode(g, r, out) } -> std::same_as<std::size_t>;
  c.check(in, n, std::string_view());
  c.decode_add(in, acc, n);
};

}  // namespace dsgd
