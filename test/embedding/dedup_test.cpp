// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/embedding/dedup.hpp>: unique keys, inverse and counts against a std::map
// oracle of first-seen order, on batches with few and many duplicates, 0 and all-ones keys,
// sequential and power-of-two-strided keys, tables that grow inside a run, batches of a click
// stream; results independent of the batches before; no buffer moves once a batch as large was
// seen.
#include <dsgd/data/click_stream.hpp>
#include <dsgd/embedding/dedup.hpp>

#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <ostream>
#include <random>
#include <span>
#include <vector>

BOOST_AUTO_TEST_SUITE(embedding_dedup_test)

namespace {

namespace emb = dsgd::embedding;

/// The oracle: first-seen order by a std::map from key to its index.
struct naive_dedup {
  std::vector<std::uint64_t> unique;
  std::vector<std::uint32_t> inverse, counts;

  explicit naive_dedup(std::span<const std::uint64_t> keys) {
    std::map<std::uint64_t, std::uint32_t> index;
    for (std::uint64_t k : keys) {
      auto [it, added] = index.try_emplace(k, static_cast<std::uint32_t>(unique.size()));
      if (added) {
        unique.push_back(k);
        counts.push_back(0);
      }
      inverse.push_back(it->second);
      ++counts[it->second];
    }
  }
};

void check_against_oracle(const emb::deduplicator::result& r, std::span<const std::uint64_t> keys) {
  const naive_dedup expected(keys);
  BOOST_TEST(std::vector<std::uint64_t>(r.unique.begin(), r.unique.end()) == expected.unique,
             boost::test_tools::per_element());
  BOOST_TEST(std::vector<std::uint32_t>(r.inverse.begin(), r.inverse.end()) == expected.inverse,
             boost::test_tools::per_element());
  BOOST_TEST(std::vector<std::uint32_t>(r.counts.begin(), r.counts.end()) == expected.counts,
             boost::test_tools::per_element());
}

struct batch_case {
  std::size_t keys;
  std::uint64_t range;  ///< keys drawn uniformly from [0, range) times stride
  std::uint64_t stride;
};
std::ostream& operator<<(std::ostream& os, const batch_case& c) {
  return os << c.keys << " keys in [0, " << c.range << ") x " << c.stride;
}

std::vector<std::uint64_t> draw(const batch_case& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> keys(c.keys);
  for (auto& k : keys) k = (c.range == 0 ? rng() : rng() % c.range) * c.stride;
  return keys;
}

const batch_case cases[] = {
    {0, 10, 1},                  // empty batch
    {1, 10, 1},                  // one key
    {1000, 1, 1},                // one distinct key (0) a thousand times
    {1000, 10, 1},               // heavy duplication
    {5000, 3000, 1},             // some duplication, the table grows inside the run
    {5000, 0, 1},                // all distinct, full 64-bit keys
    {20000, 100000, 1},          // sequential small ids
    {20000, 20000, 1ull << 32},  // strided keys: low 32 bits all zero
    {20000, 20000, 1ull << 44},  // high bits only
};

}  // namespace

BOOST_DATA_TEST_CASE(unique_inverse_and_counts_match_a_map_in_first_seen_order, boost::unit_test::data::make(cases),
                     c) {
  const std::vector<std::uint64_t> keys = draw(c, 11);
  emb::deduplicator dedup;
  const auto& r = dedup.run(keys);
  check_against_oracle(r, keys);
  for (std::size_t i = 0; i < keys.size(); ++i) BOOST_TEST_REQUIRE(r.unique[r.inverse[i]] == keys[i]);
  if (!keys.empty()) BOOST_TEST(r.inverse[0] == 0u);
}

BOOST_AUTO_TEST_CASE(zero_and_all_ones_keys_are_ordinary_keys) {
  const std::vector<std::uint64_t> keys = {0, ~std::uint64_t{0}, 0, 5, ~std::uint64_t{0}, 0};
  emb::deduplicator dedup;
  const auto& r = dedup.run(keys);
  BOOST_TEST(std::vector<std::uint64_t>(r.unique.begin(), r.unique.end()) ==
                 (std::vector<std::uint64_t>{0, ~std::uint64_t{0}, 5}),
             boost::test_tools::per_element());
  BOOST_TEST(
      std::vector<std::uint32_t>(r.inverse.begin(), r.inverse.end()) == (std::vector<std::uint32_t>{0, 1, 0, 2, 1, 0}),
      boost::test_tools::per_element());
  BOOST_TEST(std::vector<std::uint32_t>(r.counts.begin(), r.counts.end()) == (std::vector<std::uint32_t>{3, 2, 1}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(each_run_forgets_the_batches_before) {
  // A batch after others (the table holds their slots, some of the same keys) gives what a
  // fresh deduplicator gives.
  emb::deduplicator reused;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<std::uint64_t> keys = draw({seed * 300, 2000, 1}, seed);
    const auto& r = reused.run(keys);
    check_against_oracle(r, keys);
    emb::deduplicator fresh;
    const auto& f = fresh.run(keys);
    BOOST_TEST(std::vector<std::uint64_t>(r.unique.begin(), r.unique.end()) ==
               std::vector<std::uint64_t>(f.unique.begin(), f.unique.end()));
  }
}

BOOST_AUTO_TEST_CASE(batches_of_a_click_stream_deduplicate_exactly) {
  using stream = dsgd::data::click_stream;
  stream s({.seed = 3, .batch = 4096, .cardinality_scale = 0.01});
  emb::deduplicator dedup;
  for (int step = 0; step < 3; ++step) {
    const stream::batch& b = s.next();
    const auto& r = dedup.run(b.keys);
    check_against_oracle(r, b.keys);
    // Zipf ids repeat: far fewer unique keys than positions, and more than the 26 features.
    BOOST_TEST(r.unique.size() < b.keys.size() / 2);
    BOOST_TEST(r.unique.size() > 26u);
  }
}

BOOST_AUTO_TEST_CASE(no_buffer_moves_once_a_batch_as_large_was_seen) {
  emb::deduplicator dedup;
  const std::vector<std::uint64_t> largest = draw({50000, 30000, 1}, 5);
  const auto& first = dedup.run(largest);
  const std::uint64_t* unique = first.unique.data();
  const std::uint32_t* inverse = first.inverse.data();
  const std::uint32_t* counts = first.counts.data();
  const std::size_t table = dedup.table_size();
  BOOST_TEST(table >= 2 * first.unique.size());
  for (std::uint64_t seed = 6; seed < 16; ++seed) {
    const std::vector<std::uint64_t> keys = draw({50000 - seed * 1000, 30000, 1}, seed);
    const auto& r = dedup.run(keys);
    BOOST_TEST(r.unique.data() == unique);
    BOOST_TEST(r.inverse.data() == inverse);
    BOOST_TEST(r.counts.data() == counts);
    BOOST_TEST(dedup.table_size() == table);
  }
}

BOOST_AUTO_TEST_CASE(reserve_makes_the_first_batch_allocation_free) {
  emb::deduplicator dedup;
  dedup.reserve(10000, 4000);
  const std::size_t table = dedup.table_size();
  BOOST_TEST(table >= 8000u);
  const std::vector<std::uint64_t> keys = draw({10000, 0, 1}, 9);  // all distinct: more than reserved
  const std::vector<std::uint64_t> fits(keys.begin(), keys.begin() + 4000);
  const auto& r = dedup.run(fits);
  BOOST_TEST(r.unique.size() == 4000u);
  BOOST_TEST(dedup.table_size() == table);
  // Past the reservation the table grows inside the run, and the result is still exact.
  check_against_oracle(dedup.run(keys), keys);
  BOOST_TEST(dedup.table_size() > table);
  BOOST_TEST(dedup.last().unique.size() == 10000u);
  // A reservation of keys alone still sets up the table the first run needs.
  emb::deduplicator small;
  small.reserve(100, 0);
  BOOST_TEST(small.table_size() == 1024u);
  small.run(std::vector<std::uint64_t>(100, 7));
  BOOST_TEST(small.table_size() == 1024u);
}

BOOST_AUTO_TEST_SUITE_END()
