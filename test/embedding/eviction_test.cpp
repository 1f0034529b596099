// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/embedding/eviction.hpp> through row_table: the order rows go in at the cap
// (by_age, least_frequent, against a naive std::map oracle over a skewed stream), batches,
// sweeps of expired rows, the rows of the current step kept, tombstones, and the caps: a full
// table without eviction throws a named error and changes nothing, a byte cap is kept.
#include <dsgd/embedding/eviction.hpp>
#include <dsgd/embedding/row_table.hpp>

#include <support/error_checks.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

BOOST_AUTO_TEST_SUITE(embedding_eviction_test)

namespace {

namespace emb = dsgd::embedding;

static_assert(emb::EvictionPolicy<emb::eviction::none>);
static_assert(emb::EvictionPolicy<emb::eviction::by_age>);
static_assert(emb::EvictionPolicy<emb::eviction::least_frequent>);
static_assert(!emb::EvictionPolicy<int>);
static_assert(!emb::EvictionPolicy<emb::admission::always>);  // another family

// A policy a user writes: every row ranks the same, so the smallest keys go first.
struct smallest_key_first {
  static constexpr bool evicts = true;
  emb::eviction_rank rank(const emb::row_stats&) const { return {}; }  // ties: by key, smallest first
  bool expired(const emb::row_stats&, std::uint64_t) const { return false; }
};
static_assert(emb::EvictionPolicy<smallest_key_first>);
// Without `evicts` it is not a policy.
struct no_evicts_member {
  emb::eviction_rank rank(const emb::row_stats&) const { return {}; }
  bool expired(const emb::row_stats&, std::uint64_t) const { return false; }
};
static_assert(!emb::EvictionPolicy<no_evicts_member>);

std::set<std::uint64_t> keys_of(const auto& table) {
  std::set<std::uint64_t> keys;
  table.for_each([&](emb::const_row_view r, emb::row_stats) { keys.insert(r.key()); });
  return keys;
}

std::set<std::uint64_t> tombstones_of(const auto& table) {
  std::set<std::uint64_t> keys;
  table.for_each_tombstone([&](std::uint64_t k) { keys.insert(k); });
  return keys;
}

// The naive oracle: every row in a std::map, the victim found by sorting all of them.
template <class Policy>
struct oracle_table {
  struct row {
    std::vector<float> weights;
    emb::row_stats stats;
  };
  Policy policy;
  std::size_t cap;
  std::size_t dim;
  std::map<std::uint64_t, row> rows;
  std::set<std::uint64_t> tombstones;
  std::uint64_t evicted = 0;

  void lookup(std::uint64_t key, std::uint64_t step) {
    if (auto it = rows.find(key); it != rows.end()) {
      it->second.stats.last_step = std::max(it->second.stats.last_step, step);
      ++it->second.stats.uses;
      return;
    }
    if (rows.size() >= cap) {
      std::vector<std::tuple<emb::eviction_rank, std::uint64_t>> order;
      for (const auto& [k, r] : rows)
        if (r.stats.last_step < step) order.emplace_back(policy.rank(r.stats), k);
      BOOST_TEST_REQUIRE(!order.empty());
      std::sort(order.begin(), order.end());
      rows.erase(std::get<1>(order.front()));
      tombstones.insert(std::get<1>(order.front()));
      ++evicted;
    }
    rows[key] = row{std::vector<float>(dim, 0.f), {step, 1}};
    tombstones.erase(key);
  }
};

// Drives a table and the oracle with the same skewed stream: lookups, and updates (+1 on
// every weight) of some rows found; then compares keys, stats, weights and tombstones.
template <class Policy>
void check_against_oracle(Policy policy, std::uint64_t seed) {
  constexpr std::size_t cap = 40, dim = 3;
  // evict_fraction * cap rounds up to 1: one victim at a time, as the oracle does.
  emb::row_table table({.name = "oracle", .dim = dim, .max_rows = cap, .evict_fraction = 0.5 / cap},
                       emb::initializer::zeros{}, emb::admission::always{}, policy);
  oracle_table<Policy> oracle{policy, cap, dim, {}, {}, 0};
  std::mt19937_64 rng(seed);
  std::geometric_distribution<std::uint64_t> skewed(0.02);
  std::bernoulli_distribution update(0.5);
  for (std::uint64_t i = 0; i < 6000; ++i) {
    const std::uint64_t step = i / 7, key = skewed(rng);
    const auto r = table.find_or_admit(key, step);
    oracle.lookup(key, step);
    if (update(rng)) {
      for (float& w : r.row.weights()) w += 1;
      table.mark_updated(r.row, step);
      for (float& w : oracle.rows.at(key).weights) w += 1;
    }
  }
  BOOST_TEST(oracle.evicted > 200u);  // the stream makes the cap matter
  BOOST_TEST(table.stats().evicted == oracle.evicted);
  BOOST_TEST(table.size() == oracle.rows.size());
  std::size_t compared = 0;
  table.for_each([&](emb::const_row_view r, emb::row_stats s) {
    const auto it = oracle.rows.find(r.key());
    BOOST_TEST_REQUIRE((it != oracle.rows.end()));
    BOOST_TEST(s.last_step == it->second.stats.last_step);
    BOOST_TEST(s.uses == it->second.stats.uses);
    BOOST_TEST(std::vector<float>(r.weights().begin(), r.weights().end()) == it->second.weights,
               boost::test_tools::per_element());
    ++compared;
  });
  BOOST_TEST(compared == oracle.rows.size());
  BOOST_TEST(tombstones_of(table) == oracle.tombstones);
}

}  // namespace

BOOST_AUTO_TEST_CASE(by_age_evicts_in_the_oracles_order) {
  check_against_oracle(emb::eviction::by_age{}, 1);
  check_against_oracle(emb::eviction::by_age{}, 2);
}

BOOST_AUTO_TEST_CASE(least_frequent_evicts_in_the_oracles_order) {
  check_against_oracle(emb::eviction::least_frequent{}, 3);
  check_against_oracle(emb::eviction::least_frequent{}, 4);
}

BOOST_AUTO_TEST_CASE(a_user_policy_decides_the_victims) { check_against_oracle(smallest_key_first{}, 5); }

BOOST_AUTO_TEST_CASE(by_age_evicts_the_least_recently_touched_row) {
  emb::row_table t({.name = "age", .dim = 2, .max_rows = 4, .evict_fraction = 0.1}, emb::initializer::zeros{},
                   emb::admission::always{}, emb::eviction::by_age{});
  for (std::uint64_t k = 1; k <= 4; ++k) (void)t.find_or_admit(k, k);  // key k at step k
  (void)t.find_or_admit(1, 5);                                         // 1 is fresh again
  BOOST_TEST((t.find_or_admit(5, 6).status == emb::lookup_status::created));
  BOOST_TEST(keys_of(t) == (std::set<std::uint64_t>{1, 3, 4, 5}));
  BOOST_TEST(tombstones_of(t) == (std::set<std::uint64_t>{2}));
  t.mark_updated(*t.find(3), 7);  // an update touches too
  (void)t.find_or_admit(6, 8);
  BOOST_TEST(keys_of(t) == (std::set<std::uint64_t>{1, 3, 5, 6}));
  BOOST_TEST(t.stats().evicted == 2u);
}

BOOST_AUTO_TEST_CASE(least_frequent_evicts_the_least_used_row) {
  emb::row_table t({.name = "lfu", .dim = 2, .max_rows = 3, .evict_fraction = 0.1}, emb::initializer::zeros{},
                   emb::admission::always{}, emb::eviction::least_frequent{});
  for (int i = 0; i < 3; ++i) (void)t.find_or_admit(10, 0);  // 3 uses
  (void)t.find_or_admit(20, 1);                              // 1 use, at step 1
  for (int i = 0; i < 2; ++i) (void)t.find_or_admit(30, 2);  // 2 uses
  (void)t.find_or_admit(40, 3);
  BOOST_TEST(keys_of(t) == (std::set<std::uint64_t>{10, 30, 40}));
  // 40 now has 1 use, 30 has 2: 40 goes though it is the newest.
  (void)t.find_or_admit(50, 4);
  BOOST_TEST(keys_of(t) == (std::set<std::uint64_t>{10, 30, 50}));
}

BOOST_AUTO_TEST_CASE(a_full_table_evicts_a_batch_at_once) {
  emb::row_table t({.name = "batch", .dim = 2, .max_rows = 8, .evict_fraction = 0.25}, emb::initializer::zeros{},
                   emb::admission::always{}, emb::eviction::by_age{});
  for (std::uint64_t k = 0; k < 8; ++k) (void)t.find_or_admit(k, k);
  (void)t.find_or_admit(100, 10);
  BOOST_TEST(t.stats().evicted == 2u);  // 0.25 * 8
  BOOST_TEST(keys_of(t) == (std::set<std::uint64_t>{2, 3, 4, 5, 6, 7, 100}));
  (void)t.find_or_admit(101, 11);  // room left: nothing evicted
  BOOST_TEST(t.stats().evicted == 2u);
  BOOST_TEST(t.size() == 8u);
}

BOOST_AUTO_TEST_CASE(rows_touched_at_the_current_step_are_never_evicted) {
  emb::row_table t({.name = "pinned", .dim = 2, .max_rows = 3, .evict_fraction = 0.1, .ps_task = 1},
                   emb::initializer::zeros{}, emb::admission::always{}, emb::eviction::least_frequent{});
  (void)t.find_or_admit(1, 0);
  for (int i = 0; i < 5; ++i) (void)t.find_or_admit(2, 0);
  (void)t.find_or_admit(3, 5);
  // 3 has the fewest uses, but it was touched at step 5: 1 goes.
  (void)t.find_or_admit(4, 5);
  BOOST_TEST(keys_of(t) == (std::set<std::uint64_t>{2, 3, 4}));
  (void)t.find_or_admit(2, 5);
  // Every row was touched at step 5: no room for a fifth key in this step.
  const std::string msg = dsgd::test::error_of([&] { (void)t.find_or_admit(5, 5); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "embedding table 'pinned' on ps task 1, key 5"));
  BOOST_TEST(dsgd::test::contains(msg, "touched at step 5"));
  BOOST_TEST(keys_of(t) == (std::set<std::uint64_t>{2, 3, 4}));
  BOOST_TEST((t.find_or_admit(5, 6).status == emb::lookup_status::created));  // next step: fine
}

BOOST_AUTO_TEST_CASE(a_full_table_without_eviction_throws_a_named_error_and_keeps_its_rows) {
  emb::row_table t({.name = "clicks", .dim = 4, .max_rows = 5, .ps_task = 3});
  for (std::uint64_t k = 0; k < 5; ++k) (void)t.find_or_admit(k, k);
  const std::size_t bytes = t.bytes_used();
  const std::string msg = dsgd::test::error_of([&] { (void)t.find_or_admit(77, 9); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "embedding table 'clicks' on ps task 3, key 77"));
  BOOST_TEST(dsgd::test::contains(msg, "full (5 rows"));
  BOOST_TEST(dsgd::test::contains(msg, "eviction policy is none"));
  BOOST_TEST(t.size() == 5u);
  BOOST_TEST(!t.contains(77));
  BOOST_TEST(keys_of(t) == (std::set<std::uint64_t>{0, 1, 2, 3, 4}));
  BOOST_TEST(t.bytes_used() == bytes);
  BOOST_TEST((t.find_or_admit(3, 10).status == emb::lookup_status::found));  // existing rows still serve
  BOOST_TEST(t.stats().evicted == 0u);
  // Without a ps task the message says less, but still the table and the key.
  emb::row_table u({.name = "solo", .dim = 1, .max_rows = 1});
  (void)u.find_or_admit(1, 0);
  const std::string solo = dsgd::test::error_of([&] { (void)u.find_or_admit(2, 0); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(solo, "embedding table 'solo', key 2"));
}

BOOST_AUTO_TEST_CASE(a_sweep_evicts_rows_not_touched_in_the_last_max_age_steps) {
  emb::row_table t({.name = "sweep", .dim = 1}, emb::initializer::zeros{}, emb::admission::always{},
                   emb::eviction::by_age{.max_age = 10});
  for (std::uint64_t k = 0; k <= 20; ++k) (void)t.find_or_admit(k, k);  // key k last touched at step k
  BOOST_TEST(t.evict_expired(20) == 11u);                               // steps 0..10: 10 + 10 <= 20
  std::set<std::uint64_t> expected;
  for (std::uint64_t k = 11; k <= 20; ++k) expected.insert(k);
  BOOST_TEST(keys_of(t) == expected);
  BOOST_TEST(tombstones_of(t).size() == 11u);
  BOOST_TEST(t.stats().evicted == 11u);
  BOOST_TEST(t.evict_expired(20) == 0u);
  emb::row_table none({.dim = 1});
  (void)none.find_or_admit(1, 0);
  BOOST_TEST(none.evict_expired(1000000) == 0u);  // eviction::none never sweeps
}

BOOST_AUTO_TEST_CASE(a_least_frequent_sweep_keeps_hot_rows_however_old) {
  emb::row_table t({.name = "lfu_sweep", .dim = 1}, emb::initializer::zeros{}, emb::admission::always{},
                   emb::eviction::least_frequent{.min_uses = 3, .max_age = 5});
  for (int i = 0; i < 3; ++i) (void)t.find_or_admit(1, 0);  // hot, old
  (void)t.find_or_admit(2, 0);                              // cold, old
  (void)t.find_or_admit(3, 8);                              // cold, recent
  BOOST_TEST(t.evict_expired(10) == 1u);
  BOOST_TEST(keys_of(t) == (std::set<std::uint64_t>{1, 3}));
}

BOOST_AUTO_TEST_CASE(a_byte_cap_holds_and_is_mostly_used) {
  for (std::size_t cap : {20000u, 300000u, 1u << 22}) {
    BOOST_TEST_CONTEXT("max_bytes " << cap) {
      emb::row_table t({.name = "bytes", .dim = 16, .max_bytes = cap, .track_changes = false},
                       emb::initializer::zeros{}, emb::admission::always{}, emb::eviction::by_age{});
      BOOST_TEST_REQUIRE(t.max_rows() > 0u);
      for (std::uint64_t k = 0; k < 3 * t.max_rows(); ++k) (void)t.find_or_admit(k, k);
      BOOST_TEST(t.size() <= t.max_rows());
      BOOST_TEST(t.size() + t.max_rows() / 64 + 1 >= t.max_rows());  // full, less at most one batch
      const std::size_t rows_bytes = t.bytes_used() - sizeof(t);
      BOOST_TEST(rows_bytes <= cap);
      // The map's power-of-two buckets waste some, never half.
      BOOST_TEST(t.max_rows() * t.raw_row_bytes() >= cap / 3);
    }
  }
  dsgd::test::error_of([] { emb::row_table t({.dim = 1000, .max_bytes = 100}); }, dsgd::errc::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
