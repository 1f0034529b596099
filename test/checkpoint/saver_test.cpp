// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/checkpoint/saver.hpp>: round trips, retention, resharding, and that every kind of
// damage is detected and named.
#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/placement/greedy_by_bytes.hpp>
#include <dsgd/placement/partitioned.hpp>
#include <dsgd/placement/round_robin.hpp>

#include <support/error_checks.hpp>
#include <support/temp_dir.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

BOOST_AUTO_TEST_SUITE(saver_test)

namespace fs = std::filesystem;
namespace pl = dsgd::placement;
using dsgd::checkpoint::checkpoint_reader;
using dsgd::checkpoint::saver;
using dsgd::checkpoint::shard_data;
using dsgd::test::contains;

namespace {

// A fresh directory per test, removed afterwards.
struct temp_dir : dsgd::test::temp_dir {
  temp_dir() : dsgd::test::temp_dir("dsgd_saver_test_") {}
};

std::vector<pl::variable_info> model_variables() {
  return {{"dense0/kernel", {7, 4}}, {"dense0/bias", {4}}, {"dense1/kernel", {4, 3}}, {"dense1/bias", {3}}};
}

// Distinct values per variable, element and step, so a value read from the wrong place shows.
using values_map = std::map<std::string, std::vector<float>>;
values_map model_values(std::uint64_t step) {
  values_map out;
  float base = 0;
  for (const auto& v : model_variables()) {
    std::vector<float> x(v.shape.elements());
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] = base + static_cast<float>(i) * 0.25f + static_cast<float>(step) * 1000.f;
    out[v.name] = std::move(x);
    base += 100;
  }
  return out;
}

// What ps task @p only would do, or what every ps task would do if @p only is left out.
void write_shards(const saver& s, std::uint64_t step, const pl::plan& plan, const values_map& values,
                  std::size_t only = static_cast<std::size_t>(-1)) {
  for (std::size_t task = 0; task < plan.ps_tasks(); ++task) {
    if (only != static_cast<std::size_t>(-1) && task != only) continue;
    std::vector<shard_data> held;
    for (const auto& sh : plan.shards()) {
      if (sh.ps_task != task) continue;
      const auto& v = plan.variables()[sh.variable];
      held.push_back(
          {v.name, v.shape, sh.offset, std::span<const float>(values.at(v.name)).subspan(sh.offset, sh.elements)});
    }
    s.write_shard_file(step, task, plan.ps_tasks(), held);
  }
}
// Every ps task writes its file, then the chief commits.
void save_distributed(const saver& s, std::uint64_t step, const pl::plan& plan) {
  write_shards(s, step, plan, model_values(step));
  s.commit(step, plan);
}

using dsgd::test::slurp;
void spit(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// Runs @p f, which must throw dsgd::error with @p code, and returns its message.
template <class F>
std::string error_of(F&& f, dsgd::errc code = dsgd::errc::checkpoint_corrupt) {
  try {
    f();
  } catch (const dsgd::error& e) {
    BOOST_TEST(e.code() == dsgd::make_error_code(code), "wrong code for: " << e.what());
    return e.what();
  }
  BOOST_FAIL("no error was thrown");
  return {};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(train_saver)

BOOST_AUTO_TEST_CASE(a_single_process_save_reads_back_every_variable) {
  temp_dir dir;
  saver s(dir.path);
  auto values = model_values(3);
  std::vector<shard_data> all;
  for (const auto& v : model_variables()) all.push_back({v.name, v.shape, 0, values[v.name]});
  s.save(3, all);
  BOOST_TEST(s.latest().value() == 3u);
  auto r = s.open(3);
  BOOST_TEST(r.ps_tasks() == 1u);
  BOOST_TEST(r.variables().size() == 4u);
  for (const auto& v : model_variables()) {
    BOOST_TEST(r.shape_of(v.name) == v.shape);
    BOOST_TEST(r.read(v.name) == values[v.name], boost::test_tools::per_element());
  }
  BOOST_TEST(r.read("dense0/kernel", 5, 3) ==
                 std::vector<float>(values["dense0/kernel"].begin() + 5, values["dense0/kernel"].begin() + 8),
             boost::test_tools::per_element());
  BOOST_TEST(listing(dir.path) == (std::set<std::string>{"checkpoint", "ckpt-3.manifest", "ckpt-3.ps-0-of-1"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_sharded_checkpoint_records_its_placement_and_reads_back) {
  temp_dir dir;
  saver s(dir.path);
  auto plan = pl::partitioned::fixed_size(2).place(model_variables(), 2);
  save_distributed(s, 40, plan);
  auto r = s.open(40);
  BOOST_TEST(r.step() == 40u);
  BOOST_TEST(r.ps_tasks() == 2u);
  BOOST_TEST(r.placement() == plan.describe());
  BOOST_TEST(r.placement_fingerprint() == plan.fingerprint());
  auto values = model_values(40);
  for (const auto& v : model_variables())
    BOOST_TEST(r.read(v.name) == values[v.name], boost::test_tools::per_element());
  BOOST_TEST(slurp(dir.path / "checkpoint") ==
             "model_checkpoint_path: \"ckpt-40\"\nall_model_checkpoint_paths: \"ckpt-40\"\n");
}

BOOST_AUTO_TEST_CASE(only_the_newest_k_checkpoints_are_kept) {
  temp_dir dir;
  saver s(dir.path, /*keep=*/3);
  auto plan = pl::round_robin{}.place(model_variables(), 2);
  for (std::uint64_t step = 10; step <= 60; step += 10) save_distributed(s, step, plan);
  BOOST_TEST(s.steps() == (std::vector<std::uint64_t>{40, 50, 60}), boost::test_tools::per_element());
  std::set<std::string> expected{"checkpoint"};
  for (int step : {40, 50, 60})
    for (auto suffix : {".manifest", ".ps-0-of-2", ".ps-1-of-2"})
      expected.insert("ckpt-" + std::to_string(step) + suffix);
  BOOST_TEST(listing(dir.path) == expected, boost::test_tools::per_element());
  BOOST_TEST(contains(slurp(dir.path / "checkpoint"), "model_checkpoint_path: \"ckpt-60\""));
  BOOST_TEST(s.open(40).read("dense1/bias") == model_values(40)["dense1/bias"], boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(keep_zero_keeps_every_checkpoint) {
  temp_dir dir;
  saver s(dir.path, 0);
  auto plan = pl::round_robin{}.place(model_variables(), 1);
  for (std::uint64_t step = 1; step <= 7; ++step) save_distributed(s, step, plan);
  BOOST_TEST(s.steps().size() == 7u);
}

// Partitioned on the old cluster, partitioned differently on the new one: every new shard must
// hold exactly the right elements, gathered across old files.
BOOST_AUTO_TEST_CASE(a_checkpoint_of_two_ps_tasks_restores_into_three_and_three_into_one) {
  struct reshard {
    pl::plan before, after;
  };
  std::vector<reshard> cases{
      {pl::partitioned::fixed_size(2).place(model_variables(), 2),
       pl::partitioned::fixed_size(3).place(model_variables(), 3)},
      {pl::partitioned::fixed_size(3).place(model_variables(), 3), pl::round_robin{}.place(model_variables(), 1)},
      {pl::greedy_by_bytes{}.place(model_variables(), 2), pl::partitioned::fixed_size(4).place(model_variables(), 3)}};
  for (const auto& c : cases) {
    temp_dir dir;
    saver s(dir.path);
    save_distributed(s, 7, c.before);
    auto r = s.open(7);
    BOOST_TEST(r.ps_tasks() == c.before.ps_tasks());
    auto values = model_values(7);
    std::size_t checked = 0;
    for (const auto& sh : c.after.shards()) {
      const auto& v = c.after.variables()[sh.variable];
      std::vector<float> expected(values[v.name].begin() + static_cast<std::ptrdiff_t>(sh.offset),
                                  values[v.name].begin() + static_cast<std::ptrdiff_t>(sh.offset + sh.elements));
      BOOST_TEST(r.read(c.after, sh) == expected, boost::test_tools::per_element());
      checked += sh.elements;
    }
    std::size_t total = 0;
    for (const auto& v : model_variables()) total += v.shape.elements();
    BOOST_TEST(checked == total);
  }
}

BOOST_AUTO_TEST_CASE(restore_goes_by_name_and_rejects_unknown_names_and_other_shapes) {
  temp_dir dir;
  saver s(dir.path);
  save_distributed(s, 5, pl::round_robin{}.place(model_variables(), 2));
  auto r = s.open(5);
  // A different creation order and placement still finds every variable by name.
  auto vars = model_variables();
  std::reverse(vars.begin(), vars.end());
  auto other = pl::greedy_by_bytes{}.place(vars, 2);
  BOOST_TEST(other.fingerprint() != r.placement_fingerprint());
  for (const auto& sh : other.shards())
    BOOST_TEST(r.read(other, sh) == model_values(5)[other.variables()[sh.variable].name],
               boost::test_tools::per_element());
  auto msg = error_of([&] { r.read("dense9/kernel"); }, dsgd::errc::not_found);
  BOOST_TEST(contains(msg, "dense9/kernel"));
  vars[0].shape = dsgd::shape{5};
  auto reshaped = pl::round_robin{}.place(vars, 1);
  msg = error_of([&] { r.read(reshaped, reshaped.shards()[0]); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(contains(msg, "dense1/bias[3]"));
  error_of([&] { r.read("dense1/bias", 2, 2); }, dsgd::errc::invalid_argument);
  error_of([&] { s.open(6); }, dsgd::errc::not_found);
}

BOOST_AUTO_TEST_CASE(a_flipped_bit_in_the_data_names_the_file_and_the_record) {
  temp_dir dir;
  saver s(dir.path);
  auto plan = pl::round_robin{}.place(model_variables(), 2);
  save_distributed(s, 40, plan);
  // ps 1 holds dense0/bias (record 0) and dense1/bias (record 1); flip a bit in the latter's values.
  auto file = dir.path / "ckpt-40.ps-1-of-2";
  auto bytes = slurp(file);
  auto at = bytes.size() - 24 - 4 - 5;  // inside the last record's values, before its CRC
  bytes[at] = static_cast<char>(bytes[at] ^ 0x10);
  spit(file, bytes);
  auto msg = error_of([&] { s.open(40); });
  BOOST_TEST(contains(msg, "ckpt-40.ps-1-of-2: record 1 (dense1/bias) checksum mismatch"), msg);
}

BOOST_AUTO_TEST_CASE(damage_to_a_header_a_magic_a_version_or_the_manifest_is_named) {
  temp_dir dir;
  saver s(dir.path);
  save_distributed(s, 40, pl::round_robin{}.place(model_variables(), 2));
  auto file = dir.path / "ckpt-40.ps-0-of-2";
  const auto good = slurp(file);
  struct damage {
    std::size_t at;
    char value;
    std::string expected;
  };
  for (const auto& d : std::vector<damage>{{24, 41, "header checksum mismatch"},  // step 40 -> 41
                                           {0, 'X', "wrong magic"},
                                           {8, 4, "unsupported format version 4"}}) {
    auto bad = good;
    bad[d.at] = d.value;
    spit(file, bad);
    auto msg = error_of([&] { s.open(40); });
    BOOST_TEST(contains(msg, "ckpt-40.ps-0-of-2: " + d.expected), msg);
  }
  spit(file, good);
  BOOST_TEST(s.open(40).step() == 40u);

  auto manifest = dir.path / "ckpt-40.manifest";
  auto text = slurp(manifest);
  auto at = text.find("ps-1-of-2 ") + 10;  // the second file's size
  text[at] = static_cast<char>(text[at] == '9' ? '8' : text[at] + 1);
  spit(manifest, text);
  auto msg = error_of([&] { s.open(40); });
  BOOST_TEST(contains(msg, "ckpt-40.manifest: checksum mismatch"), msg);
  BOOST_TEST(!s.latest().has_value());  // a manifest that fails its checksum is no checkpoint
}

BOOST_AUTO_TEST_CASE(a_damaged_length_is_refused_before_anything_is_allocated) {
  temp_dir dir;
  saver s(dir.path);
  s.write_shard_file(1, 0, 1, std::vector<shard_data>{{"w", {4}, 0, std::vector<float>{1, 2, 3, 4}}});
  auto file = dir.path / "ckpt-1.ps-0-of-1";
  const auto good = slurp(file);
  auto plan = pl::round_robin{}.place({{"w", {4}}}, 1);
  // name length (offset 40), element count (after name, dtype, rank, extent, offset)
  for (std::size_t at : {std::size_t{40}, std::size_t{40 + 4 + 1 + 4 + 4 + 8 + 8}}) {
    auto bad = good;
    for (std::size_t i = 0; i < 4; ++i) bad[at + i] = static_cast<char>(0xff);
    spit(file, bad);
    auto msg = error_of([&] { s.commit(1, plan); });
    BOOST_TEST(contains(msg, "ckpt-1.ps-0-of-1: record 0"), msg);
  }
}

// Every prefix of a data file is refused as truncated, both by commit (which has only the file)
// and by restore (which also has the manifest's size).
BOOST_AUTO_TEST_CASE(truncation_at_every_offset_is_detected) {
  temp_dir dir;
  saver s(dir.path);
  std::vector<float> w{1, 2, 3, 4, 5, 6};
  std::vector<shard_data> shards{{"w", {3, 2}, 0, w}, {"b", {2}, 0, std::span(w).first(2)}};
  s.save(9, shards);
  auto file = dir.path / "ckpt-9.ps-0-of-1";
  const auto good = slurp(file);
  auto plan = pl::round_robin{}.place({{"w", {3, 2}}, {"b", {2}}}, 1);
  for (std::size_t cut = 0; cut < good.size(); ++cut) {
    spit(file, good.substr(0, cut));
    auto restore_msg = error_of([&] { s.open(9); });
    BOOST_TEST(contains(restore_msg, "ckpt-9.ps-0-of-1: truncated: expected " + std::to_string(good.size()) +
                                         " bytes, got " + std::to_string(cut)),
               restore_msg);
    auto commit_msg = error_of([&] { s.commit(9, plan); });
    BOOST_TEST((contains(commit_msg, "ckpt-9.ps-0-of-1: truncated") && cut < good.size()), commit_msg);
  }
}

// Every single-bit flip anywhere in a data file is caught by its own checksums (commit has no
// manifest to compare with).
BOOST_AUTO_TEST_CASE(every_single_bit_flip_in_a_data_file_is_detected) {
  temp_dir dir;
  saver s(dir.path);
  std::vector<float> w{1, 2, 3, 4, 5, 6};
  s.write_shard_file(2, 0, 1, std::vector<shard_data>{{"w", {3, 2}, 0, w}, {"b", {2}, 0, std::span(w).first(2)}});
  auto plan = pl::round_robin{}.place({{"w", {3, 2}}, {"b", {2}}}, 1);
  auto file = dir.path / "ckpt-2.ps-0-of-1";
  const auto good = slurp(file);
  for (std::size_t i = 0; i < good.size() * 8; ++i) {
    auto bad = good;
    bad[i / 8] = static_cast<char>(bad[i / 8] ^ (1 << (i % 8)));
    spit(file, bad);
    auto msg = error_of([&] { s.commit(2, plan); });
    BOOST_TEST(contains(msg, "ckpt-2.ps-0-of-1: "), "bit " << i << ": " << msg);
  }
  spit(file, good);
  s.commit(2, plan);
  BOOST_TEST(s.latest().value() == 2u);
}

BOOST_AUTO_TEST_CASE(a_missing_ps_file_is_named_by_commit_and_by_restore) {
  temp_dir dir;
  saver s(dir.path);
  auto plan = pl::round_robin{}.place(model_variables(), 2);
  save_distributed(s, 10, plan);
  fs::remove(dir.path / "ckpt-10.ps-1-of-2");
  auto msg = error_of([&] { s.open(10); });
  BOOST_TEST(contains(msg, "ckpt-10.ps-1-of-2: missing"), msg);

  // Only ps 0 wrote step 20: the chief refuses to commit it and 10 stays the latest.
  temp_dir dir2;
  saver s2(dir2.path);
  save_distributed(s2, 10, plan);
  write_shards(s2, 20, plan, model_values(20), /*only=*/0);
  msg = error_of([&] { s2.commit(20, plan); });
  BOOST_TEST(contains(msg, "ckpt-20.ps-1-of-2: missing"), msg);
  BOOST_TEST(s2.latest().value() == 10u);
}

BOOST_AUTO_TEST_CASE(commit_refuses_a_data_file_that_lacks_a_shard_of_the_plan) {
  temp_dir dir;
  saver s(dir.path);
  auto plan = pl::round_robin{}.place(model_variables(), 1);
  auto values = model_values(1);
  s.write_shard_file(1, 0, 1, std::vector<shard_data>{{"dense0/kernel", {7, 4}, 0, values["dense0/kernel"]}});
  auto msg = error_of([&] { s.commit(1, plan); });
  BOOST_TEST(contains(msg, "ckpt-1.ps-0-of-1: lacks dense0/bias[4]"), msg);
}

// A crash between the data files and the manifest, or in the middle of writing a file, leaves
// the previous checkpoint as the latest; the next commit clears the debris.
BOOST_AUTO_TEST_CASE(an_interrupted_checkpoint_falls_back_to_the_previous_one_and_is_cleaned_up) {
  temp_dir dir;
  saver s(dir.path);
  auto plan = pl::partitioned::fixed_size(2).place(model_variables(), 2);
  save_distributed(s, 10, plan);
  write_shards(s, 20, plan, model_values(20));                // crashed before the manifest
  spit(dir.path / "ckpt-20.manifest.tmp.4242", "dsgd chec");  // crashed while writing it
  spit(dir.path / "ckpt-30.ps-0-of-2.tmp.4242", "DSGDCK");    // crashed while writing data
  BOOST_TEST(s.latest().value() == 10u);
  BOOST_TEST(s.open(10).read("dense0/kernel") == model_values(10)["dense0/kernel"], boost::test_tools::per_element());

  save_distributed(s, 30, plan);
  BOOST_TEST(s.steps() == (std::vector<std::uint64_t>{10, 30}), boost::test_tools::per_element());
  for (const auto& name : listing(dir.path)) {
    BOOST_TEST(!contains(name, "ckpt-20"), name);
    BOOST_TEST(!contains(name, ".tmp."), name);
  }
}

BOOST_AUTO_TEST_CASE(committing_an_earlier_step_supersedes_checkpoints_of_an_abandoned_run) {
  temp_dir dir;
  saver s(dir.path);
  auto plan = pl::round_robin{}.place(model_variables(), 2);
  save_distributed(s, 10, plan);
  save_distributed(s, 50, plan);
  save_distributed(s, 20, plan);  // training was restarted from step 10
  BOOST_TEST(s.steps() == (std::vector<std::uint64_t>{10, 20}), boost::test_tools::per_element());
  BOOST_TEST(s.latest().value() == 20u);
}

BOOST_AUTO_TEST_CASE(bad_arguments_to_the_writer_are_refused) {
  temp_dir dir;
  saver s(dir.path);
  std::vector<float> v{1, 2, 3};
  error_of([&] { s.write_shard_file(1, 2, 2, {}); }, dsgd::errc::invalid_argument);
  error_of(
      [&] {
        s.write_shard_file(1, 0, 1, std::vector<shard_data>{{"w", {2}, 0, v}});
      },
      dsgd::errc::invalid_argument);
  error_of(
      [&] {
        s.write_shard_file(1, 0, 1, std::vector<shard_data>{{"w\nx", {3}, 0, v}});
      },
      dsgd::errc::invalid_argument);
  BOOST_TEST(listing(dir.path).empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
