// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/checkpoint/table_file.hpp> and the table files' part in <dsgd/checkpoint/saver.hpp>
// and <dsgd/checkpoint/incremental.hpp>: table files round trip bit for bit; every flipped bit and
// every truncation is a named error; the chief's commit names table files and what a delta builds
// on, and refuses a delta whose base is not committed; retention keeps a kept delta's chain; the
// chain of base + deltas merges as a hand-made model of the table says; a delta left half-written
// (no manifest, a half-written one) is not a checkpoint; exports read back.
#include <dsgd/checkpoint/incremental.hpp>
#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/checkpoint/table_export.hpp>
#include <dsgd/checkpoint/table_file.hpp>
#include <dsgd/placement/round_robin.hpp>

#include <support/error_checks.hpp>
#include <support/temp_dir.hpp>

#include <boost/test/unit_test.hpp>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(table_file_test)

namespace fs = std::filesystem;
namespace ck = dsgd::checkpoint;
namespace emb = dsgd::embedding;
using dsgd::test::contains;
using dsgd::test::slurp;
using dsgd::test::throws_named;

namespace {

struct temp_dir : dsgd::test::temp_dir {
  temp_dir() : dsgd::test::temp_dir("dsgd_table_file_test_") {}
};

emb::table_spec spec_of(std::string name, std::uint32_t dim = 3) {
  return {.name = std::move(name),
          .dim = dim,
          .rule = emb::table_rule::async(),
          .optimizer = emb::row_optimizer_spec::adagrad(0.5f, 0.1f),
          .initializer = emb::initializer_spec::uniform(-0.1f, 0.1f, 7),
          .max_rows = 1000,
          .evict_fraction = 0.125};
}

// A table's rows by key as a model: weights then state, and stats.
struct model_row {
  std::vector<float> values;
  emb::row_stats stats;
};
using model = std::map<std::uint64_t, model_row>;

// Distinct values per key and version, some with awkward bits (denormals, negative zero).
model_row row_for(std::uint64_t key, int version, std::size_t width) {
  model_row r;
  for (std::size_t c = 0; c < width; ++c)
    r.values.push_back(c == 1 && key % 5 == 0 ? -0.f
                       : c == 2 && key % 7 == 0
                           ? std::bit_cast<float>(std::uint32_t{1} + static_cast<std::uint32_t>(key))
                           : static_cast<float>(key) * 0.001f + static_cast<float>(version) +
                                 static_cast<float>(c) / 8);
  r.stats = {static_cast<std::uint64_t>(10 * version) + key % 3, static_cast<std::uint32_t>(version + 1)};
  return r;
}

// The part of table @p id of @p rows (those of @p keep), with tombstones @p tombstones.
ck::table_part part_of(std::uint32_t id, const emb::table_spec& spec, const model& rows,
                       const std::function<bool(std::uint64_t)>& keep, std::vector<std::uint64_t> tombstones = {},
                       ck::table_counters counters = {}) {
  ck::table_part p;
  p.id = id;
  p.spec = spec;
  p.dim = spec.dim;
  p.state_floats = ck::detail::state_floats_of(spec);
  p.counters = std::move(counters);
  for (const auto& [k, r] : rows) {
    if (!keep(k)) continue;
    p.keys.push_back(k);
    p.stats.push_back(r.stats);
    p.values.insert(p.values.end(), r.values.begin(), r.values.end());
  }
  for (auto k : tombstones)
    if (keep(k)) p.tombstones.push_back(k);
  return p;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return false;
  return true;
}

// Checks merged table @p t against @p m, bit for bit.
void check_merged(const ck::merged_table& t, const model& m) {
  BOOST_TEST_REQUIRE(t.rows() == m.size());
  std::size_t i = 0;
  for (const auto& [k, r] : m) {
    BOOST_TEST(t.keys[i] == k);
    BOOST_TEST(t.stats[i].last_step == r.stats.last_step);
    BOOST_TEST(t.stats[i].uses == r.stats.uses);
    BOOST_TEST(same_bits(t.row(i), r.values), "key " << k);
    ++i;
  }
}

// Writes checkpoint @p step with @p n ps tasks: its data files (a dense variable "b" on ps 0),
// table files of @p kind holding @p parts(i) for ps task i, and commits it.
void write_checkpoint(const ck::saver& saver, std::uint64_t step, std::size_t n, ck::table_file_kind kind,
                      std::uint64_t delta_of, const std::function<std::vector<ck::table_part>(std::size_t)>& parts,
                      bool commit = true) {
  const auto plan = dsgd::placement::round_robin{}.place({{"b", {1}}}, n);
  const std::vector<float> b{static_cast<float>(step)};
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<ck::shard_data> shards;
    if (i == 0) shards.push_back({"b", {1}, 0, b});
    saver.write_shard_file(step, i, n, shards);
    ck::table_file f{{kind, i, n, step, delta_of, 0}, parts(i)};
    f.info.tables = f.tables.size();
    ck::write_table_file(saver.directory(), f);
  }
  if (commit) saver.commit(step, plan);
}

bool on_task(std::uint64_t key, std::size_t i, std::size_t n) {
  return dsgd::placement::hash_keys::task_of(key, n) == i;
}

}  // namespace

// A full and a delta table file read back as written, bit for bit (values, stats, counters,
// spec, tombstones), and verify_table_file() names the whole file's size and CRC.
BOOST_AUTO_TEST_CASE(a_table_file_round_trips_bit_for_bit) {
  temp_dir dir;
  const auto spec = spec_of("user_id");
  const auto width = spec.dim + ck::detail::state_floats_of(spec);
  model m;
  for (std::uint64_t k = 1; k < 60; k += 3) m[k * 1'000'003] = row_for(k, 2, width);
  const ck::table_counters counters{
      .step = 0, .updates = 123, .dropped_keys = 4, .dropped_pushes = 5, .clocks = {7, 9}};
  auto all = [](std::uint64_t) { return true; };
  for (auto kind : {ck::table_file_kind::full, ck::table_file_kind::delta}) {
    const bool delta = kind == ck::table_file_kind::delta;
    ck::table_file f{{kind, 1, 2, 40, delta ? 30u : 0u, 2},
                     {part_of(0, spec, m, all,
                              delta ? std::vector<std::uint64_t>{5, 8, 99} : std::vector<std::uint64_t>{}, counters),
                      part_of(5, spec_of("item_id", 2), {}, all)}};
    auto [bytes, crc] = ck::write_table_file(dir.path, f);
    const auto file = dir.path / "ckpt-40.tables.ps-1-of-2";
    const auto text = slurp(file);
    BOOST_TEST(bytes == text.size());
    BOOST_TEST(crc == dsgd::detail::crc32c(dsgd::detail::as_bytes(text)));
    auto v = ck::verify_table_file(file);
    BOOST_TEST(v.bytes == bytes);
    BOOST_TEST(v.crc32c == crc);
    BOOST_TEST((v.info.kind == kind));
    BOOST_TEST(v.info.delta_of == (delta ? 30u : 0u));

    auto back = ck::parse_table_file(dsgd::detail::as_bytes(text), "x");
    BOOST_TEST_REQUIRE(back.tables.size() == 2u);
    const auto& t = back.tables[0];
    BOOST_TEST(t.id == 0u);
    BOOST_TEST((t.spec == spec));  // a later create_table with this spec is nothing new
    BOOST_TEST((t.counters == counters));
    BOOST_TEST(t.keys == f.tables[0].keys);
    BOOST_TEST(t.tombstones == f.tables[0].tombstones);
    BOOST_TEST(same_bits(t.values, f.tables[0].values));
    for (std::size_t i = 0; i < t.rows(); ++i) {
      BOOST_TEST(t.stats[i].last_step == f.tables[0].stats[i].last_step);
      BOOST_TEST(t.stats[i].uses == f.tables[0].stats[i].uses);
    }
    BOOST_TEST(back.tables[1].spec.name == "item_id");
    BOOST_TEST(back.tables[1].rows() == 0u);
  }
}

// Every flipped bit of a small table file and every truncation is detected, as
// errc::checkpoint_corrupt naming the file.
BOOST_AUTO_TEST_CASE(every_flipped_bit_and_truncation_of_a_table_file_is_a_named_error) {
  temp_dir dir;
  const auto spec = spec_of("ids", 2);
  model m;
  const auto width = spec.dim + ck::detail::state_floats_of(spec);
  for (std::uint64_t k = 1; k <= 3; ++k) m[k] = row_for(k, 1, width);
  ck::table_file f{{ck::table_file_kind::delta, 0, 1, 9, 4, 1},
                   {part_of(2, spec, m, [](auto) { return true; }, {77}, {.step = 3, .updates = 4})}};
  ck::write_table_file(dir.path, f);
  const auto good = slurp(dir.path / "ckpt-9.tables.ps-0-of-1");
  std::size_t undetected = 0;
  for (std::size_t byte = 0; byte < good.size(); ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      auto bad = good;
      bad[byte] = static_cast<char>(bad[byte] ^ (1 << bit));
      try {
        ck::parse_table_file(dsgd::detail::as_bytes(bad), "ckpt-9.tables.ps-0-of-1");
        ++undetected;
      } catch (const dsgd::error& e) {
        if (e.code() != dsgd::errc::checkpoint_corrupt || !contains(e.what(), "ckpt-9.tables.ps-0-of-1")) ++undetected;
      }
    }
  BOOST_TEST(undetected == 0u);
  for (std::size_t n = 0; n < good.size(); ++n)
    BOOST_TEST(throws_named([&] { ck::parse_table_file(dsgd::detail::as_bytes(good.substr(0, n)), "t"); },
                            dsgd::errc::checkpoint_corrupt, {"t: "}),
               "truncated at " << n);
  // verify_table_file() (the chief's commit) finds a truncation too.
  {
    std::ofstream out(dir.path / "ckpt-9.tables.ps-0-of-1", std::ios::binary | std::ios::trunc);
    out << good.substr(0, good.size() - 3);
  }
  BOOST_TEST(throws_named([&] { ck::verify_table_file(dir.path / "ckpt-9.tables.ps-0-of-1"); },
                          dsgd::errc::checkpoint_corrupt, {"ckpt-9.tables.ps-0-of-1"}));
}

// What parse checks beyond checksums: a NaN row, keys out of order, a key both a row and a
// tombstone, are refused by the writer or named by the reader (rewritten with good checksums).
BOOST_AUTO_TEST_CASE(bad_contents_are_refused_by_the_writer_and_named_by_the_reader) {
  temp_dir dir;
  const auto spec = spec_of("ids", 2);
  const auto width = spec.dim + ck::detail::state_floats_of(spec);
  model m;
  m[10] = row_for(10, 1, width);
  m[20] = row_for(20, 1, width);
  auto p = part_of(1, spec, m, [](auto) { return true; });
  std::swap(p.keys[0], p.keys[1]);
  BOOST_TEST(throws_named(
      [&] {
        ck::write_table_file(dir.path, {{ck::table_file_kind::full, 0, 1, 3, 0, 1}, {p}});
      },
      dsgd::errc::invalid_argument, {"table 1 ('ids')", "ascending"}));
  std::swap(p.keys[0], p.keys[1]);
  p.values[3] = std::nanf("");
  ck::write_table_file(dir.path, {{ck::table_file_kind::full, 0, 1, 3, 0, 1}, {p}});
  BOOST_TEST(throws_named(
      [&] { ck::parse_table_file(dsgd::detail::as_bytes(slurp(dir.path / "ckpt-3.tables.ps-0-of-1")), "f"); },
      dsgd::errc::checkpoint_corrupt, {"f: ", "table 1 ('ids')", "key 10", "state float 1 is not finite"}));
  p.values[3] = 1.f;
  p.tombstones = {20};
  ck::write_table_file(dir.path, {{ck::table_file_kind::delta, 0, 1, 3, 1, 1}, {p}});
  BOOST_TEST(throws_named(
      [&] { ck::parse_table_file(dsgd::detail::as_bytes(slurp(dir.path / "ckpt-3.tables.ps-0-of-1")), "f"); },
      dsgd::errc::checkpoint_corrupt, {"key 20 is both a row and a tombstone"}));
}

// The chain: a full base written by 2 ps tasks, a delta by 3 (after a restore onto 3), another
// by 3. read_tables() equals the model at the last, with every ps task's keys (its filter keeps
// those of one new ps task only); the manifest names the table files and what the deltas build on.
BOOST_AUTO_TEST_CASE(base_and_deltas_merge_as_the_model_says_whatever_wrote_them) {
  temp_dir dir;
  ck::saver saver(dir.path, 0);
  const auto spec = spec_of("ids");
  const auto width = spec.dim + ck::detail::state_floats_of(spec);
  model m;
  for (std::uint64_t k = 0; k < 40; ++k) m[k * 7919] = row_for(k * 7919, 1, width);
  write_checkpoint(saver, 10, 2, ck::table_file_kind::full, 0, [&](std::size_t i) {
    return std::vector{part_of(0, spec, m, [&](auto k) { return on_task(k, i, 2); }, {}, {.updates = 10 + i})};
  });
  // Delta 1: some rows change, some keys go (tombstones), some are new.
  model changed;
  std::vector<std::uint64_t> gone;
  for (std::uint64_t k = 0; k < 50; k += 3) changed[k * 7919] = row_for(k * 7919, 2, width);
  for (std::uint64_t k = 1; k < 40; k += 4)
    if (k % 3 != 0) gone.push_back(k * 7919);
  for (const auto& [k, r] : changed) m[k] = r;
  for (auto k : gone) m.erase(k);
  const model at20 = m;
  write_checkpoint(saver, 20, 3, ck::table_file_kind::delta, 10, [&](std::size_t i) {
    return std::vector{part_of(0, spec, changed, [&](auto k) { return on_task(k, i, 3); }, gone, {.updates = 20 + i})};
  });
  // Delta 2: a key gone in delta 1 comes back; another table appears.
  model again{{5 * 7919, row_for(5 * 7919, 3, width)}, {6 * 7919, row_for(6 * 7919, 3, width)}};
  std::vector<std::uint64_t> gone2{0};
  for (const auto& [k, r] : again) m[k] = r;
  m.erase(0);
  const auto spec2 = spec_of("other", 2);
  model other{{1, row_for(1, 1, spec2.dim + ck::detail::state_floats_of(spec2))}};
  write_checkpoint(saver, 30, 3, ck::table_file_kind::delta, 20, [&](std::size_t i) {
    return std::vector{part_of(0, spec, again, [&](auto k) { return on_task(k, i, 3); }, gone2, {.updates = 30 + i}),
                       part_of(1, spec2, other, [&](auto k) { return on_task(k, i, 3); })};
  });
  const auto manifest = slurp(dir.path / "ckpt-30.manifest");
  BOOST_TEST(contains(manifest, "\ntables_delta_of 20\ntable_file ckpt-30.tables.ps-0-of-3 "), manifest);
  BOOST_TEST(!contains(slurp(dir.path / "ckpt-10.manifest"), "tables_delta_of"));
  BOOST_TEST((saver.open(30).tables_delta_of() == std::optional<std::uint64_t>(20)));
  BOOST_TEST(saver.open(30).has_tables());

  auto chain = ck::table_chain(dir.path, 30);
  BOOST_TEST_REQUIRE(chain.size() == 3u);
  BOOST_TEST(chain[0].step == 10u);
  BOOST_TEST(!chain[0].delta_of.has_value());
  BOOST_TEST(chain[2].files.size() == 3u);

  auto tables = ck::read_tables(dir.path, 30);
  BOOST_TEST_REQUIRE(tables.size() == 2u);
  check_merged(tables[0], m);
  check_merged(tables[1], other);
  BOOST_TEST(tables[0].counters_step == 30u);
  BOOST_TEST(tables[0].counters_for(2, 3).updates == 32u);  // its own: same ps count
  BOOST_TEST(tables[0].counters_for(0, 2).updates == 32u);  // another count: the largest
  // The earlier checkpoints still read as they were.
  check_merged(ck::read_tables(dir.path, 20).at(0), at20);
  // One ps task of four keeps its keys only.
  model mine;
  for (const auto& [k, r] : m)
    if (on_task(k, 1, 4)) mine[k] = r;
  check_merged(ck::read_tables(dir.path, 30, [](std::uint64_t k) { return on_task(k, 1, 4); })[0], mine);
}

// The chief's commit: every ps task's table file or none; a delta's base must be committed; a
// kept delta keeps its chain through retention; deleting a base makes its deltas a named error.
BOOST_AUTO_TEST_CASE(commit_and_retention_of_table_files) {
  temp_dir dir;
  ck::saver saver(dir.path, /*keep=*/2);
  const auto spec = spec_of("ids");
  const auto width = spec.dim + ck::detail::state_floats_of(spec);
  model m{{1, row_for(1, 1, width)}, {2, row_for(2, 1, width)}};
  auto parts = [&](std::size_t n) {
    return [&, n](std::size_t i) { return std::vector{part_of(0, spec, m, [&](auto k) { return on_task(k, i, n); })}; };
  };
  const auto plan = dsgd::placement::round_robin{}.place({{"b", {1}}}, 2);
  // One ps task's table file missing.
  write_checkpoint(saver, 5, 2, ck::table_file_kind::full, 0, parts(2), false);
  fs::remove(dir.path / "ckpt-5.tables.ps-1-of-2");
  BOOST_TEST(throws_named([&] { saver.commit(5, plan); }, dsgd::errc::checkpoint_corrupt,
                          {"ckpt-5.tables.ps-1-of-2: missing", "ps task 1"}));
  // A delta of an uncommitted checkpoint.
  write_checkpoint(saver, 6, 2, ck::table_file_kind::delta, 5, parts(2), false);
  BOOST_TEST(throws_named([&] { saver.commit(6, plan); }, dsgd::errc::checkpoint_corrupt,
                          {"checkpoint 6", "delta of checkpoint 5", "not committed"}));
  BOOST_TEST(!saver.latest().has_value());

  write_checkpoint(saver, 10, 2, ck::table_file_kind::full, 0, parts(2));
  for (std::uint64_t s : {20, 30, 40}) write_checkpoint(saver, s, 2, ck::table_file_kind::delta, s - 10, parts(2));
  // keep 2: 30 and 40 are kept, and so are 20 and 10, which they build on.
  BOOST_TEST((saver.steps() == std::vector<std::uint64_t>{10, 20, 30, 40}));
  BOOST_TEST(fs::exists(dir.path / "ckpt-10.tables.ps-1-of-2"));
  write_checkpoint(saver, 50, 2, ck::table_file_kind::full, 0, parts(2));
  write_checkpoint(saver, 60, 2, ck::table_file_kind::delta, 50, parts(2));
  // Now 50 and 60 are kept; the chain 10..40 is gone, files and all.
  BOOST_TEST((saver.steps() == std::vector<std::uint64_t>{50, 60}));
  BOOST_TEST(!fs::exists(dir.path / "ckpt-10.tables.ps-1-of-2"));
  BOOST_TEST(!fs::exists(dir.path / "ckpt-40.tables.ps-0-of-2"));
  check_merged(ck::read_tables(dir.path, 60)[0], m);
  // A delta whose base's manifest is gone (removed by hand) is a named error.
  fs::remove(dir.path / "ckpt-50.manifest");
  BOOST_TEST(throws_named([&] { ck::read_tables(dir.path, 60); }, dsgd::errc::checkpoint_corrupt,
                          {"ckpt-60.manifest", "delta of checkpoint 50", "no manifest"}));
  BOOST_TEST(throws_named([&] { ck::read_tables(dir.path, 61); }, dsgd::errc::not_found, {"ckpt-61.manifest"}));
}

// A delta whose write was interrupted: its table files written (one of them half), its manifest
// only a temporary. It is not a checkpoint; the last committed one restores whole, and the next
// commit clears the debris.
BOOST_AUTO_TEST_CASE(an_interrupted_delta_is_ignored_and_everything_committed_restores) {
  temp_dir dir;
  ck::saver saver(dir.path, 0);
  const auto spec = spec_of("ids");
  const auto width = spec.dim + ck::detail::state_floats_of(spec);
  model m{{1, row_for(1, 1, width)}, {2, row_for(2, 1, width)}, {3, row_for(3, 1, width)}};
  auto parts = [&](const model& rows, std::vector<std::uint64_t> gone = {}) {
    return [&rows, gone](std::size_t i) {
      return std::vector{part_of(
          0, spec_of("ids"), rows, [&](auto k) { return on_task(k, i, 2); }, gone)};
    };
  };
  write_checkpoint(saver, 10, 2, ck::table_file_kind::full, 0, parts(m));
  model d1{{2, row_for(2, 2, width)}};
  write_checkpoint(saver, 20, 2, ck::table_file_kind::delta, 10, parts(d1, {3}));
  model at20 = m;
  at20[2] = d1[2];
  at20.erase(3);
  // The interrupted one.
  model d2{{1, row_for(1, 3, width)}, {4, row_for(4, 3, width)}};
  write_checkpoint(saver, 30, 2, ck::table_file_kind::delta, 20, parts(d2, {2}), false);
  const auto half = slurp(dir.path / "ckpt-30.tables.ps-0-of-2");
  {
    std::ofstream out(dir.path / "ckpt-30.tables.ps-0-of-2", std::ios::binary | std::ios::trunc);
    out << half.substr(0, half.size() / 2);
    std::ofstream manifest(dir.path / "ckpt-30.manifest.tmp.4242", std::ios::binary);
    manifest << "dsgd checkpoint manifest\nversion 3\nstep 30\n";
  }
  BOOST_TEST((saver.latest() == std::optional<std::uint64_t>(20)));
  BOOST_TEST((saver.steps() == std::vector<std::uint64_t>{10, 20}));
  check_merged(ck::read_tables(dir.path, 20)[0], at20);
  BOOST_TEST(throws_named([&] { ck::read_tables(dir.path, 30); }, dsgd::errc::not_found, {"ckpt-30.manifest"}));
  // Its commit now names the half-written file.
  BOOST_TEST(throws_named(
      [&] {
        saver.commit(30, dsgd::placement::round_robin{}.place({{"b", {1}}}, 2));
      },
      dsgd::errc::checkpoint_corrupt, {"ckpt-30.tables.ps-0-of-2"}));
  // A later delta of 20 commits; the interrupted one's files go at a later commit's prune... they
  // are of a step after 20 without a manifest, so only a commit past 30 removes them.
  write_checkpoint(saver, 40, 2, ck::table_file_kind::delta, 20, parts(d2, {2}));
  BOOST_TEST(!fs::exists(dir.path / "ckpt-30.tables.ps-0-of-2"));
  BOOST_TEST(!fs::exists(dir.path / "ckpt-30.manifest.tmp.4242"));
  model at40 = at20;
  for (const auto& [k, r] : d2) at40[k] = r;
  at40.erase(2);
  check_merged(ck::read_tables(dir.path, 40)[0], at40);
}

// Export: binary reads back bit for bit (weights only), text holds one line per row; a damaged
// export is a named error.
BOOST_AUTO_TEST_CASE(an_export_reads_back) {
  temp_dir dir;
  ck::saver saver(dir.path, 0);
  const auto spec = spec_of("user_id", 4);
  const auto width = spec.dim + ck::detail::state_floats_of(spec);
  model m;
  for (std::uint64_t k = 3; k < 300; k += 11) m[k] = row_for(k, 1, width);
  write_checkpoint(saver, 7, 2, ck::table_file_kind::full, 0, [&](std::size_t i) {
    return std::vector{part_of(0, spec, m, [&](auto k) { return on_task(k, i, 2); })};
  });
  const auto t = ck::read_tables(dir.path, 7).at(0);
  ck::write_export(t, 7, dir.path / "out" / "user_id.emb", ck::export_format::binary);
  ck::write_export(t, 7, dir.path / "out" / "user_id.txt", ck::export_format::text);
  auto e = ck::read_export(dir.path / "out" / "user_id.emb");
  BOOST_TEST(e.name == "user_id");
  BOOST_TEST(e.dim == 4u);
  BOOST_TEST(e.step == 7u);
  BOOST_TEST_REQUIRE(e.keys.size() == m.size());
  std::size_t i = 0;
  for (const auto& [k, r] : m) {
    BOOST_TEST(e.keys[i] == k);
    BOOST_TEST(same_bits(std::span(e.weights).subspan(i * 4, 4), std::span(r.values).first(4)));
    ++i;
  }
  // Text: strtof reads each "%.9g" back exactly (denormals and -0 too).
  std::ifstream text(dir.path / "out" / "user_id.txt");
  std::string line;
  std::size_t lines = 0;
  auto it = m.begin();
  while (std::getline(text, line)) {
    BOOST_TEST_REQUIRE((it != m.end()));
    char* p = line.data();
    BOOST_TEST(std::strtoull(p, &p, 10) == it->first);
    for (std::size_t c = 0; c < 4; ++c)
      BOOST_TEST(std::bit_cast<std::uint32_t>(std::strtof(p, &p)) == std::bit_cast<std::uint32_t>(it->second.values[c]),
                 "key " << it->first);
    BOOST_TEST(*p == '\0');
    ++it;
    ++lines;
  }
  BOOST_TEST(lines == m.size());
  auto bytes = slurp(dir.path / "out" / "user_id.emb");
  bytes[bytes.size() / 2] ^= 4;
  {
    std::ofstream out(dir.path / "bad.emb", std::ios::binary);
    out << bytes;
  }
  BOOST_TEST(throws_named([&] { ck::read_export(dir.path / "bad.emb"); }, dsgd::errc::checkpoint_corrupt,
                          {"bad.emb", "checksum mismatch"}));
}

// The chief's schedule: full first, a delta of the last commit per interval, full again after
// deltas_per_full deltas or a failure.
BOOST_AUTO_TEST_CASE(the_incremental_schedule) {
  using namespace std::chrono_literals;
  using kind = ck::incremental_schedule::kind;
  ck::incremental_schedule s({.delta_interval = 10s, .deltas_per_full = 2});
  const auto t0 = ck::incremental_schedule::clock::time_point{} + 1000s;
  BOOST_TEST((s.due(1, t0).what == kind::full));
  s.committed(1, kind::full, t0);
  BOOST_TEST((s.due(2, t0 + 5s).what == kind::none));
  BOOST_TEST((s.due(1, t0 + 15s).what == kind::none));  // the step has not moved
  auto d = s.due(2, t0 + 10s);
  BOOST_TEST((d.what == kind::delta));
  BOOST_TEST(d.tables_delta_of == 1u);
  s.committed(2, kind::delta, t0 + 10s);
  BOOST_TEST(s.due(3, t0 + 20s).tables_delta_of == 2u);
  s.committed(3, kind::delta, t0 + 20s);
  BOOST_TEST((s.due(4, t0 + 30s).what == kind::full));  // two deltas since the full one
  s.committed(4, kind::full, t0 + 30s);
  s.failed();
  BOOST_TEST((s.due(5, t0 + 40s).what == kind::full));
  s.restored(3, t0 + 50s, 1);
  BOOST_TEST(s.due(5, t0 + 60s).tables_delta_of == 3u);
  BOOST_TEST(throws_named([] { ck::incremental_schedule({.delta_interval = 0s}); }, dsgd::errc::invalid_argument,
                          {"delta_interval"}));
}

BOOST_AUTO_TEST_SUITE_END()
