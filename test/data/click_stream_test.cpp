// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/data/click_stream.hpp> and <dsgd/data/auc.hpp>: determinism, sharding, the
// keys' bounds and uniqueness, the power law, the drift rate, the teacher's click rate and AUC,
// exact AUC on hand-computed cases, and every bad option named.
#include <dsgd/data/auc.hpp>
#include <dsgd/data/click_stream.hpp>

#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <unordered_set>
#include <vector>

BOOST_AUTO_TEST_SUITE(click_stream_test)

namespace {

using stream = dsgd::data::click_stream;
constexpr std::size_t n_dense = stream::dense_features, n_cat = stream::categorical_features;

/// The small world most tests use: cardinalities scaled by 0.01 (2 .. 10000 ranks).
stream::options small(std::uint64_t seed = 1) { return {.seed = seed, .batch = 1000, .cardinality_scale = 0.01}; }

/// 200k examples of the small world, generated once for the tests that count ids.
const stream::batch& sample() {
  static const stream::batch b = [] {
    stream s(small());
    stream::batch out;
    s.fill(0, 200000, out);
    return out;
  }();
  return b;
}

/// Slope of log(count) over log(rank + 1) for ranks [0, ranks) of @p counts (least squares).
double log_log_slope(const std::vector<double>& counts, std::size_t ranks) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    const double x = std::log(static_cast<double>(r + 1)), y = std::log(counts[r]);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double n = static_cast<double>(ranks);
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

double mean(const std::vector<float>& v) {
  double sum = 0;
  for (float x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_same_seed_gives_the_same_batches_and_another_seed_or_split_others) {
  stream a(small(3)), b(small(3)), c(small(4));
  auto test = small(3);
  test.part = stream::split::test;
  stream d(test);
  for (int i = 0; i < 2; ++i) {
    const auto x = a.next(), y = b.next(), z = c.next(), w = d.next();
    BOOST_TEST(x.keys == y.keys);
    BOOST_TEST(x.dense == y.dense);
    BOOST_TEST(x.labels == y.labels);
    BOOST_TEST(x.probabilities == y.probabilities);
    BOOST_TEST(x.first == static_cast<std::uint64_t>(i) * 1000);
    BOOST_TEST((x.keys != z.keys));
    BOOST_TEST((x.dense != z.dense));
    BOOST_TEST((x.keys != w.keys));
  }
}

BOOST_AUTO_TEST_CASE(example_i_does_not_depend_on_the_batch_size_or_the_order_of_calls) {
  stream s(small());
  stream::batch whole, part;
  s.fill(0, 300, whole);
  for (std::uint64_t start : {200u, 0u, 100u}) {
    s.fill(start, 100, part);
    BOOST_TEST(std::equal(part.keys.begin(), part.keys.end(), whole.keys.begin() + start * n_cat));
    BOOST_TEST(std::equal(part.dense.begin(), part.dense.end(), whole.dense.begin() + start * n_dense));
    BOOST_TEST(std::equal(part.labels.begin(), part.labels.end(), whole.labels.begin() + start));
  }
  s.seek(100);
  const auto& next = s.next();  // 1000 examples from position 100
  BOOST_TEST(std::equal(whole.keys.begin() + 100 * n_cat, whole.keys.end(), next.keys.begin()));
  BOOST_TEST(s.position() == 1100u);
}

// Pinned values: the stream is made of integer hashing and floating-point + - * / alone, so
// these hold on every machine and standard library. A change here changes every data set.
BOOST_AUTO_TEST_CASE(the_first_example_of_seed_1_is_pinned) {
  stream s({.seed = 1, .batch = 2});
  const auto& b = s.next();
  BOOST_TEST(b.keys[0] == 0x244f6438a5cad306u);
  BOOST_TEST(b.keys[25] == 0x80dadb07e3c023b3u);
  BOOST_TEST(b.keys[n_cat + 2] == 0xdf8bc3aefb5d820du);
  // Floats within a few ulps: a compiler may fuse a multiply and an add.
  BOOST_TEST(b.dense[4] == 5.82894564f, boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(b.probabilities[0] == 0.192462206f, boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(b.labels[0] + b.labels[1] == 0.0f);
}

BOOST_AUTO_TEST_CASE(shards_are_disjoint_and_interleave_to_the_unsharded_stream) {
  constexpr std::size_t shards = 3, per_shard = 200;
  stream whole(small());
  stream::batch all;
  whole.fill(0, shards * per_shard, all);
  std::unordered_set<std::uint64_t> seen;
  for (std::size_t k = 0; k < shards; ++k) {
    auto o = small();
    o.shard = k, o.shards = shards, o.batch = per_shard;
    stream s(o);
    const auto& b = s.next();
    for (std::size_t j = 0; j < per_shard; ++j) {
      const std::size_t i = j * shards + k;
      BOOST_TEST_REQUIRE(s.example_index(j) == i);
      BOOST_TEST_REQUIRE(
          std::equal(b.keys.begin() + j * n_cat, b.keys.begin() + (j + 1) * n_cat, all.keys.begin() + i * n_cat));
      BOOST_TEST_REQUIRE(b.labels[j] == all.labels[i]);
      BOOST_TEST_REQUIRE(seen.insert(i).second);  // no example in two shards
    }
  }
  BOOST_TEST(seen.size() == shards * per_shard);
}

BOOST_AUTO_TEST_CASE(every_key_is_a_rank_below_its_cardinality_and_no_two_features_share_a_key) {
  stream s(small());
  const auto& b = sample();
  // Counted, not asserted one by one: 5.2 million keys.
  std::size_t undecodable = 0, wrong_feature = 0, rank_too_big = 0, wrong_generation = 0, not_rebuilt = 0,
              small_keys = 0;
  for (std::size_t r = 0; r < b.size; ++r) {
    const std::uint64_t index = b.first + r;
    for (std::size_t f = 0; f < n_cat; ++f) {
      const std::uint64_t k = b.keys[r * n_cat + f];
      const auto parts = s.decode(k);
      if (!parts) {
        ++undecodable;
        continue;
      }
      // A key met in two columns would decode to the wrong feature in one of them.
      wrong_feature += parts->feature != f;
      rank_too_big += parts->rank >= s.cardinality(f);
      wrong_generation += parts->generation != s.generation(f, parts->rank, index);
      not_rebuilt += s.key(f, parts->rank, index) != k;
      small_keys += k < (std::uint64_t{1} << 40);
    }
  }
  BOOST_TEST(undecodable == 0u);
  BOOST_TEST(wrong_feature == 0u);
  BOOST_TEST(rank_too_big == 0u);
  BOOST_TEST(wrong_generation == 0u);
  BOOST_TEST(not_rebuilt == 0u);
  BOOST_TEST(small_keys == 0u);  // keys look hashed, not like small integers
  std::vector<std::uint64_t> distinct(b.keys);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  BOOST_TEST_MESSAGE(distinct.size() << " distinct keys in 200k examples");
  // The scaled cardinalities: 2 at least, Criteo's table times 0.01 otherwise.
  for (std::size_t f = 0; f < n_cat; ++f) {
    BOOST_TEST(stream::base_cardinalities[f] >= 10u);
    BOOST_TEST(s.cardinality(f) == std::max<std::uint64_t>(2, static_cast<std::uint64_t>(
                                                                  std::round(stream::base_cardinalities[f] * 0.01))));
  }
}

BOOST_AUTO_TEST_CASE(id_frequencies_follow_each_features_power_law) {
  stream s(small());
  const auto& b = sample();
  // C7 (125 ranks, s = 1.15, all from the table) and C24 (2862 ranks, s = 1.20, ranks past 512
  // by rejection-inversion).
  for (const std::size_t f : {std::size_t{6}, std::size_t{23}}) {
    BOOST_TEST_CONTEXT("feature C" << f + 1) {
      std::vector<double> counts(s.cardinality(f));
      for (std::size_t r = 0; r < b.size; ++r) ++counts[s.decode(b.keys[r * n_cat + f])->rank];
      const double slope = log_log_slope(counts, 60);
      BOOST_TEST_MESSAGE("C" << f + 1 << ": slope " << slope << ", exponent " << stream::zipf_exponents[f]);
      BOOST_TEST(std::abs(slope + stream::zipf_exponents[f]) < 0.06);
      // The head and the tail each hold the mass the law gives them.
      double head = 0, expected_head = 0;
      for (std::uint64_t rank = 0; rank < 512 && rank < counts.size(); ++rank) {
        head += counts[rank] / static_cast<double>(b.size);
        expected_head += s.rank_probability(f, rank);
      }
      double total = 0;
      for (std::uint64_t rank = 0; rank < counts.size(); ++rank) total += s.rank_probability(f, rank);
      BOOST_TEST(total == 1.0, boost::test_tools::tolerance(1e-9));
      BOOST_TEST(head == expected_head, boost::test_tools::tolerance(0.01));
      // Beyond the table, the ranks between 512 and 1024 against the law's mass.
      if (counts.size() > 1024) {
        double tail = 0, expected_tail = 0;
        for (std::uint64_t rank = 512; rank < 1024; ++rank) {
          tail += counts[rank] / static_cast<double>(b.size);
          expected_tail += s.rank_probability(f, rank);
        }
        BOOST_TEST(tail == expected_tail, boost::test_tools::tolerance(0.05));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(new_ids_appear_at_the_documented_rate) {
  // Per rank: between consecutive drift steps a fraction drift_rate of the ranks get new ids.
  auto o = small();
  o.drift_period = 1000, o.drift_rate = 0.05;
  stream s(o);
  const std::size_t f = 2;  // C3: 10000 ranks
  for (std::uint64_t step : {0u, 7u, 1234u}) {
    std::size_t renewed = 0;
    for (std::uint64_t rank = 0; rank < s.cardinality(f); ++rank)
      renewed += s.generation(f, rank, step * 1000) != s.generation(f, rank, (step + 1) * 1000);
    BOOST_TEST(renewed / static_cast<double>(s.cardinality(f)) == 0.05, boost::test_tools::tolerance(0.02));
  }
  // In the stream: after 10 steps half the ranks have new ids, and the keys of a late window
  // that an early window never saw are that many more than without drift.
  auto still = o;
  still.drift_rate = 0;
  auto novelty = [](const stream& st, double* renewed) {
    stream::batch early, late;
    st.fill(0, 1000, early);     // drift step 0
    st.fill(10000, 1000, late);  // drift step 10
    std::unordered_set<std::uint64_t> seen(early.keys.begin(), early.keys.end());
    std::size_t unseen = 0, fresh = 0;
    for (std::size_t r = 0; r < late.size; ++r)
      for (std::size_t g = 0; g < n_cat; ++g) {
        const std::uint64_t k = late.keys[r * n_cat + g];
        unseen += !seen.count(k);
        const auto parts = st.decode(k);
        fresh += parts->generation != st.generation(g, parts->rank, 0);
      }
    if (renewed) *renewed = fresh / static_cast<double>(late.keys.size());
    return unseen / static_cast<double>(late.keys.size());
  };
  double renewed = 0;
  const double with_drift = novelty(s, &renewed), without = novelty(stream(still), nullptr);
  BOOST_TEST_MESSAGE("late keys renewed " << renewed << ", unseen " << with_drift << " (without drift " << without
                                          << ")");
  BOOST_TEST(renewed == 0.5, boost::test_tools::tolerance(0.2));
  BOOST_TEST(with_drift > without + 0.3);
}

BOOST_AUTO_TEST_CASE(the_click_rate_and_the_teachers_auc_on_a_test_split_are_as_documented) {
  auto o = small();
  o.part = stream::split::test, o.start = 200000, o.batch = 50000;
  stream test(o);
  const auto& b = test.next();
  const double ctr = mean(b.labels), expected_ctr = [&] {
    double sum = 0;
    for (float p : b.probabilities) sum += p;
    return sum / static_cast<double>(b.size);
  }();
  const double best = dsgd::data::auc(b.probabilities, b.labels);
  BOOST_TEST_MESSAGE("click rate " << ctr << ", teacher AUC " << best);
  BOOST_TEST(ctr > 0.10);
  BOOST_TEST(ctr < 0.25);
  BOOST_TEST(ctr == expected_ctr, boost::test_tools::tolerance(0.03));
  BOOST_TEST(best > 0.75);
  BOOST_TEST(best < 0.90);
  // A model that knows nothing: one score for every example.
  const std::vector<float> constant(b.size, 0.2f);
  BOOST_TEST(dsgd::data::auc(constant, b.labels) == 0.5);
  // Labels that ignore the teacher (teacher_scale 0: every p is sigmoid(bias)) give the
  // teacher's p no edge.
  auto blind = o;
  blind.teacher_scale = 0;
  stream ignorant(blind);
  const auto& c = ignorant.next();
  BOOST_TEST(c.probabilities.front() == c.probabilities.back());
  BOOST_TEST(std::abs(dsgd::data::auc(b.probabilities, c.labels) - 0.5) < 0.02);
}

BOOST_AUTO_TEST_CASE(auc_matches_hand_computed_cases) {
  using dsgd::data::auc;
  using v = std::vector<float>;
  BOOST_TEST(auc(v{0.1f, 0.4f, 0.35f, 0.8f}, v{0, 0, 1, 1}) == 0.75);
  BOOST_TEST(auc(v{0.1f, 0.2f, 0.3f}, v{0, 1, 1}) == 1.0);
  BOOST_TEST(auc(v{0.3f, 0.2f, 0.1f}, v{0, 1, 1}) == 0.0);
  // Ties count half: (0.5 vs 0.1) 1, (0.5 vs 0.5) 1/2, (0.9 vs 0.1) 1, (0.9 vs 0.5) 1.
  BOOST_TEST(auc(v{0.1f, 0.5f, 0.5f, 0.9f}, v{0, 1, 0, 1}) == 3.5 / 4);
  BOOST_TEST(auc(v{0.5f, 0.5f, 0.5f, 0.5f}, v{1, 0, 1, 0}) == 0.5);
  BOOST_TEST(auc(std::vector<double>{2, 1, 1, 0}, v{1, 1, 0, 0}) == (1 + 1 + 0.5 + 1) / 4);
  // Against the O(n^2) count of pairs, with many ties.
  std::vector<float> scores, labels;
  for (int i = 0; i < 300; ++i) {
    scores.push_back(static_cast<float>((i * 37) % 11));
    labels.push_back(static_cast<float>((i * 13) % 7 < 3));
  }
  double pairs = 0, won = 0;
  for (std::size_t i = 0; i < scores.size(); ++i)
    for (std::size_t j = 0; j < scores.size(); ++j)
      if (labels[i] == 1 && labels[j] == 0) {
        ++pairs;
        won += scores[i] > scores[j] ? 1 : (scores[i] == scores[j] ? 0.5 : 0);
      }
  BOOST_TEST(auc(scores, labels) == won / pairs, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(auc_refuses_what_has_no_auc) {
  using dsgd::data::auc;
  using v = std::vector<float>;
  auto code_is = [](dsgd::errc e) {
    return [e](const dsgd::error& x) { return x.code() == dsgd::make_error_code(e); };
  };
  BOOST_CHECK_EXCEPTION(auc(v{0.1f, 0.2f}, v{0}), dsgd::error, code_is(dsgd::errc::shape_mismatch));
  BOOST_CHECK_EXCEPTION(auc(v{0.1f, 0.2f}, v{1, 1}), dsgd::error, code_is(dsgd::errc::invalid_argument));
  BOOST_CHECK_EXCEPTION(auc(v{0.1f, 0.2f}, v{0, 2}), dsgd::error, code_is(dsgd::errc::invalid_argument));
  BOOST_CHECK_EXCEPTION(auc(v{0.1f, std::nanf("")}, v{0, 1}), dsgd::error, code_is(dsgd::errc::invalid_argument));
}

namespace {

struct bad_case {
  std::string field;
  std::function<void(stream::options&)> spoil;
};
std::ostream& operator<<(std::ostream& os, const bad_case& c) { return os << c.field; }

const std::vector<bad_case> bad_cases = {
    {"batch", [](auto& o) { o.batch = 0; }},
    {"shards", [](auto& o) { o.shards = 0; }},
    {"shard", [](auto& o) { o.shard = 2, o.shards = 2; }},
    {"cardinality_scale", [](auto& o) { o.cardinality_scale = 0; }},
    {"cardinality_scale", [](auto& o) { o.cardinality_scale = -1; }},
    {"cardinality_scale", [](auto& o) { o.cardinality_scale = std::nan(""); }},
    {"cardinality_scale", [](auto& o) { o.cardinality_scale = 1e4; }},
    {"drift_period", [](auto& o) { o.drift_period = 0; }},
    {"drift_rate", [](auto& o) { o.drift_rate = -0.01; }},
    {"drift_rate", [](auto& o) { o.drift_rate = 1.5; }},
    {"teacher_scale", [](auto& o) { o.teacher_scale = -1; }},
    {"teacher_scale", [](auto& o) { o.teacher_scale = INFINITY; }},
    {"bias", [](auto& o) { o.bias = std::nan(""); }},
};

}  // namespace

BOOST_DATA_TEST_CASE(a_bad_option_is_named, boost::unit_test::data::make(bad_cases), c) {
  auto o = small();
  c.spoil(o);
  try {
    stream s(o);
    BOOST_ERROR("no error for a bad " << c.field);
  } catch (const dsgd::error& e) {
    BOOST_TEST(e.code() == dsgd::make_error_code(dsgd::errc::invalid_argument));
    BOOST_TEST(std::string(e.what()).find("click_stream::options." + c.field + ":") != std::string::npos, e.what());
  }
}

BOOST_AUTO_TEST_CASE(fill_refuses_spans_of_the_wrong_size) {
  stream s(small());
  std::vector<float> dense(2 * n_dense), labels(2), p(2);
  std::vector<std::uint64_t> keys(2 * n_cat - 1);
  BOOST_CHECK_EXCEPTION(s.fill(0, 2, dense, keys, labels, p), dsgd::error, [](const dsgd::error& e) {
    return e.code() == dsgd::make_error_code(dsgd::errc::shape_mismatch);
  });
}

BOOST_AUTO_TEST_CASE(log_and_exp_agree_with_the_standard_library) {
  namespace d = dsgd::data::detail;
  for (double x = 1e-300; x < 1e300; x *= 1.37)
    BOOST_TEST_REQUIRE(std::abs(d::log(x) - std::log(x)) <= 1e-15 * std::max(1.0, std::abs(std::log(x))));
  for (double x = -700; x < 700; x += 0.173) BOOST_TEST_REQUIRE(std::abs(d::exp(x) / std::exp(x) - 1) <= 1e-15);
  for (std::uint64_t x : {0ull, 1ull, 0x123456789abcdefull, ~0ull}) BOOST_TEST(d::unmix64(d::mix64(x)) == x);
}

BOOST_AUTO_TEST_SUITE_END()
