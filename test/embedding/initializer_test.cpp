// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/embedding/initializer.hpp>: the documented formula (re-derived here from a
// plain splitmix64 stream), pinned bits, the portable log and normal quantile against libm,
// the distributions' moments and bounds, and that a row depends on (seed, key, column) only.
#include <dsgd/embedding/initializer.hpp>
#include <dsgd/embedding/row_table.hpp>

#include <boost/test/unit_test.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

BOOST_AUTO_TEST_SUITE(embedding_initializer_test)

namespace {

namespace emb = dsgd::embedding;

static_assert(emb::RowInitializer<emb::initializer::zeros>);
static_assert(emb::RowInitializer<emb::initializer::constant>);
static_assert(emb::RowInitializer<emb::initializer::uniform>);
static_assert(emb::RowInitializer<emb::initializer::truncated_normal>);
static_assert(!emb::RowInitializer<int>);
static_assert(!emb::RowInitializer<emb::admission::always>);  // another family

// splitmix64 as Steele, Lea and Flood give it, written independently of the header.
struct reference_splitmix {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};
std::uint64_t reference_finalise(std::uint64_t x) { return reference_splitmix{x - 0x9e3779b97f4a7c15ull}.next(); }

std::uint32_t bits_of(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

}  // namespace

BOOST_AUTO_TEST_CASE(uniform_follows_the_documented_splitmix64_stream) {
  const emb::initializer::uniform init{.low = -0.5f, .high = 0.25f, .seed = 1234};
  for (std::uint64_t key : {0ull, 1ull, 42ull, 0xffffffffffffffffull}) {
    std::array<float, 9> row{};
    init(key, row);
    // S = F(F(seed + G) xor key); element j from word j + 1 of the stream started at S.
    reference_splitmix stream{reference_finalise(reference_finalise(1234 + 0x9e3779b97f4a7c15ull) ^ key)};
    for (std::size_t j = 0; j < row.size(); ++j) {
      const double u = static_cast<double>(stream.next() >> 11) * 0x1.0p-53;
      const float expected = static_cast<float>(-0.5 + 0.75 * u);
      BOOST_TEST(bits_of(row[j]) == bits_of(expected));
      BOOST_TEST(bits_of(init.at(key, j)) == bits_of(row[j]));
    }
  }
}

BOOST_AUTO_TEST_CASE(initial_rows_have_pinned_bits) {
  // Computed once by this implementation; they may never change, or restores and oracles of
  // saved tables disagree. (Bits, not values: a printed decimal could round.)
  std::array<float, 4> u{}, n{};
  emb::initializer::uniform{.low = -1.f, .high = 1.f, .seed = 7}(99, u);
  emb::initializer::truncated_normal{.mean = 0.f, .stddev = 1.f, .seed = 7}(99, n);
  const std::array<std::uint32_t, 4> u_bits{0xbf79b0dbu, 0xbcaa0e9cu, 0x3f6ac9efu, 0xbf65ad4fu};
  const std::array<std::uint32_t, 4> n_bits{0xbfe8bcd1u, 0xbccb7549u, 0x3fc49538u, 0xbfbb2e34u};
  for (std::size_t j = 0; j < 4; ++j) {
    BOOST_TEST_CONTEXT("column " << j << ": uniform " << u[j] << ", normal " << n[j]) {
      BOOST_TEST(bits_of(u[j]) == u_bits[j]);
      BOOST_TEST(bits_of(n[j]) == n_bits[j]);
    }
  }
}

BOOST_AUTO_TEST_CASE(portable_log_agrees_with_libm) {
  double worst = 0;
  for (double x : {1e-300, 1e-20, 0.022750131948179207, 0.3, 0.5, 0.7071, 0.99999, 1.0, 1.00001, 1.5, 2.0, 10.0,
                   12345.678, 1e20, 1e300}) {
    const double rel = std::abs(emb::detail::portable_log(x) - std::log(x)) / std::max(1e-300, std::abs(std::log(x)));
    worst = std::max(worst, x == 1.0 ? std::abs(emb::detail::portable_log(x)) : rel);
  }
  for (int i = 1; i < 10000; ++i) {
    const double x = i * 1e-4;
    worst = std::max(worst, std::abs(emb::detail::portable_log(x) - std::log(x)) / std::abs(std::log(x)));
  }
  BOOST_TEST(worst < 1e-14);
}

BOOST_AUTO_TEST_CASE(normal_quantile_inverts_the_normal_cdf) {
  // Wichura's AS 241 claims about 1e-16 relative; through erfc's own error 1e-12 is a safe bound.
  for (double p = 1e-10; p < 1; p = p < 0.01 ? p * 3 : p + 0.00731) {
    const double z = emb::detail::normal_quantile(p);
    const double back = normal_cdf(z);
    BOOST_TEST_CONTEXT("p = " << p << ", z = " << z) { BOOST_TEST(std::abs(back - p) <= 1e-12 * std::min(p, 1 - p)); }
  }
  BOOST_TEST(emb::detail::normal_quantile(0.5) == 0.0);
  BOOST_TEST(std::abs(emb::detail::normal_quantile(emb::detail::normal_cdf_minus_two) + 2) < 1e-13);
  BOOST_TEST(std::abs(normal_cdf(-2) - emb::detail::normal_cdf_minus_two) < 1e-16);
}

BOOST_AUTO_TEST_CASE(truncated_normal_stays_within_two_deviations_with_the_right_moments) {
  const emb::initializer::truncated_normal init{.mean = 1.f, .stddev = 0.5f, .seed = 3};
  double sum = 0, sum2 = 0, low = 1e9, high = -1e9;
  const int keys = 20000, dim = 8;
  std::array<float, dim> row{};
  for (int k = 0; k < keys; ++k) {
    init(static_cast<std::uint64_t>(k) * 7919, row);
    for (float x : row) {
      const double z = (x - 1.0) / 0.5;
      sum += z;
      sum2 += z * z;
      low = std::min(low, z);
      high = std::max(high, z);
    }
  }
  const double n = double(keys) * dim, mean = sum / n, var = sum2 / n - mean * mean;
  // The standard normal truncated to [-2, 2]: variance 1 - 4 phi(2) / (2 Phi(2) - 1) = 0.77374.
  const double truncated_variance = 1 - 4 * std::exp(-2.0) / std::sqrt(2 * M_PI) / (1 - 2 * normal_cdf(-2));
  BOOST_TEST(low >= -2.0 - 1e-6);
  BOOST_TEST(high <= 2.0 + 1e-6);
  BOOST_TEST(low < -1.99);  // the tails are reached
  BOOST_TEST(high > 1.99);
  BOOST_TEST(std::abs(mean) < 0.01);  // standard error 0.0022
  BOOST_TEST(std::abs(var / truncated_variance - 1) < 0.015);
}

BOOST_AUTO_TEST_CASE(uniform_covers_its_interval_evenly) {
  const emb::initializer::uniform init{.low = -0.1f, .high = 0.1f, .seed = 11};
  std::array<int, 10> histogram{};
  const int keys = 10000, dim = 16;
  std::array<float, dim> row{};
  for (int k = 0; k < keys; ++k) {
    init(static_cast<std::uint64_t>(k), row);  // consecutive keys: the hash must still spread them
    for (float x : row) {
      BOOST_TEST_REQUIRE((x >= -0.1f && x <= 0.1f));
      ++histogram[std::min(9, static_cast<int>((x + 0.1) / 0.02))];
    }
  }
  for (int count : histogram) BOOST_TEST(std::abs(count - keys * dim / 10) < 800);  // 4.2 standard deviations
}

BOOST_AUTO_TEST_CASE(zeros_and_constant_fill_every_column) {
  std::array<float, 5> row{1, 2, 3, 4, 5};
  emb::initializer::zeros{}(3, row);
  for (float x : row) BOOST_TEST(x == 0.f);
  emb::initializer::constant{.value = 0.25f}(3, row);
  for (float x : row) BOOST_TEST(x == 0.25f);
  BOOST_TEST(emb::initializer::constant{.value = 0.25f}.at(9, 2) == 0.25f);
}

BOOST_AUTO_TEST_CASE(a_row_depends_on_seed_key_and_column_only) {
  const emb::initializer::truncated_normal a{.stddev = 0.1f, .seed = 5};
  // Two tables of other shapes, caps and histories give a key the same initial weights.
  emb::row_table t1({.name = "t1", .dim = 6, .state_floats = 2}, a);
  emb::row_table t2({.name = "t2", .dim = 6, .max_rows = 100}, a);
  for (std::uint64_t k = 100; k < 120; ++k) (void)t2.find_or_admit(k, k);
  for (std::uint64_t k : {3ull, 17ull, 1ull << 40}) {
    std::array<float, 6> direct{}, read1{}, read2{};
    a(k, direct);
    const auto created = t1.find_or_admit(k, 0);
    BOOST_TEST_REQUIRE((created.status == emb::lookup_status::created));
    t1.read(k, read1);
    t2.read(k, read2);  // t2 never saw k: the initial row
    for (std::size_t j = 0; j < 6; ++j) {
      BOOST_TEST(bits_of(created.row.weights()[j]) == bits_of(direct[j]));
      BOOST_TEST(bits_of(read1[j]) == bits_of(direct[j]));
      BOOST_TEST(bits_of(read2[j]) == bits_of(direct[j]));
    }
    // A prefix of a wider row is the narrower row (column j does not depend on the width).
    std::array<float, 3> narrow{};
    a(k, narrow);
    for (std::size_t j = 0; j < 3; ++j) BOOST_TEST(bits_of(narrow[j]) == bits_of(direct[j]));
  }
  // Other seeds, other keys: other rows.
  std::array<float, 6> x{}, y{}, z{};
  a(3, x);
  emb::initializer::truncated_normal{.stddev = 0.1f, .seed = 6}(3, y);
  a(4, z);
  int same_seed = 0, same_key = 0;
  for (std::size_t j = 0; j < 6; ++j) {
    same_seed += x[j] == y[j];
    same_key += x[j] == z[j];
  }
  BOOST_TEST(same_seed == 0);
  BOOST_TEST(same_key == 0);
}

BOOST_AUTO_TEST_SUITE_END()
