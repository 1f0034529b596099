// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// embedding::xxhash64, string_key and key_space: the keys of embedding tables. A string feature
/// value ("C1:68fd1e64", a user id, a URL) maps to a 64-bit key by XXH64 (Yann Collet's
/// xxHash64, its published specification, seed 0 unless given): stable across machines,
/// compilers, endianness and dsgd versions, so a key written in a checkpoint or computed by a
/// serving system in another language (every xxHash binding gives the same number) finds the same
/// row. A key_space lets several features share one table: key(feature, id) puts the feature's
/// index in the top bits of the id and mixes the word with a bijection, so two features never
/// produce the same key, whatever their ids. docs/embeddings.md, "Keys", names the test vectors.
///
/// @code
/// using namespace dsgd::embedding;
/// std::uint64_t k = string_key("68fd1e64");         // == XXH64("68fd1e64", seed 0)
/// key_space space(26);                               // 26 features, one table
/// std::uint64_t k3 = space.key(3, "68fd1e64");       // feature 3's key for that value
/// std::uint64_t k4 = space.key(4, std::uint64_t{7}); // feature 4's key for integer id 7
/// @endcode
#pragma once

#include <dsgd/detail/mix64.hpp>
#include <dsgd/error.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace dsgd::embedding {

namespace detail {

// XXH64's five primes (the specification's PRIME64_1..5).
inline constexpr std::uint64_t xxh_p1 = 0x9E3779B185EBCA87ull;
inline constexpr std::uint64_t xxh_p2 = 0xC2B2AE3D27D4EB4Full;
inline constexpr std::uint64_t xxh_p3 = 0x165667B19E3779F9ull;
inline constexpr std::uint64_t xxh_p4 = 0x85EBCA77C2B2AE63ull;
inline constexpr std::uint64_t xxh_p5 = 0x27D4EB2F165667C5ull;

// Bytes are read one at a time and assembled little-endian, which makes the hash the same on
// every byte order and usable in constant expressions; compilers fold the shifts into one load.
template <class Byte>
constexpr std::uint64_t read_le(const Byte* p, int bytes) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= std::uint64_t{static_cast<std::uint8_t>(p[i])} << (8 * i);
  return v;
}

constexpr std::uint64_t xxh_round(std::uint64_t acc, std::uint64_t lane) noexcept {
  return std::rotl(acc + lane * xxh_p2, 31) * xxh_p1;
}

constexpr std::uint64_t xxh_merge(std::uint64_t acc, std::uint64_t v) noexcept {
  return (acc ^ xxh_round(0, v)) * xxh_p1 + xxh_p4;
}

template <class Byte>
constexpr std::uint64_t xxhash64(const Byte* p, std::size_t n, std::uint64_t seed) noexcept {
  const Byte* const end = p + n;
  std::uint64_t h;
  if (n >= 32) {
    std::uint64_t v1 = seed + xxh_p1 + xxh_p2, v2 = seed + xxh_p2, v3 = seed, v4 = seed - xxh_p1;
    for (; end - p >= 32; p += 32) {
      v1 = xxh_round(v1, read_le(p, 8));
      v2 = xxh_round(v2, read_le(p + 8, 8));
      v3 = xxh_round(v3, read_le(p + 16, 8));
      v4 = xxh_round(v4, read_le(p + 24, 8));
    }
    h = std::rotl(v1, 1) + std::rotl(v2, 7) + std::rotl(v3, 12) + std::rotl(v4, 18);
    h = xxh_merge(xxh_merge(xxh_merge(xxh_merge(h, v1), v2), v3), v4);
  } else {
    h = seed + xxh_p5;
  }
  h += static_cast<std::uint64_t>(n);
  for (; end - p >= 8; p += 8) h = std::rotl(h ^ xxh_round(0, read_le(p, 8)), 27) * xxh_p1 + xxh_p4;
  if (end - p >= 4) {
    h = std::rotl(h ^ (read_le(p, 4) * xxh_p1), 23) * xxh_p2 + xxh_p3;
    p += 4;
  }
  for (; p < end; ++p) h = std::rotl(h ^ (std::uint64_t{static_cast<std::uint8_t>(*p)} * xxh_p5), 11) * xxh_p1;
  h = (h ^ (h >> 33)) * xxh_p2;
  h = (h ^ (h >> 29)) * xxh_p3;
  return h ^ (h >> 32);
}

/// The splitmix64 finaliser (a bijection of 64-bit words whose every output bit depends on
/// every input bit).
using dsgd::detail::mix64;

/// Its inverse.
using dsgd::detail::unmix64;

}  // namespace detail

/// XXH64 of @p bytes with @p seed (xxHash's specification, version 0.8): the same number as
/// every conforming xxHash library (C's XXH64(), Python's xxhash.xxh64_intdigest(), Go's
/// cespare/xxhash with seed 0) on every machine.
///
/// Complexity: O(size), about a byte per cycle for short keys. Thread safety: a pure function.
constexpr std::uint64_t xxhash64(std::span<const std::byte> bytes, std::uint64_t seed = 0) noexcept {
  return detail::xxhash64(bytes.data(), bytes.size(), seed);
}

/// XXH64 of the bytes of @p text (no terminator, no length prefix) with @p seed.
constexpr std::uint64_t xxhash64(std::string_view text, std::uint64_t seed = 0) noexcept {
  return detail::xxhash64(text.data(), text.size(), seed);
}

/// The key of a string feature value in a table of its own: XXH64(@p value, @p seed).
///
/// Two distinct values collide with probability 2^-64; among n values the chance of any
/// collision is about n^2 / 2^65 (10^-4 for 60 million values). A collision makes two values
/// share a row, as TF1's hashed feature columns do by design. Thread safety: a pure function.
constexpr std::uint64_t string_key(std::string_view value, std::uint64_t seed = 0) noexcept {
  return xxhash64(value, seed);
}

/// The keys of one table shared by several features, each with its own id space.
///
/// With b = bit_width(features - 1) feature bits (0 for one feature),
///
///     key(f, id) = mix64((f << (64 - b)) | (id mod 2^(64 - b)))
///
/// where mix64 is the splitmix64 finaliser (a bijection): keys of different features are
/// always distinct, and the keys of one feature collide only when their ids agree in the low
/// 64 - b bits (for hashed string ids, probability 2^-(64 - b) a pair). The mix spreads every
/// key over all 64 bits, so a key placement or a hash table that reads low bits is balanced
/// even for small integer ids. feature_of() and id_of() invert key().
///
/// Complexity: O(1) per integer id, O(length) per string. Thread safety: an immutable value;
/// any number of threads may call its const members at once.
class key_space {
 public:
  /// A space for @p features features, numbered 0..features-1.
  /// @throws dsgd::error (errc::invalid_argument) if @p features is 0 or above 2^32.
  constexpr explicit key_space(std::size_t features) : features_(features) {
    if (features == 0 || features > (std::size_t{1} << 32))
      throw error(errc::invalid_argument,
                  "embedding::key_space: features must be in [1, 2^32], got " + std::to_string(features));
    bits_ = static_cast<int>(std::bit_width(features - 1));
  }

  /// @returns the number of features this space holds.
  constexpr std::size_t features() const noexcept { return features_; }

  /// @returns the bits of a key that name its feature (b above).
  constexpr int feature_bits() const noexcept { return bits_; }

  /// @returns the bits of an id that a key keeps (64 - b).
  constexpr int id_bits() const noexcept { return 64 - bits_; }

  /// @returns the key of integer id @p id of feature @p feature.
  /// @throws dsgd::error (errc::invalid_argument) if @p feature >= features().
  constexpr std::uint64_t key(std::size_t feature, std::uint64_t id) const {
    check(feature);
    return detail::mix64(prefix(feature) | (id & id_mask()));
  }

  /// @returns the key of string value @p value of feature @p feature: key(feature, XXH64(value, 0)).
  /// @throws dsgd::error (errc::invalid_argument) if @p feature >= features().
  constexpr std::uint64_t key(std::size_t feature, std::string_view value) const {
    return key(feature, string_key(value));
  }

  /// @returns the feature whose key @p key is (for a key this space made).
  constexpr std::size_t feature_of(std::uint64_t key) const noexcept {
    return bits_ == 0 ? 0 : static_cast<std::size_t>(detail::unmix64(key) >> (64 - bits_));
  }

  /// @returns the low id_bits() bits of the id @p key was made of.
  constexpr std::uint64_t id_of(std::uint64_t key) const noexcept { return detail::unmix64(key) & id_mask(); }

 private:
  constexpr std::uint64_t id_mask() const noexcept {
    return bits_ == 0 ? ~std::uint64_t{0} : ~std::uint64_t{0} >> bits_;
  }
  constexpr std::uint64_t prefix(std::size_t feature) const noexcept {
    return bits_ == 0 ? 0 : static_cast<std::uint64_t>(feature) << (64 - bits_);
  }
  constexpr void check(std::size_t feature) const {
    if (feature >= features_)
      throw error(errc::invalid_argument, "embedding::key_space::key: feature " + std::to_string(feature) +
                                              " is out of range (the space holds " + std::to_string(features_) +
                                              " features)");
  }

  std::size_t features_;
  int bits_ = 0;
};

}  // namespace dsgd::embedding
