// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/embedding/combiner.hpp>: sum, mean and sqrtn of weighted and unweighted bags
// (empty bags, duplicate keys in a bag, bags of one) against a direct per-bag loop in double
// that reads rows by key, never through the deduplication; the backward against a hand-derived
// gradient per key and against central finite differences; a worked example checked by hand;
// gather and its scatter-add; and every bad input named.
#include <dsgd/embedding/combiner.hpp>
#include <dsgd/embedding/dedup.hpp>

#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(embedding_combiner_test)

namespace {

namespace emb = dsgd::embedding;
using emb::combiner;
namespace tt = boost::test_tools;

constexpr std::size_t dim = 5;

/// A batch of bags by key, as a user holds it before deduplication.
struct sparse_batch {
  std::vector<std::size_t> offsets{0};
  std::vector<std::uint64_t> keys;
  std::vector<float> weights;
};

/// The table the rows come from: row of key k, a pure function of k.
std::vector<double> table_row(std::uint64_t key) {
  std::vector<double> row(dim);
  std::mt19937_64 rng(key * 7919 + 1);
  std::uniform_real_distribution<double> u(-1, 1);
  for (auto& x : row) x = static_cast<float>(u(rng));  // representable in float exactly
  return row;
}

/// Bags of 0 to 8 keys drawn from 40 (so bags repeat keys), one empty bag in about seven.
sparse_batch random_batch(std::size_t bags, std::uint64_t seed, bool weighted) {
  std::mt19937_64 rng(seed);
  sparse_batch b;
  for (std::size_t i = 0; i < bags; ++i) {
    const std::size_t n = rng() % 7 == 0 ? 0 : 1 + rng() % 8;
    for (std::size_t j = 0; j < n; ++j) {
      b.keys.push_back(1000 + rng() % 40);
      if (weighted) b.weights.push_back(static_cast<float>(std::uniform_real_distribution<double>(-0.5, 2)(rng)));
    }
    b.offsets.push_back(b.keys.size());
  }
  return b;
}

/// The scale of a bag, in double, straight from the formulas.
double oracle_scale(combiner c, const sparse_batch& b, std::size_t bag) {
  double sum = 0, squares = 0;
  for (std::size_t j = b.offsets[bag]; j < b.offsets[bag + 1]; ++j) {
    const double w = b.weights.empty() ? 1.0 : b.weights[j];
    sum += w;
    squares += w * w;
  }
  if (c == combiner::sum) return 1;
  const double divisor = c == combiner::mean ? sum : std::sqrt(squares);
  return divisor == 0 ? 0 : 1 / divisor;
}

/// A value computed in double, with the sum of the magnitudes of its terms: a float sum of n
/// terms is within about n * 2^-24 of that magnitude, however much the terms cancel.
struct oracle_value {
  double value = 0;
  double magnitude = 0;
  void add(double term) {
    value += term;
    magnitude += std::abs(term);
  }
  /// Whether @p x, summed in float, is this value up to rounding.
  bool close(float x) const { return std::abs(x - value) <= 1e-5 * magnitude + 1e-12; }
};

/// The oracle forward: a direct loop over each bag's keys, rows read from the table by key.
std::vector<oracle_value> oracle_forward(combiner c, const sparse_batch& b) {
  const std::size_t bags = b.offsets.size() - 1;
  std::vector<oracle_value> out(bags * dim);
  for (std::size_t bag = 0; bag < bags; ++bag) {
    const double s = oracle_scale(c, b, bag);
    for (std::size_t j = b.offsets[bag]; j < b.offsets[bag + 1]; ++j) {
      const double w = b.weights.empty() ? 1.0 : b.weights[j];
      const std::vector<double> e = table_row(b.keys[j]);
      for (std::size_t d = 0; d < dim; ++d) out[bag * dim + d].add(s * w * e[d]);
    }
  }
  return out;
}

/// The hand-derived backward: d out_b / d e_k = s_b * (sum of the weights of k's entries in b).
std::map<std::uint64_t, std::vector<oracle_value>> oracle_backward(combiner c, const sparse_batch& b,
                                                                   const std::vector<float>& grad_out) {
  std::map<std::uint64_t, std::vector<oracle_value>> grad;
  for (std::size_t bag = 0; bag + 1 < b.offsets.size(); ++bag) {
    const double s = oracle_scale(c, b, bag);
    for (std::size_t j = b.offsets[bag]; j < b.offsets[bag + 1]; ++j) {
      auto& g = grad.try_emplace(b.keys[j], dim).first->second;
      const double w = b.weights.empty() ? 1.0 : b.weights[j];
      for (std::size_t d = 0; d < dim; ++d) g[d].add(s * w * grad_out[bag * dim + d]);
    }
  }
  return grad;
}

/// What a worker does: deduplicate, pull each unique row once, combine through the inverse.
struct pipeline {
  emb::deduplicator dedup;
  std::vector<float> block;
  emb::bags bags;

  explicit pipeline(const sparse_batch& b) {
    const auto& d = dedup.run(b.keys);
    for (std::uint64_t k : d.unique)
      for (double x : table_row(k)) block.push_back(static_cast<float>(x));
    bags = {.offsets = b.offsets, .rows = d.inverse, .weights = b.weights};
  }
};

std::vector<float> random_grad(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> g(n);
  for (auto& x : g) x = static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(rng));
  return g;
}

struct variant {
  combiner c;
  bool weighted;
};
std::ostream& operator<<(std::ostream& os, const variant& v) {
  return os << emb::to_string(v.c) << (v.weighted ? ", weighted" : ", unweighted");
}

const variant variants[] = {{combiner::sum, false}, {combiner::sum, true},    {combiner::mean, false},
                            {combiner::mean, true}, {combiner::sqrtn, false}, {combiner::sqrtn, true}};

}  // namespace

BOOST_DATA_TEST_CASE(forward_matches_a_direct_loop_over_each_bag, boost::unit_test::data::make(variants), v) {
  const combiner c = v.c;
  const bool weighted = v.weighted;
  const sparse_batch b = random_batch(300, 17, weighted);
  pipeline p(b);
  std::vector<float> out(300 * dim, -7.0f);
  emb::combine(c, p.bags, dim, p.block, out);
  const std::vector<oracle_value> expected = oracle_forward(c, b);
  for (std::size_t i = 0; i < out.size(); ++i) {
    BOOST_TEST_INFO("out[" << i << "] = " << out[i] << ", oracle " << expected[i].value);
    BOOST_TEST_REQUIRE(expected[i].close(out[i]));
  }
}

BOOST_DATA_TEST_CASE(backward_matches_the_hand_derived_gradient_of_each_unique_key,
                     boost::unit_test::data::make(variants), v) {
  const combiner c = v.c;
  const bool weighted = v.weighted;
  const sparse_batch b = random_batch(300, 23, weighted);
  pipeline p(b);
  const std::vector<float> grad_out = random_grad(300 * dim, 29);
  std::vector<float> grad_block(p.block.size(), 99.0f);
  emb::combine_grad(c, p.bags, dim, grad_out, grad_block);
  const auto expected = oracle_backward(c, b, grad_out);
  const auto& unique = p.dedup.last().unique;
  BOOST_TEST(unique.size() == expected.size());  // one gradient row per unique key, no more
  for (std::size_t u = 0; u < unique.size(); ++u)
    for (std::size_t d = 0; d < dim; ++d)
      BOOST_TEST_REQUIRE(expected.at(unique[u])[d].close(grad_block[u * dim + d]), "key " << unique[u] << ", d " << d);
}

BOOST_DATA_TEST_CASE(backward_matches_central_finite_differences, boost::unit_test::data::make(variants), v) {
  const combiner c = v.c;
  const bool weighted = v.weighted;
  // L(block) = sum_b <g_b, out_b>; dL/dblock is what combine_grad returns for grad_out = g.
  const sparse_batch b = random_batch(40, 31, weighted);
  pipeline p(b);
  const std::vector<float> g = random_grad(40 * dim, 37);
  std::vector<float> grad_block(p.block.size());
  emb::combine_grad(c, p.bags, dim, g, grad_block);
  std::vector<float> out(40 * dim);
  const auto loss = [&](const std::vector<float>& block) {
    emb::combine(c, p.bags, dim, block, out);
    double l = 0;
    for (std::size_t i = 0; i < out.size(); ++i) l += static_cast<double>(g[i]) * out[i];
    return l;
  };
  constexpr float h = 1.0f / 64;  // L is linear in the block: only rounding separates FD from the gradient
  for (std::size_t i = 0; i < p.block.size(); ++i) {
    std::vector<float> plus = p.block, minus = p.block;
    plus[i] += h;
    minus[i] -= h;
    const double fd = (loss(plus) - loss(minus)) / (2.0 * h);
    BOOST_TEST_REQUIRE(grad_block[i] == fd, tt::tolerance(1e-3) << "block float " << i);
  }
}

BOOST_AUTO_TEST_CASE(a_worked_example_by_hand) {
  // Rows e0 = (1, 2), e1 = (3, 4), e2 = (5, 6); bag 0 = {e1 weight 2, e2 weight 0.5},
  // bag 1 empty, bag 2 = {e0 weight 1}: TF1's embedding_lookup_sparse docstring shape.
  const std::vector<float> block = {1, 2, 3, 4, 5, 6};
  const std::vector<std::size_t> offsets = {0, 2, 2, 3};
  const std::vector<std::uint32_t> rows = {1, 2, 0};
  const std::vector<float> weights = {2, 0.5f, 1};
  const emb::bags b{.offsets = offsets, .rows = rows, .weights = weights};
  std::vector<float> out(6);
  emb::combine(combiner::sum, b, 2, block, out);
  BOOST_TEST(out == (std::vector<float>{8.5f, 11, 0, 0, 1, 2}), tt::per_element());
  emb::combine(combiner::mean, b, 2, block, out);  // (2 e1 + 0.5 e2) / 2.5
  BOOST_TEST(out == (std::vector<float>{3.4f, 4.4f, 0, 0, 1, 2}), tt::tolerance(1e-6f) << tt::per_element());
  emb::combine(combiner::sqrtn, b, 2, block, out);  // (2 e1 + 0.5 e2) / sqrt(4.25)
  BOOST_TEST(out == (std::vector<float>{4.1231056f, 5.3357838f, 0, 0, 1, 2}), tt::tolerance(1e-6f)
                                                                                  << tt::per_element());
  // Backward of mean with grad_out = 1: row 1 gets 2 / 2.5, row 2 gets 0.5 / 2.5, row 0 gets 1.
  std::vector<float> grad(6);
  emb::combine_grad(combiner::mean, b, 2, std::vector<float>(6, 1.0f), grad);
  BOOST_TEST(grad == (std::vector<float>{1, 1, 0.8f, 0.8f, 0.2f, 0.2f}), tt::tolerance(1e-6f) << tt::per_element());
}

BOOST_AUTO_TEST_CASE(duplicate_keys_in_a_bag_count_once_each) {
  // Bag {e0, e0, e1} under mean: (2 e0 + e1) / 3; the gradient of e0 is 2/3, of e1 1/3.
  const std::vector<float> block = {3, 6};  // dim 1: e0 = 3, e1 = 6
  const std::vector<std::size_t> offsets = {0, 3};
  const std::vector<std::uint32_t> rows = {0, 0, 1};
  const emb::bags b{.offsets = offsets, .rows = rows};
  std::vector<float> out(1), grad(2);
  emb::combine(combiner::mean, b, 1, block, out);
  BOOST_TEST(out[0] == 4.0f);
  emb::combine_grad(combiner::mean, b, 1, std::vector<float>{3.0f}, grad);
  BOOST_TEST(grad == (std::vector<float>{2, 1}), tt::tolerance(1e-6f) << tt::per_element());
  emb::combine(combiner::sqrtn, b, 1, block, out);  // 12 / sqrt(3)
  BOOST_TEST(out[0] == 6.9282032f, tt::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(a_bag_with_a_zero_divisor_gives_zeros_not_nan) {
  const std::vector<float> block = {3, 6};
  const std::vector<std::size_t> offsets = {0, 2, 3};
  const std::vector<std::uint32_t> rows = {0, 1, 1};
  const std::vector<float> weights = {1, -1, 0};  // bag 0 sums to 0, bag 1's squares sum to 0
  const emb::bags b{.offsets = offsets, .rows = rows, .weights = weights};
  std::vector<float> out(2, 5.0f), grad(2, 5.0f);
  emb::combine(combiner::mean, b, 1, block, out);
  BOOST_TEST(out == (std::vector<float>{0, 0}), tt::per_element());
  emb::combine(combiner::sqrtn, b, 1, block, out);
  BOOST_TEST(out[0] == -3.0f / std::sqrt(2.0f), tt::tolerance(1e-6f));
  BOOST_TEST(out[1] == 0.0f);
  emb::combine_grad(combiner::mean, b, 1, std::vector<float>{1, 1}, grad);
  BOOST_TEST(grad == (std::vector<float>{0, 0}), tt::per_element());
  emb::combine(combiner::sum, b, 1, block, out);
  BOOST_TEST(out == (std::vector<float>{-3, 0}), tt::per_element());
}

BOOST_AUTO_TEST_CASE(no_bags_and_empty_bags_are_fine) {
  const std::vector<float> block = {1, 2};
  const std::vector<std::size_t> one_offset = {0};
  std::vector<float> out;
  emb::combine(combiner::mean, emb::bags{.offsets = one_offset, .rows = {}}, 2, block, out);
  const std::vector<std::size_t> empties = {0, 0, 0};
  out.assign(4, 9.0f);
  emb::combine(combiner::sqrtn, emb::bags{.offsets = empties, .rows = {}}, 2, block, out);
  BOOST_TEST(out == (std::vector<float>(4, 0.0f)), tt::per_element());
  std::vector<float> grad(2, 9.0f);
  emb::combine_grad(combiner::sum, emb::bags{.offsets = empties, .rows = {}}, 2, out, grad);
  BOOST_TEST(grad == (std::vector<float>(2, 0.0f)), tt::per_element());
}

BOOST_AUTO_TEST_CASE(gather_is_embedding_lookup_and_its_gradient_a_scatter_add) {
  const sparse_batch b = random_batch(100, 41, false);
  pipeline p(b);
  const auto& inverse = p.dedup.last().inverse;
  std::vector<float> out(b.keys.size() * dim);
  emb::gather(inverse, dim, p.block, out);
  for (std::size_t i = 0; i < b.keys.size(); ++i) {
    const std::vector<double> e = table_row(b.keys[i]);
    for (std::size_t d = 0; d < dim; ++d) BOOST_TEST_REQUIRE(out[i * dim + d] == static_cast<float>(e[d]));
  }
  // gather equals combine over bags of one, forward and backward.
  std::vector<std::size_t> singles(b.keys.size() + 1);
  for (std::size_t i = 0; i < singles.size(); ++i) singles[i] = i;
  const emb::bags ones{.offsets = singles, .rows = inverse};
  const std::vector<float> g = random_grad(out.size(), 43);
  std::vector<float> by_gather(p.block.size()), by_combine(p.block.size());
  emb::gather_grad(inverse, dim, g, by_gather);
  emb::combine_grad(combiner::sum, ones, dim, g, by_combine);
  BOOST_TEST(by_gather == by_combine, tt::per_element());
}

namespace {

struct bad_case {
  std::string name;
  std::function<void()> call;
  dsgd::errc code;
  std::string message;
};
std::ostream& operator<<(std::ostream& os, const bad_case& c) { return os << c.name; }

const std::vector<float> block4 = {1, 2, 3, 4};  // two rows of dim 2
const std::vector<std::size_t> good_offsets = {0, 1, 3};
const std::vector<std::uint32_t> good_rows = {0, 1, 0};

void forward(std::vector<std::size_t> offsets, std::vector<std::uint32_t> rows, std::vector<float> weights,
             std::size_t out_floats = 4, std::size_t width = 2) {
  std::vector<float> out(out_floats);
  emb::combine(combiner::mean, {.offsets = offsets, .rows = rows, .weights = weights}, width, block4, out);
}

const float nan = std::numeric_limits<float>::quiet_NaN();
const float inf = std::numeric_limits<float>::infinity();

const bad_case bad_cases[] = {
    {"offsets not monotone",
     [] {
       forward({0, 2, 1, 3}, good_rows, {}, 6);
     },
     dsgd::errc::invalid_argument,
     "embedding::combine: bags.offsets[2] = 1 is less than bags.offsets[1] = 2 (offsets must be non-decreasing)"},
    {"offsets not from 0",
     [] {
       forward({1, 1, 3}, good_rows, {});
     },
     dsgd::errc::invalid_argument, "embedding::combine: bags.offsets[0] = 1, must be 0"},
    {"no offsets", [] { forward({}, good_rows, {}, 0); }, dsgd::errc::invalid_argument, "bags.offsets is empty"},
    {"offsets past the entries",
     [] {
       forward({0, 1, 4}, good_rows, {});
     },
     dsgd::errc::shape_mismatch, "embedding::combine: bags.offsets ends at 4 but bags.rows holds 3 entries"},
    {"weight count",
     [] {
       forward(good_offsets, good_rows, {1, 1});
     },
     dsgd::errc::shape_mismatch,
     "embedding::combine: bags.weights holds 2 values for 3 entries (give one per entry, or none)"},
    {"nan weight",
     [] {
       forward(good_offsets, good_rows, {1, nan, 1});
     },
     dsgd::errc::invalid_argument, "embedding::combine: bags.weights[1] = nan is not finite"},
    {"infinite weight",
     [] {
       forward(good_offsets, good_rows, {1, 1, -inf});
     },
     dsgd::errc::invalid_argument, "embedding::combine: bags.weights[2] = -inf is not finite"},
    {"row out of the block",
     [] {
       forward(good_offsets, {0, 2, 0}, {});
     },
     dsgd::errc::invalid_argument, "embedding::combine: bags.rows[1] = 2 is out of the block's 2 rows"},
    {"out too small", [] { forward(good_offsets, good_rows, {}, 3); }, dsgd::errc::shape_mismatch,
     "embedding::combine: out holds 3 floats, expected 2 rows x dim 2 = 4"},
    {"dim 0", [] { forward(good_offsets, good_rows, {}, 0, 0); }, dsgd::errc::invalid_argument,
     "embedding::combine: dim must be greater than 0"},
    {"block not whole rows", [] { forward(good_offsets, good_rows, {}, 6, 3); }, dsgd::errc::shape_mismatch,
     "embedding::combine: block holds 4 floats, not a multiple of dim 3"},
    {"backward grad_out size",
     [] {
       std::vector<float> grad(4);
       emb::combine_grad(combiner::sum, {.offsets = good_offsets, .rows = good_rows}, 2, std::vector<float>(5), grad);
     },
     dsgd::errc::shape_mismatch, "embedding::combine_grad: grad_out holds 5 floats, expected 2 rows x dim 2 = 4"},
    {"backward nan weight",
     [] {
       std::vector<float> grad(4);
       const std::vector<float> w = {nan, 1, 1};
       emb::combine_grad(combiner::sum, {.offsets = good_offsets, .rows = good_rows, .weights = w}, 2,
                         std::vector<float>(4), grad);
     },
     dsgd::errc::invalid_argument, "embedding::combine_grad: bags.weights[0] = nan is not finite"},
    {"gather row out of the block",
     [] {
       std::vector<float> out(4);
       emb::gather(std::vector<std::uint32_t>{1, 5}, 2, block4, out);
     },
     dsgd::errc::invalid_argument, "embedding::gather: rows[1] = 5 is out of the block's 2 rows"},
    {"gather_grad size",
     [] {
       std::vector<float> grad(3);
       emb::gather_grad(std::vector<std::uint32_t>{0}, 2, std::vector<float>(2), grad);
     },
     dsgd::errc::shape_mismatch, "embedding::gather_grad: grad_block holds 3 floats, not a multiple of dim 2"},
};

}  // namespace

BOOST_DATA_TEST_CASE(bad_input_is_named, boost::unit_test::data::make(bad_cases), c) {
  BOOST_CHECK_EXCEPTION(c.call(), dsgd::error, [&](const dsgd::error& e) {
    BOOST_TEST_INFO("what(): " << e.what());
    BOOST_TEST(std::string(e.what()).find(c.message) != std::string::npos);
    return e.code() == c.code;
  });
}

BOOST_AUTO_TEST_CASE(bad_input_writes_nothing) {
  std::vector<float> out(4, 7.0f);
  const std::vector<float> w = {1, 1, nan};
  BOOST_CHECK_THROW(
      emb::combine(combiner::sum, {.offsets = good_offsets, .rows = good_rows, .weights = w}, 2, block4, out),
      dsgd::error);
  BOOST_TEST(out == (std::vector<float>(4, 7.0f)), tt::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
