// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// dsgd::detail::mix64: the splitmix64 finaliser and its inverse, the one integer mixer behind the project's
/// reproducible numbers (the click stream's draws, a table's initial rows and admission coins,
/// key spaces, the routing of keys to ps tasks).
// IWYU pragma: private, include <dsgd/dsgd.hpp>
#pragma once

#include <cstdint>

namespace dsgd::detail {

/// The splitmix64 finaliser (Stafford's variant 13): a bijection of 64-bit words whose every
/// output bit depends on every input bit.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// The inverse of an odd @p a modulo 2^64 (each Newton step doubles the correct low bits).
constexpr std::uint64_t inverse_odd(std::uint64_t a) noexcept {
  std::uint64_t x = a;  // correct to 3 bits for any odd a
  for (int i = 0; i < 5; ++i) x *= 2 - a * x;
  return x;
}

/// The inverse of mix64: unmix64(mix64(x)) == x.
constexpr std::uint64_t unmix64(std::uint64_t x) noexcept {
  x ^= (x >> 31) ^ (x >> 62);
  x *= inverse_odd(0x94d049bb133111ebull);
  x ^= (x >> 27) ^ (x >> 54);
  x *= inverse_odd(0xbf58476d1ce4e5b9ull);
  return x ^ (x >> 30) ^ (x >> 60);
}

}  // namespace dsgd::detail
