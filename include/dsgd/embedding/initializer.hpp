// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Initializers of dynamic embedding rows: a row's initial value is a pure function of
/// (seed, key, column), so a worker's oracle, a ps that made the row, a ps that never saw the key
/// (an evaluation lookup) and a resharded restore all agree to the bit.
///
/// Element j of the row of @p key is computed from the 64-bit word
///
///     h(seed, key, j) = F(S + (j + 1) * G),  S = F(F(seed + G) xor key)
///
/// where F is the splitmix64 finaliser (Stafford's variant 13) and G = 0x9e3779b97f4a7c15, i.e.
/// word j + 1 of a splitmix64 stream started at S. u = (h >> 11) * 2^-53 is uniform on [0, 1);
/// uniform maps it affinely, truncated_normal through the normal quantile (Wichura's AS 241),
/// both in double with + - * /, sqrt and frexp only, then rounds once to float. The same bits
/// come out on every IEEE 754 machine (where a build lets the compiler contract a * b + c into
/// an FMA, as GCC and Clang may once -march enables FMA, a value may move by an ulp).
///
/// @code
/// dsgd::embedding::initializer::truncated_normal init{.stddev = 0.05f, .seed = 7};
/// std::array<float, 16> row;
/// init(key, row);                   // the row key would get on any ps
/// float x = init.at(key, 3);        // == row[3]
/// @endcode
#pragma once

#include <dsgd/embedding/detail/counter_hash.hpp>
#include <dsgd/embedding/detail/normal_quantile.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

namespace dsgd::embedding {

/// A RowInitializer @p I fills the initial row of a key: `init(key, row)` writes every element
/// of the `std::span<float>` @p row as a pure function of the initializer's value, the key and
/// the element's index (nothing else: not the time, the table, the ps or the order of calls).
/// It is copyable and its call is const and thread-safe. The models below also offer
/// `init.at(key, column)`, one element.
template <class I>
concept RowInitializer = std::copyable<I> && requires(const I& init, std::uint64_t key, std::span<float> row) {
  { init(key, row) } -> std::same_as<void>;
};

namespace initializer {

/// Every element 0 (FTRL's and the wide part's usual start).
struct zeros {
  constexpr float at(std::uint64_t, std::uint64_t) const noexcept { return 0.f; }
  void operator()(std::uint64_t, std::span<float> row) const noexcept { std::fill(row.begin(), row.end(), 0.f); }
};

/// Every element @c value.
struct constant {
  float value = 0.f;  ///< the value of every element

  constexpr float at(std::uint64_t, std::uint64_t) const noexcept { return value; }
  void operator()(std::uint64_t, std::span<float> row) const noexcept { std::fill(row.begin(), row.end(), value); }
};

/// Uniform on [low, high]: element j is float(low + (high - low) * u_j) evaluated in double
/// (the closed upper end only through rounding to float). uniform(-a, a) is {-a, a, seed}.
struct uniform {
  float low = -0.05f;
  float high = 0.05f;
  std::uint64_t seed = 0;

  float at(std::uint64_t key, std::uint64_t column) const noexcept {
    return from(detail::counter_hash(seed, key, column));
  }
  void operator()(std::uint64_t key, std::span<float> row) const noexcept {
    const std::uint64_t stream = detail::row_stream(seed, key);
    for (std::size_t j = 0; j < row.size(); ++j) row[j] = from(detail::stream_word(stream, j));
  }

 private:
  float from(std::uint64_t h) const noexcept {
    const double lo = low, hi = high;
    return static_cast<float>(lo + (hi - lo) * detail::unit_double(h));
  }
};

/// Normal with @c mean and @c stddev, truncated at two standard deviations (TensorFlow's
/// truncated_normal_initializer, the usual start of an embedding: stddev 1 / sqrt(dim)).
/// Exact inversion, no rejection: element j is mean + stddev * z with z the standard normal
/// quantile of p = P(Z <= -2) + u_j (1 - 2 P(Z <= -2)), so z is in [-2, 2].
struct truncated_normal {
  float mean = 0.f;
  float stddev = 0.05f;
  std::uint64_t seed = 0;

  float at(std::uint64_t key, std::uint64_t column) const noexcept {
    return from(detail::counter_hash(seed, key, column));
  }
  void operator()(std::uint64_t key, std::span<float> row) const noexcept {
    const std::uint64_t stream = detail::row_stream(seed, key);
    for (std::size_t j = 0; j < row.size(); ++j) row[j] = from(detail::stream_word(stream, j));
  }

 private:
  float from(std::uint64_t h) const noexcept {
    constexpr double lo = detail::normal_cdf_minus_two;
    const double p = lo + (1 - 2 * lo) * detail::unit_double(h);
    const double z = std::clamp(detail::normal_quantile(p), -2.0, 2.0);
    return static_cast<float>(static_cast<double>(mean) + static_cast<double>(stddev) * z);
  }
};

}  // namespace initializer
}  // namespace dsgd::embedding
