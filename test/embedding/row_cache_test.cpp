// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/embedding/row_cache.hpp>: the staleness bound at its edge (S and S + 1 steps,
// S = 0, a row from a later step), lookup and fill_misses placing every row, CLOCK's victims
// (unmarked first, expired before marked), the capacity bound and the hit rate on a click
// stream (exact when nothing is evicted), a random run against a std::map of what was stored,
// and bad input named.
#include <dsgd/data/click_stream.hpp>
#include <dsgd/embedding/dedup.hpp>
#include <dsgd/embedding/row_cache.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(embedding_row_cache_test)

namespace {

namespace emb = dsgd::embedding;
namespace tt = boost::test_tools;

constexpr std::size_t dim = 3;

/// The row a "ps" returns for @p key pulled at @p step: distinct for every (key, step).
std::vector<float> ps_row(std::uint64_t key, std::uint64_t step) {
  return {static_cast<float>(key % 100000), static_cast<float>(step), static_cast<float>(key % 7) + 0.5f};
}

std::vector<float> ps_rows(std::span<const std::uint64_t> keys, std::uint64_t step) {
  std::vector<float> rows;
  for (std::uint64_t k : keys)
    for (float x : ps_row(k, step)) rows.push_back(x);
  return rows;
}

/// One step of a worker: look up @p keys at @p step, pull the misses, fill; @returns the block.
std::vector<float> step_through(emb::row_cache& cache, const std::vector<std::uint64_t>& keys, std::uint64_t step) {
  std::vector<float> block(keys.size() * dim, -1.0f);
  const auto& miss = cache.lookup(keys, step, block);
  cache.fill_misses(ps_rows(miss.keys, step), block);
  return block;
}

/// Whether a lookup of @p key alone at @p step hits (and then the row it returns).
std::pair<bool, std::vector<float>> probe(emb::row_cache& cache, std::uint64_t key, std::uint64_t step) {
  std::vector<float> row(dim, -1.0f);
  const std::uint64_t keys[] = {key};
  const bool hit = cache.lookup(keys, step, row).keys.empty();
  return {hit, row};
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_row_serves_exactly_s_steps_after_its_pull) {
  emb::row_cache cache({.dim = dim, .capacity = 16, .staleness = 2});
  const std::vector<std::uint64_t> k = {42};
  cache.insert(k, ps_row(42, 10), 10);
  BOOST_TEST(probe(cache, 42, 10).first);   // same step
  BOOST_TEST(probe(cache, 42, 12).first);   // t - p = S: still served
  BOOST_TEST(!probe(cache, 42, 13).first);  // t - p = S + 1: stale
  BOOST_TEST(!probe(cache, 42, 9).first);   // a row from a later step is never served
  BOOST_TEST(probe(cache, 42, 12).second == ps_row(42, 10), tt::per_element());
  const auto& s = cache.statistics();
  BOOST_TEST(s.hits == 3u);
  BOOST_TEST(s.misses == 2u);
  BOOST_TEST(s.stale == 2u);  // both misses found the key, too old or too new
  BOOST_TEST(s.hit_rate() == 0.6);
  // A refresh at step 13 serves steps 13..15 with the new row.
  cache.insert(k, ps_row(42, 13), 13);
  BOOST_TEST(probe(cache, 42, 15).second == ps_row(42, 13), tt::per_element());
  BOOST_TEST(!probe(cache, 42, 16).first);
  BOOST_TEST(cache.size() == 1u);
}

BOOST_AUTO_TEST_CASE(staleness_zero_serves_only_the_same_step) {
  emb::row_cache cache({.dim = dim, .capacity = 16, .staleness = 0});
  const std::vector<std::uint64_t> keys = {1, 2, 3};
  step_through(cache, keys, 5);
  BOOST_TEST(cache.statistics().misses == 3u);
  step_through(cache, keys, 5);  // a second lookup in step 5 (another tower): all hits
  BOOST_TEST(cache.statistics().hits == 3u);
  step_through(cache, keys, 6);
  BOOST_TEST(cache.statistics().misses == 6u);
  BOOST_TEST(cache.statistics().stale == 3u);
}

BOOST_AUTO_TEST_CASE(lookup_and_fill_misses_place_every_row) {
  emb::row_cache cache({.dim = dim, .capacity = 100, .staleness = 5});
  step_through(cache, {10, 20, 30}, 1);
  const std::vector<std::uint64_t> keys = {40, 20, 50, 10, 30};
  std::vector<float> block(keys.size() * dim, -1.0f);
  const auto& miss = cache.lookup(keys, 3, block);
  BOOST_TEST(std::vector<std::uint64_t>(miss.keys.begin(), miss.keys.end()) == (std::vector<std::uint64_t>{40, 50}),
             tt::per_element());
  BOOST_TEST(
      std::vector<std::uint32_t>(miss.positions.begin(), miss.positions.end()) == (std::vector<std::uint32_t>{0, 2}),
      tt::per_element());
  // Hits are in place already; the misses' rows are untouched until fill_misses.
  BOOST_TEST(std::vector<float>(block.begin() + 3, block.begin() + 6) == ps_row(20, 1), tt::per_element());
  BOOST_TEST(block[0] == -1.0f);
  cache.fill_misses(ps_rows(miss.keys, 3), block);
  std::vector<float> expected;
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> pulled_at = {{40, 3}, {20, 1}, {50, 3}, {10, 1}, {30, 1}};
  for (const auto& [key, step] : pulled_at)
    for (float x : ps_row(key, step)) expected.push_back(x);
  BOOST_TEST(block == expected, tt::per_element());
  BOOST_TEST(cache.statistics().hits == 3u);
  BOOST_TEST(cache.statistics().misses == 5u);  // 3 at step 1, 2 at step 3
  BOOST_TEST(cache.statistics().inserts == 5u);
  BOOST_TEST(cache.size() == 5u);
  BOOST_TEST(probe(cache, 50, 8).first);  // stored as pulled at step 3: 8 - 3 = S
}

BOOST_AUTO_TEST_CASE(clock_evicts_an_unhit_row_before_a_hit_one) {
  emb::row_cache cache({.dim = dim, .capacity = 2, .staleness = 100});
  step_through(cache, {1, 2}, 0);
  BOOST_TEST(probe(cache, 1, 1).first);  // 1 is marked, 2 is not
  step_through(cache, {3}, 1);           // the hand passes 1 (clearing its mark) and takes 2
  BOOST_TEST(cache.contains(1));
  BOOST_TEST(!cache.contains(2));
  BOOST_TEST(cache.contains(3));
  BOOST_TEST(cache.statistics().evictions == 1u);
  step_through(cache, {4}, 2);  // the hand is back at 1, unmarked now: 1 goes
  BOOST_TEST(!cache.contains(1));
  BOOST_TEST(cache.contains(3));
  BOOST_TEST(cache.contains(4));
  BOOST_TEST(cache.size() == 2u);
}

BOOST_AUTO_TEST_CASE(clock_evicts_an_expired_row_even_if_it_was_hit) {
  emb::row_cache cache({.dim = dim, .capacity = 2, .staleness = 1});
  step_through(cache, {1}, 0);
  step_through(cache, {2}, 1);
  BOOST_TEST(probe(cache, 1, 1).first);  // both marked
  BOOST_TEST(probe(cache, 2, 1).first);
  step_through(cache, {3}, 2);  // at step 2, 1 (pulled at 0) is expired: it goes, marked or not
  BOOST_TEST(!cache.contains(1));
  BOOST_TEST(cache.contains(2));
  BOOST_TEST(cache.contains(3));
}

BOOST_AUTO_TEST_CASE(hit_rate_on_a_click_stream_is_exact_without_evictions) {
  // Capacity above the distinct keys and a bound longer than the run: each key misses exactly
  // once, so hits = lookups - distinct keys.
  using stream = dsgd::data::click_stream;
  stream s({.seed = 5, .batch = 2048, .cardinality_scale = 0.01, .drift_rate = 0});
  emb::deduplicator dedup;
  emb::row_cache cache({.dim = dim, .capacity = 100000, .staleness = 1000});
  std::map<std::uint64_t, std::uint64_t> seen;  // key -> the step it was first pulled at
  std::uint64_t lookups = 0;
  for (std::uint64_t step = 0; step < 10; ++step) {
    const auto& d = dedup.run(s.next().keys);
    const std::vector<std::uint64_t> unique(d.unique.begin(), d.unique.end());
    const std::vector<float> block = step_through(cache, unique, step);
    std::vector<float> expected;
    for (std::uint64_t k : unique)
      for (float x : ps_row(k, seen.try_emplace(k, step).first->second)) expected.push_back(x);
    BOOST_TEST_REQUIRE(block == expected, tt::per_element());  // every key keeps its first row
    lookups += unique.size();
  }
  const auto& st = cache.statistics();
  BOOST_TEST(st.misses == seen.size());
  BOOST_TEST(st.hits == lookups - seen.size());
  BOOST_TEST(st.evictions == 0u);
  BOOST_TEST(st.hit_rate() == static_cast<double>(lookups - seen.size()) / static_cast<double>(lookups));
  BOOST_TEST(st.hit_rate() > 0.5);  // Zipf ids: most unique keys of a batch were seen before
}

BOOST_AUTO_TEST_CASE(a_small_cache_stays_within_capacity_and_still_hits_the_head) {
  using stream = dsgd::data::click_stream;
  stream s({.seed = 5, .batch = 2048, .cardinality_scale = 0.01});
  emb::deduplicator dedup;
  emb::row_cache cache({.dim = dim, .capacity = 1000, .staleness = 4});
  for (std::uint64_t step = 0; step < 20; ++step) {
    const auto& d = dedup.run(s.next().keys);
    const std::vector<std::uint64_t> unique(d.unique.begin(), d.unique.end());
    const std::vector<float> block = step_through(cache, unique, step);
    // Every row is the key's, pulled within S steps.
    for (std::size_t i = 0; i < unique.size(); ++i) {
      BOOST_TEST_REQUIRE(block[i * dim] == static_cast<float>(unique[i] % 100000));
      BOOST_TEST_REQUIRE(block[i * dim + 1] <= static_cast<float>(step));
      BOOST_TEST_REQUIRE(block[i * dim + 1] + 4 >= static_cast<float>(step));
    }
    BOOST_TEST_REQUIRE(cache.size() <= 1000u);
  }
  const auto& st = cache.statistics();
  BOOST_TEST(cache.size() == 1000u);
  // Every new key beyond the first 1000 evicts; a stale key is refreshed in place unless an
  // earlier miss of its batch evicted it first.
  BOOST_TEST(st.evictions <= st.inserts - 1000u);
  BOOST_TEST(st.evictions >= st.inserts - st.stale - 1000u);
  BOOST_TEST(st.hit_rate() > 0.05);
  BOOST_TEST(st.hit_rate() < 0.95);
}

BOOST_AUTO_TEST_CASE(a_random_run_agrees_with_a_map_of_what_was_stored) {
  // Many evictions through a small index (backward-shift deletion at work): a key the cache
  // holds serves the row last stored for it exactly when that row is fresh, and the cache holds
  // as many keys as it says.
  std::mt19937_64 rng(99);
  const std::uint64_t staleness = 3;
  emb::row_cache cache({.dim = dim, .capacity = 37, .staleness = staleness});
  std::map<std::uint64_t, std::uint64_t> stored;  // key -> step of its last insert
  for (std::uint64_t step = 0; step < 400; ++step) {
    std::vector<std::uint64_t> keys;
    for (int i = 0; i < 20; ++i) keys.push_back((rng() % 120) << (rng() % 2 ? 0 : 40));  // colliding homes too
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    std::vector<bool> expect_hit;
    for (std::uint64_t k : keys)
      expect_hit.push_back(cache.contains(k) && stored.at(k) <= step && step - stored.at(k) <= staleness);
    std::vector<float> block(keys.size() * dim, -1.0f);
    const auto& miss = cache.lookup(keys, step, block);
    std::size_t m = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const bool hit = m == miss.positions.size() || miss.positions[m] != i;
      BOOST_TEST_REQUIRE(hit == expect_hit[i]);
      if (hit) {
        const std::vector<float> row(block.data() + i * dim, block.data() + (i + 1) * dim);
        BOOST_TEST_REQUIRE(row == ps_row(keys[i], stored.at(keys[i])), tt::per_element());
      } else {
        ++m;
      }
    }
    cache.fill_misses(ps_rows(miss.keys, step), block);
    for (std::uint64_t k : miss.keys) stored[k] = step;
    std::size_t held = 0;
    for (const auto& [k, s] : stored) held += cache.contains(k) ? 1 : 0;
    BOOST_TEST_REQUIRE(held == cache.size());
    BOOST_TEST_REQUIRE(cache.size() <= 37u);
  }
  BOOST_TEST(cache.statistics().evictions > 1000u);
}

BOOST_AUTO_TEST_CASE(a_cache_of_capacity_zero_holds_nothing) {
  emb::row_cache cache({.dim = dim, .capacity = 0, .staleness = 10});
  step_through(cache, {1, 2}, 0);
  step_through(cache, {1, 2}, 0);
  BOOST_TEST(cache.size() == 0u);
  BOOST_TEST(cache.statistics().hits == 0u);
  BOOST_TEST(cache.statistics().misses == 4u);
  BOOST_TEST(cache.statistics().hit_rate() == 0.0);
}

BOOST_AUTO_TEST_CASE(clear_and_reset_statistics) {
  emb::row_cache cache({.dim = dim, .capacity = 8, .staleness = 10});
  step_through(cache, {1, 2}, 0);
  step_through(cache, {1, 2}, 1);
  BOOST_TEST(cache.statistics().hit_rate() == 0.5);
  cache.reset_statistics();
  BOOST_TEST(cache.statistics().hits == 0u);
  BOOST_TEST(cache.size() == 2u);
  cache.clear();
  BOOST_TEST(cache.size() == 0u);
  BOOST_TEST(!cache.contains(1));
  step_through(cache, {1, 2, 3, 4, 5, 6, 7, 8}, 2);  // the whole capacity is free again
  BOOST_TEST(cache.statistics().evictions == 0u);
  BOOST_TEST(cache.size() == 8u);
}

BOOST_AUTO_TEST_CASE(bad_input_is_named) {
  const auto names = [](std::string text) {
    return [text](const dsgd::error& e) { return std::string(e.what()).find(text) != std::string::npos; };
  };
  BOOST_CHECK_EXCEPTION(emb::row_cache({.dim = 0, .capacity = 4}), dsgd::error,
                        names("row_cache::options.dim: must be greater than 0"));
  emb::row_cache cache({.dim = dim, .capacity = 4});
  std::vector<float> rows(2 * dim);
  BOOST_CHECK_EXCEPTION(cache.fill_misses({}, rows), dsgd::error, names("no lookup() to complete"));
  const std::vector<std::uint64_t> keys = {1, 2, 3};
  BOOST_CHECK_EXCEPTION(cache.lookup(keys, 0, rows), dsgd::error,
                        names("embedding::row_cache::lookup: rows holds 6 floats, expected 3 rows x dim 3"));
  rows.resize(3 * dim);
  cache.lookup(keys, 0, rows);
  BOOST_CHECK_EXCEPTION(cache.fill_misses(std::vector<float>(2 * dim), rows), dsgd::error,
                        names("embedding::row_cache::fill_misses: pulled holds 6 floats, expected 3 rows x dim 3"));
  BOOST_CHECK_EXCEPTION(cache.insert(keys, std::vector<float>(dim), 0), dsgd::error,
                        names("embedding::row_cache::insert: rows holds 3 floats, expected 3 rows x dim 3"));
  BOOST_TEST(cache.size() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
