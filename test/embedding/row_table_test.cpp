// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/embedding/row_table.hpp>: a table against a std::map oracle under random
// lookups, updates, erases and reads; evaluation lookups creating nothing; the record of changed
// rows and tombstones since a mark; bad input named; a restored (reassigned) table evicting as
// the original; and memory: bytes_used() measured, and flat (table and process RSS) under a
// stream with ten times more distinct keys than the cap.
#include <dsgd/embedding/row_table.hpp>

#include <support/error_checks.hpp>

#include <support/resident_memory.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

BOOST_AUTO_TEST_SUITE(embedding_row_table_test)

namespace {

namespace emb = dsgd::embedding;

std::vector<float> floats(std::span<const float> s) { return {s.begin(), s.end()}; }

std::vector<float> initial(const emb::initializer::uniform& init, std::uint64_t key, std::size_t dim,
                           const std::vector<float>& state) {
  std::vector<float> row(dim);
  init(key, row);
  row.insert(row.end(), state.begin(), state.end());
  return row;
}

using dsgd::test::resident_bytes;
using dsgd::test::under_sanitizer;

}  // namespace

BOOST_AUTO_TEST_CASE(a_table_matches_a_map_of_rows_under_random_operations) {
  constexpr std::size_t dim = 5;
  const std::vector<float> state0{0.1f, -2.f};
  const emb::initializer::uniform init{.low = -1, .high = 1, .seed = 21};
  emb::row_table table({.name = "oracle", .dim = dim, .state_floats = 2, .initial_state = state0}, init);
  std::map<std::uint64_t, std::vector<float>> oracle;  // weights then state
  std::mt19937_64 rng(8);
  std::geometric_distribution<std::uint64_t> skewed(0.01);
  std::uniform_int_distribution<int> op(0, 9);
  std::uint64_t created = 0, erased = 0;
  for (std::uint64_t i = 0; i < 20000; ++i) {
    const std::uint64_t key = skewed(rng) * 0x9e3779b97f4a7c15ull, step = i / 10;
    switch (const int o = op(rng); o) {
      case 0: {  // erase
        const bool had = oracle.erase(key) == 1;
        BOOST_TEST_REQUIRE(table.erase(key) == had);
        erased += had;
        break;
      }
      case 1:
      case 2: {  // evaluation read
        std::vector<float> out(dim);
        const bool had = table.read(key, out);
        BOOST_TEST_REQUIRE(had == (oracle.count(key) == 1));
        const std::vector<float> want = had ? oracle[key] : initial(init, key, dim, state0);
        BOOST_TEST_REQUIRE(out == std::vector<float>(want.begin(), want.begin() + dim),
                           boost::test_tools::per_element());
        break;
      }
      default: {  // training lookup, and an update of the row (sgd on w, an accumulator in state)
        const auto r = table.find_or_admit(key, step);
        const bool had = oracle.count(key) == 1;
        BOOST_TEST_REQUIRE((r.status == (had ? emb::lookup_status::found : emb::lookup_status::created)));
        if (!had) {
          oracle[key] = initial(init, key, dim, state0);
          ++created;
        }
        BOOST_TEST_REQUIRE(r.row.key() == key);
        BOOST_TEST_REQUIRE(
            floats(r.row.weights()) == std::vector<float>(oracle[key].begin(), oracle[key].begin() + dim),
            boost::test_tools::per_element());
        if (o >= 6) {
          const float g = static_cast<float>(o) * 0.01f;
          std::vector<float>& want = oracle[key];
          for (std::size_t j = 0; j < dim; ++j) {
            r.row.weights()[j] -= 0.5f * g;
            want[j] -= 0.5f * g;
          }
          r.row.state()[0] += g * g;
          want[dim] += g * g;
          table.mark_updated(r.row, step);
        }
      }
    }
  }
  BOOST_TEST(table.size() == oracle.size());
  BOOST_TEST(table.stats().admitted == created);
  BOOST_TEST(table.stats().erased == erased);
  BOOST_TEST(table.stats().rejected == 0u);
  std::size_t seen = 0;
  table.for_each([&](emb::const_row_view r, emb::row_stats) {
    std::vector<float> row = floats(r.weights());
    for (float s : r.state()) row.push_back(s);
    BOOST_TEST_REQUIRE(oracle.count(r.key()) == 1u);
    BOOST_TEST(row == oracle[r.key()], boost::test_tools::per_element());
    ++seen;
  });
  BOOST_TEST(seen == oracle.size());
  BOOST_TEST(created > 500u);
  BOOST_TEST(erased > 100u);
}

BOOST_AUTO_TEST_CASE(evaluation_lookups_never_admit_create_or_touch) {
  const emb::initializer::uniform init{.low = -1, .high = 1, .seed = 2};
  emb::row_table table({.name = "eval", .dim = 4, .max_rows = 2}, init, emb::admission::by_count({.count = 2}),
                       emb::eviction::by_age{});
  std::vector<float> out(4), want(4);
  for (int pass = 0; pass < 3; ++pass) {
    for (std::uint64_t k = 0; k < 50; ++k) {
      BOOST_TEST_REQUIRE(!table.read(k, out));
      init(k, want);
      BOOST_TEST_REQUIRE(out == want, boost::test_tools::per_element());
      BOOST_TEST_REQUIRE(!table.find(k).has_value());
      BOOST_TEST_REQUIRE(!table.contains(k));
    }
  }
  BOOST_TEST(table.size() == 0u);
  BOOST_TEST(table.admission().pending() == 0u);  // no sighting counted
  BOOST_TEST(table.stats().admitted == 0u);
  BOOST_TEST(table.stats().rejected == 0u);
  // A rejected training lookup creates nothing either: the key reads its initial row.
  BOOST_TEST((table.find_or_admit(7, 0).status == emb::lookup_status::rejected));
  BOOST_TEST(!table.read(7, out));
  init(7, want);
  BOOST_TEST(out == want, boost::test_tools::per_element());
  BOOST_TEST((table.find_or_admit(7, 1).status == emb::lookup_status::created));
  // A read of an existing row neither uses nor touches it: an evaluation cannot save it.
  (void)table.find_or_admit(8, 2);
  (void)table.find_or_admit(8, 2);
  for (int i = 0; i < 10; ++i) BOOST_TEST(table.read(7, out));
  (void)table.find_or_admit(9, 3);
  (void)table.find_or_admit(9, 3);  // at the cap: the least recently trained row, 7, goes
  BOOST_TEST(!table.contains(7));
  BOOST_TEST(table.contains(8));
}

BOOST_AUTO_TEST_CASE(changes_and_tombstones_are_recorded_since_the_mark) {
  emb::row_table table({.name = "delta", .dim = 2, .max_rows = 6, .evict_fraction = 0.1}, emb::initializer::zeros{},
                       emb::admission::always{}, emb::eviction::by_age{});
  auto changed = [&] {
    std::set<std::uint64_t> keys;
    table.for_each_changed([&](emb::const_row_view r, emb::row_stats) { keys.insert(r.key()); });
    return keys;
  };
  auto tombstones = [&] {
    std::set<std::uint64_t> keys;
    table.for_each_tombstone([&](std::uint64_t k) { keys.insert(k); });
    return keys;
  };
  for (std::uint64_t k = 1; k <= 5; ++k) (void)table.find_or_admit(k, k);
  BOOST_TEST(changed() == (std::set<std::uint64_t>{1, 2, 3, 4, 5}));
  table.mark();
  BOOST_TEST(changed().empty());
  BOOST_TEST(tombstones().empty());
  table.mark_updated(*table.find(2), 6);  // updated
  (void)table.find_or_admit(3, 6);        // looked up for training
  std::vector<float> out(2);
  table.read(4, out);   // an evaluation read is no change
  (void)table.find(5);  // nor is a find
  BOOST_TEST(table.erase(1));
  (void)table.find_or_admit(6, 7);
  (void)table.find_or_admit(7, 8);  // 6 rows
  (void)table.find_or_admit(8, 9);  // at the cap: 4 (least recently touched) goes
  BOOST_TEST(changed() == (std::set<std::uint64_t>{2, 3, 6, 7, 8}));
  BOOST_TEST(tombstones() == (std::set<std::uint64_t>{1, 4}));
  BOOST_TEST(table.tombstone_count() == 2u);
  (void)table.find_or_admit(1, 10);  // 1 is back: a changed row, no more a tombstone (5 goes)
  BOOST_TEST(tombstones() == (std::set<std::uint64_t>{4, 5}));
  BOOST_TEST(changed().count(1) == 1u);
  table.mark();
  BOOST_TEST(changed().empty());
  BOOST_TEST(tombstones().empty());
  // Without change tracking there are no tombstones to keep.
  emb::row_table quiet({.dim = 1, .track_changes = false});
  (void)quiet.find_or_admit(1, 0);
  quiet.erase(1);
  BOOST_TEST(quiet.tombstone_count() == 0u);
}

// Tombstones are bounded (table_options::max_tombstones): past the bound they are dropped and the
// change record says it is incomplete until the next mark(), so that a table nobody checkpoints
// keeps its memory flat; rows changed are still recorded.
BOOST_AUTO_TEST_CASE(tombstones_past_their_bound_leave_an_incomplete_record_until_the_mark) {
  emb::row_table table({.name = "bounded", .dim = 1, .max_tombstones = 3});
  for (std::uint64_t k = 1; k <= 6; ++k) (void)table.find_or_admit(k, k);
  table.mark();
  for (std::uint64_t k = 1; k <= 3; ++k) BOOST_TEST(table.erase(k));
  BOOST_TEST(table.tombstone_count() == 3u);
  BOOST_TEST(table.changes_complete());
  BOOST_TEST(table.erase(4));  // the fourth: past the bound
  BOOST_TEST(table.tombstone_count() == 0u);
  BOOST_TEST(!table.changes_complete());
  BOOST_TEST(table.erase(5));  // and it stays so, holding nothing
  BOOST_TEST(table.tombstone_count() == 0u);
  table.mark_updated(*table.find(6), 9);
  std::size_t changed = 0;
  table.for_each_changed([&](emb::const_row_view, emb::row_stats) { ++changed; });
  BOOST_TEST(changed == 1u);
  table.mark();
  BOOST_TEST(table.changes_complete());
  BOOST_TEST(table.erase(6));
  BOOST_TEST(table.tombstone_count() == 1u);
}

BOOST_AUTO_TEST_CASE(bad_input_is_named_and_changes_nothing) {
  emb::row_table table({.name = "users", .dim = 3, .state_floats = 2, .ps_task = 2});
  const std::vector<float> good{1, 2, 3};
  table.assign(10, good);
  const float nan = std::numeric_limits<float>::quiet_NaN();

  std::string msg = dsgd::test::error_of(
      [&] {
        table.assign(10, std::vector<float>{1, nan, 3});
      },
      dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "embedding table 'users' on ps task 2, key 10"));
  BOOST_TEST(dsgd::test::contains(msg, "weight 1 is not finite"));
  std::vector<float> out(3);
  table.read(10, out);
  BOOST_TEST(out == good, boost::test_tools::per_element());

  msg = dsgd::test::error_of(
      [&] {
        table.assign(11, good, std::vector<float>{0, std::numeric_limits<float>::infinity()});
      },
      dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "key 11: assign: state float 1 is not finite"));
  BOOST_TEST(!table.contains(11));

  msg = dsgd::test::error_of([&] { table.assign(12, std::vector<float>{1, 2}); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(
      dsgd::test::contains(msg, "embedding table 'users' on ps task 2, key 12: assign: the weights has 2 floats"));
  BOOST_TEST(dsgd::test::contains(msg, "dim is 3"));
  BOOST_TEST(!table.contains(12));
  msg = dsgd::test::error_of([&] { table.assign(12, good, std::vector<float>{1}); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(dsgd::test::contains(msg, "state_floats is 2"));

  std::vector<float> wide(4);
  msg = dsgd::test::error_of([&] { table.read(10, wide); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(dsgd::test::contains(msg, "key 10: read: the output row has 4 floats"));
  dsgd::test::error_of([&] { table.initial_row(10, wide); }, dsgd::errc::shape_mismatch);

  // An update that leaves a NaN in the row is named by key and column.
  const emb::row_view row = *table.find(10);
  row.state()[1] = nan;
  msg = dsgd::test::error_of([&] { table.mark_updated(row, 4); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "key 10: an update at step 4 left a non-finite value in state float 1"));
  row.state()[1] = 0;
  row.weights()[0] = -std::numeric_limits<float>::infinity();
  msg = dsgd::test::error_of([&] { table.mark_updated(row, 4); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "in weight 0"));
  row.weights()[0] = 1;
  table.mark_updated(row, 4);

  // A view of a row erased since: refused.
  table.erase(10);
  msg = dsgd::test::error_of([&] { table.mark_updated(row, 5); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "key 10: a view of a row that was evicted or erased"));

  // Options.
  msg = dsgd::test::error_of([] { emb::row_table t({.dim = 0}); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "embedding::table_options.dim"));
  msg = dsgd::test::error_of([] { emb::row_table t({.dim = 2, .state_floats = 2, .initial_state = {1}}); },
                             dsgd::errc::invalid_argument);
  BOOST_TEST(
      dsgd::test::contains(msg, "table_options.initial_state: must be empty or hold state_floats (2) values, not 1"));
  dsgd::test::error_of([] { emb::row_table t({.dim = 2, .evict_fraction = 0}); }, dsgd::errc::invalid_argument);
  dsgd::test::error_of([] { emb::row_table t({.dim = 2, .max_load_factor = 1}); }, dsgd::errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(a_reassigned_table_has_the_same_rows_and_evicts_the_same_keys) {
  // A restore puts rows back in another order (into other slots and buckets); what is evicted
  // next must not depend on that.
  const emb::table_options options{
      .name = "restore", .dim = 3, .state_floats = 1, .max_rows = 30, .evict_fraction = 0.1};
  const emb::initializer::uniform init{.seed = 4};
  emb::row_table a(options, init, emb::admission::always{}, emb::eviction::least_frequent{});
  std::mt19937_64 rng(3);
  std::geometric_distribution<std::uint64_t> skewed(0.03);
  for (std::uint64_t i = 0; i < 3000; ++i) (void)a.find_or_admit(skewed(rng), i / 5);
  struct saved {
    std::uint64_t key;
    std::vector<float> weights, state;
    emb::row_stats stats;
  };
  std::vector<saved> rows;
  a.for_each([&](emb::const_row_view r, emb::row_stats s) {
    rows.push_back({r.key(), floats(r.weights()), floats(r.state()), s});
  });
  std::reverse(rows.begin(), rows.end());
  emb::row_table b(options, init, emb::admission::always{}, emb::eviction::least_frequent{});
  for (const saved& r : rows) b.assign(r.key, r.weights, r.state, r.stats);
  BOOST_TEST(b.size() == a.size());
  for (std::uint64_t i = 3000; i < 6000; ++i) {
    const std::uint64_t key = skewed(rng), step = i / 5;
    BOOST_TEST_REQUIRE((a.find_or_admit(key, step).status == b.find_or_admit(key, step).status));
  }
  std::map<std::uint64_t, std::vector<float>> in_a, in_b;
  a.for_each([&](emb::const_row_view r, emb::row_stats s) {
    in_a[r.key()] = floats(r.weights()), in_a[r.key()].push_back(float(s.uses));
  });
  b.for_each([&](emb::const_row_view r, emb::row_stats s) {
    in_b[r.key()] = floats(r.weights()), in_b[r.key()].push_back(float(s.uses));
  });
  BOOST_TEST((in_a == in_b));
  BOOST_TEST(a.stats().evicted > 100u);
}

BOOST_AUTO_TEST_CASE(a_batch_update_equals_updates_one_key_at_a_time) {
  const emb::table_options options{.name = "batch", .dim = 4, .state_floats = 1};
  emb::row_table one(options, emb::initializer::uniform{.seed = 3});
  emb::row_table many(options, emb::initializer::uniform{.seed = 3});
  for (std::uint64_t k = 0; k < 1000; k += 2) {  // odd keys have no row
    (void)one.find_or_admit(k, 0);
    (void)many.find_or_admit(k, 0);
  }
  std::mt19937_64 rng(1);
  std::vector<std::uint64_t> keys(777);
  for (auto& k : keys) k = rng() % 1200;
  const auto step_of = [](std::size_t i) { return static_cast<float>(i % 7) * 0.125f; };
  std::size_t had = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (auto r = one.find(keys[i])) {
      for (float& w : r->weights()) w -= step_of(i);
      r->state()[0] += 1;
      one.mark_updated(*r, 5);
      ++had;
    }
  }
  std::vector<std::size_t> called;
  const std::size_t found = many.update_batch(keys, 5, [&](std::size_t i, const emb::row_view& r) {
    BOOST_TEST_REQUIRE(r.key() == keys[i]);
    for (float& w : r.weights()) w -= step_of(i);
    r.state()[0] += 1;
    called.push_back(i);
  });
  BOOST_TEST(found == had);
  BOOST_TEST(called.size() == had);
  BOOST_TEST(std::is_sorted(called.begin(), called.end()));  // in the keys' order
  one.for_each([&](emb::const_row_view r, emb::row_stats s) {
    const auto other = many.find(r.key());
    BOOST_TEST_REQUIRE(other.has_value());
    BOOST_TEST(floats(r.weights()) == floats(other->weights()), boost::test_tools::per_element());
    BOOST_TEST(floats(r.state()) == floats(other->state()), boost::test_tools::per_element());
    BOOST_TEST(s.last_step == (r.state()[0] > 0 ? 5u : 0u));
  });
  // A NaN left by the update is named as by mark_updated.
  const std::string msg = dsgd::test::error_of(
      [&] {
        many.update_batch(std::vector<std::uint64_t>{2, 4}, 6, [](std::size_t i, const emb::row_view& r) {
          if (i == 1) r.weights()[2] = std::numeric_limits<float>::quiet_NaN();
        });
      },
      dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "key 4: an update at step 6 left a non-finite value in weight 2"));
}

BOOST_AUTO_TEST_CASE(views_survive_a_move_and_other_rows_coming_and_going) {
  emb::row_table table({.name = "views", .dim = 2});
  const emb::row_view first = table.find_or_admit(1, 0).row;
  first.weights()[0] = 42;
  for (std::uint64_t k = 2; k < 100000; ++k) (void)table.find_or_admit(k, 0);  // many blocks
  for (std::uint64_t k = 2; k < 50000; ++k) table.erase(k);
  emb::row_table moved(std::move(table));
  BOOST_TEST(first.weights()[0] == 42.f);
  first.weights()[1] = 7;
  moved.mark_updated(first, 1);
  BOOST_TEST(moved.find(1)->weights()[1] == 7.f);
  BOOST_TEST(moved.size() == 50001u);
}

BOOST_AUTO_TEST_CASE(bytes_used_counts_the_rows_memory) {
  emb::row_table table({.name = "bytes", .dim = 16, .track_changes = false});
  const std::size_t empty = table.bytes_used();
  BOOST_TEST(empty >= sizeof(table));
  for (std::uint64_t k = 0; k < 100000; ++k) (void)table.find_or_admit(k, 0);
  const double per_row = double(table.bytes_used() - empty) / 100000;
  BOOST_TEST_MESSAGE("bytes per row, dim 16, uncapped: " << per_row << " (raw " << table.raw_row_bytes() << ")");
  // At least the arena (64) + metadata (24) + a bucket (24 / load): never below the raw row.
  BOOST_TEST(per_row >= 64 + 24 + 24);
  BOOST_TEST(per_row <= 3.0 * double(table.raw_row_bytes()));
}

BOOST_AUTO_TEST_CASE(memory_stays_flat_under_ten_times_more_keys_than_the_cap) {
  // As a ps under an endless stream of new ids: a cap of 50,000 rows, 500,000 distinct keys (each
  // seen twice, so count admission lets them in), a mark every step as incremental checkpoints
  // would make. The cap is reached at about step 50 of 500.
  constexpr std::size_t cap = 50000, distinct = 10 * cap, per_step = 2000;
  emb::row_table table({.name = "flat", .dim = 16, .state_floats = 1, .max_rows = cap, .evict_fraction = 1.0 / 16},
                       emb::initializer::uniform{.seed = 1},
                       emb::admission::by_count({.count = 2, .max_pending = 10000}), emb::eviction::by_age{});
  std::size_t bytes_at_cap = 0, rss_at_cap = 0, bytes_late_max = 0, rss_late_max = 0, bytes_late_min = SIZE_MAX;
  std::uint64_t step = 0;
  for (std::size_t i = 0; i < 2 * distinct; ++i) {
    // Key i / 2 twice, its two sightings a few hundred lookups apart.
    const std::uint64_t key = (i % 2 == 0 ? i / 2 : (i >= 600 ? (i - 600) / 2 : i / 2)) * 0x9e3779b97f4a7c15ull + 1;
    if (auto r = table.find_or_admit(key, step)) table.mark_updated(r.row, step);
    if (i % per_step == per_step - 1) {
      ++step;
      table.mark();
      if (bytes_at_cap == 0 && table.size() + cap / 16 >= cap) {
        bytes_at_cap = table.bytes_used();
        rss_at_cap = resident_bytes();
      }
      if (i >= distinct) {
        bytes_late_max = std::max(bytes_late_max, table.bytes_used());
        bytes_late_min = std::min(bytes_late_min, table.bytes_used());
        rss_late_max = std::max(rss_late_max, resident_bytes());
      }
    }
  }
  BOOST_TEST_MESSAGE("bytes at cap " << bytes_at_cap << ", second half " << bytes_late_min << ".." << bytes_late_max
                                     << "; RSS at cap " << rss_at_cap << ", second half max " << rss_late_max);
  BOOST_TEST_REQUIRE(bytes_at_cap > 0u);
  BOOST_TEST(table.stats().evicted > distinct / 2);
  BOOST_TEST(table.size() <= cap);
  BOOST_TEST(bytes_late_max <= bytes_at_cap * 11 / 10);
  BOOST_TEST(bytes_late_max - bytes_late_min <= bytes_at_cap / 20);  // flat: only tombstones per step vary
  // The process's resident memory too (where /proc says, and not under a sanitizer, whose
  // quarantine keeps freed blocks resident on purpose).
  if (rss_at_cap != 0 && !under_sanitizer) BOOST_TEST(rss_late_max <= rss_at_cap * 11 / 10);
}

BOOST_AUTO_TEST_SUITE_END()
