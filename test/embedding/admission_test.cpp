// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/embedding/admission.hpp>: by_count admits on exactly the count-th sighting
// (against a std::map oracle, through a row_table's counters), its pending set stays bounded
// under a stream of ids seen once and decays as documented; by_probability is reproducible, has
// the asked rate and gives a refused key another chance at another step.
#include <dsgd/embedding/admission.hpp>
#include <dsgd/embedding/eviction.hpp>
#include <dsgd/embedding/row_table.hpp>

#include <support/error_checks.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>

BOOST_AUTO_TEST_SUITE(embedding_admission_test)

namespace {

namespace emb = dsgd::embedding;

static_assert(emb::AdmissionPolicy<emb::admission::always>);
static_assert(emb::AdmissionPolicy<emb::admission::by_count>);
static_assert(emb::AdmissionPolicy<emb::admission::by_probability>);
static_assert(!emb::AdmissionPolicy<int>);
static_assert(!emb::AdmissionPolicy<emb::eviction::by_age>);      // another family
static_assert(!emb::AdmissionPolicy<emb::initializer::uniform>);  // another family

}  // namespace

BOOST_AUTO_TEST_CASE(always_admits_every_key) {
  emb::admission::always a;
  for (std::uint64_t k = 0; k < 100; ++k) BOOST_TEST(a.admit(k, k));
}

BOOST_AUTO_TEST_CASE(by_count_admits_on_exactly_the_nth_sighting) {
  emb::admission::by_count a({.count = 3});
  BOOST_TEST(!a.admit(7, 0));
  BOOST_TEST(a.pending_count(7) == 1u);
  BOOST_TEST(!a.admit(7, 0));
  BOOST_TEST(a.pending_count(7) == 2u);
  BOOST_TEST(a.admit(7, 1));
  BOOST_TEST(a.pending_count(7) == 0u);  // admitted keys are forgotten
  BOOST_TEST(a.pending() == 0u);
  emb::admission::by_count once({.count = 1});
  BOOST_TEST(once.admit(5, 0));
  BOOST_TEST(once.pending() == 0u);
}

BOOST_AUTO_TEST_CASE(a_table_with_by_count_matches_a_sighting_oracle) {
  constexpr std::uint32_t n = 4;
  emb::row_table table({.name = "ads", .dim = 3}, emb::initializer::zeros{}, emb::admission::by_count({.count = n}));
  std::map<std::uint64_t, std::uint32_t> sightings;  // oracle: of keys without a row
  std::set<std::uint64_t> rows;
  std::uint64_t admitted = 0, rejected = 0;
  std::mt19937_64 rng(5);
  std::geometric_distribution<std::uint64_t> skewed(0.05);
  for (std::uint64_t i = 0; i < 20000; ++i) {
    const std::uint64_t key = skewed(rng);
    const auto r = table.find_or_admit(key, i / 100);
    if (rows.count(key)) {
      BOOST_TEST_REQUIRE((r.status == emb::lookup_status::found));
      continue;
    }
    if (++sightings[key] == n) {
      sightings.erase(key);
      rows.insert(key);
      ++admitted;
      BOOST_TEST_REQUIRE((r.status == emb::lookup_status::created));
    } else {
      ++rejected;
      BOOST_TEST_REQUIRE((r.status == emb::lookup_status::rejected));
    }
  }
  BOOST_TEST(table.stats().admitted == admitted);
  BOOST_TEST(table.stats().rejected == rejected);
  BOOST_TEST(table.size() == rows.size());
  BOOST_TEST(table.admission().pending() == sightings.size());
  for (const auto& [key, count] : sightings) BOOST_TEST(table.admission().pending_count(key) == count);
  BOOST_TEST(admitted > 20u);
  BOOST_TEST(rejected > 3 * admitted);  // every admitted key was refused n - 1 times first
}

BOOST_AUTO_TEST_CASE(by_count_halves_its_counts_when_the_pending_set_is_full) {
  emb::admission::by_count a({.count = 10, .max_pending = 4});
  for (int i = 0; i < 5; ++i) (void)a.admit(1, 0);
  for (int i = 0; i < 3; ++i) (void)a.admit(2, 0);
  (void)a.admit(3, 0);
  (void)a.admit(4, 0);
  BOOST_TEST(a.pending() == 4u);
  BOOST_TEST(a.decays() == 0u);
  (void)a.admit(5, 0);  // full: 5 -> 2, 3 -> 1, 1 -> 0 (forgotten), then 5 is counted
  BOOST_TEST(a.decays() == 1u);
  BOOST_TEST(a.pending_count(1) == 2u);
  BOOST_TEST(a.pending_count(2) == 1u);
  BOOST_TEST(a.pending_count(3) == 0u);
  BOOST_TEST(a.pending_count(4) == 0u);
  BOOST_TEST(a.pending_count(5) == 1u);
  BOOST_TEST(a.pending() == 3u);
}

BOOST_AUTO_TEST_CASE(by_count_stays_bounded_under_ids_seen_once) {
  emb::admission::by_count a({.count = 2, .max_pending = 1000});
  std::size_t bytes_at_bound = 0;
  for (std::uint64_t k = 0; k < 100000; ++k) {
    BOOST_TEST_REQUIRE(!a.admit(k * 0x9e3779b97f4a7c15ull, 0));
    BOOST_TEST_REQUIRE(a.pending() <= 1000u);
    if (k == 2000) bytes_at_bound = a.bytes_used();
  }
  BOOST_TEST(bytes_at_bound > 0u);
  BOOST_TEST(a.bytes_used() == bytes_at_bound);  // flat once the bound is reached
  BOOST_TEST(a.decays() >= 99u);
  // A key seen twice in a row is still admitted however full the set is.
  (void)a.admit(1, 0);
  BOOST_TEST(a.admit(1, 0));
}

BOOST_AUTO_TEST_CASE(by_count_rejects_bad_options) {
  const std::string msg =
      dsgd::test::error_of([] { emb::admission::by_count({.count = 0}); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "admission::by_count::options.count"));
  dsgd::test::error_of([] { emb::admission::by_count({.count = 2, .max_pending = 0}); }, dsgd::errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(by_probability_is_reproducible_and_has_the_asked_rate) {
  const emb::admission::by_probability a{.probability = 0.1, .seed = 3};
  const emb::admission::by_probability same{.probability = 0.1, .seed = 3};
  const emb::admission::by_probability other{.probability = 0.1, .seed = 4};
  int admitted = 0, agree = 0, agree_other = 0;
  const int keys = 100000;
  for (int k = 0; k < keys; ++k) {
    const bool yes = a.admit(k, 17);
    admitted += yes;
    agree += yes == same.admit(k, 17);
    agree_other += yes == other.admit(k, 17);
  }
  BOOST_TEST(agree == keys);
  BOOST_TEST(std::abs(admitted / double(keys) - 0.1) < 0.005);  // 5.3 standard errors
  BOOST_TEST(agree_other < keys - 15000);                       // another seed, other coins: about 82% agree
  const emb::admission::by_probability never{.probability = 0, .seed = 3}, surely{.probability = 1, .seed = 3};
  for (int k = 0; k < 1000; ++k) {
    BOOST_TEST_REQUIRE(!never.admit(k, 0));
    BOOST_TEST_REQUIRE(surely.admit(k, 0));
  }
}

BOOST_AUTO_TEST_CASE(by_probability_gives_a_refused_key_another_chance_at_another_step) {
  const emb::admission::by_probability a{.probability = 0.25, .seed = 9};
  // Over 8 steps a key gets in with probability 1 - 0.75^8 = 0.90.
  int got_in = 0;
  for (std::uint64_t k = 0; k < 1000; ++k) {
    bool in = false;
    for (std::uint64_t step = 0; step < 8 && !in; ++step) in = a.admit(k, step);
    got_in += in;
  }
  BOOST_TEST(std::abs(got_in / 1000.0 - (1 - std::pow(0.75, 8))) < 0.03);
  // Through a table: its counters add up, and the same stream admits the same keys.
  auto run = [] {
    emb::row_table t({.name = "p", .dim = 2}, emb::initializer::zeros{}, emb::admission::by_probability{0.3, 1});
    for (std::uint64_t i = 0; i < 3000; ++i) (void)t.find_or_admit(i % 500, i / 500);
    return t.stats();
  };
  const emb::table_stats s1 = run(), s2 = run();
  BOOST_TEST(s1.admitted == s2.admitted);
  BOOST_TEST(s1.rejected == s2.rejected);
  BOOST_TEST(s1.admitted + s1.rejected <= 3000u);
  BOOST_TEST(s1.admitted > 300u);  // 1 - 0.7^6 = 88% of the 500 keys
}

BOOST_AUTO_TEST_CASE(a_table_rejects_a_bad_probability) {
  const std::string msg = dsgd::test::error_of(
      [] {
        emb::row_table t({.dim = 2}, emb::initializer::zeros{}, emb::admission::by_probability{1.5, 0});
      },
      dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "admission::by_probability.probability"));
}

BOOST_AUTO_TEST_SUITE_END()
