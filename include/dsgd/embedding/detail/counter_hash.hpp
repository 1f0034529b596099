// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The counter-based hashing behind the tables' reproducible numbers: a dynamic row's initial
/// value (embedding/initializer.hpp) and probability admission (embedding/admission.hpp) are pure
/// functions of (seed, key, counter) built from these few integer operations, so they give the
/// same bits on every machine, in every process and after any resharding.
// IWYU pragma: private, include <dsgd/dsgd.hpp>
#pragma once

#include <dsgd/detail/mix64.hpp>

#include <cstdint>

namespace dsgd::embedding::detail {

/// Weyl increment of splitmix64 (2^64 / golden ratio, odd).
inline constexpr std::uint64_t golden_gamma = 0x9e3779b97f4a7c15ull;

/// The splitmix64 finaliser (dsgd::detail::mix64).
constexpr std::uint64_t finalise(std::uint64_t x) noexcept { return dsgd::detail::mix64(x); }

/// The hash of (@p seed, @p key), the per-row part of counter_hash: compute it once per row.
constexpr std::uint64_t row_stream(std::uint64_t seed, std::uint64_t key) noexcept {
  return finalise(finalise(seed + golden_gamma) ^ key);
}

/// Word @p counter of the stream @p stream (see row_stream): splitmix64's output number
/// counter + 1 from the state @p stream, i.e. finalise(stream + (counter + 1) * golden_gamma).
constexpr std::uint64_t stream_word(std::uint64_t stream, std::uint64_t counter) noexcept {
  return finalise(stream + (counter + 1) * golden_gamma);
}

/// counter_hash(seed, key, counter) = stream_word(row_stream(seed, key), counter).
constexpr std::uint64_t counter_hash(std::uint64_t seed, std::uint64_t key, std::uint64_t counter) noexcept {
  return stream_word(row_stream(seed, key), counter);
}

/// A double in [0, 1) from the top 53 bits of @p h (exact: every value a multiple of 2^-53).
constexpr double unit_double(std::uint64_t h) noexcept { return static_cast<double>(h >> 11) * 0x1.0p-53; }

/// A cheap mixing hash for keys in the tables' hash maps: identity-hashed ids (0, 1, 2, ... or
/// strided ones) would otherwise crowd a power-of-two table's low bits.
struct key_hasher {
  std::uint64_t operator()(std::uint64_t key) const noexcept {
    key ^= key >> 32;
    key *= 0xd6e8feb86659fd93ull;
    return key ^ (key >> 32);
  }
};

}  // namespace dsgd::embedding::detail
