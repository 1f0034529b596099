// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for the checkpoint format's version (docs/checkpoints.md, "Versions"): this build writes
// version 3, in which a ps's data file holds every slot and counter of its optimizer's state
// (from 2 on) and its push counts (test/server/push_counts_test.cpp); it still reads 2 (push
// counts zero) and 1 (the values and whatever slots it holds, the rest starting afresh,
// named), refuses a version it does not know, a data file whose version differs from its
// manifest's, and a version 2 checkpoint that lacks a slot the optimizer needs, naming it.
#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/parameter_server.hpp>
#include <dsgd/update/concepts.hpp>

#include <support/error_checks.hpp>
#include <support/temp_dir.hpp>

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

BOOST_AUTO_TEST_SUITE(checkpoint_format_version_test)

namespace {

namespace fs = std::filesystem;
namespace ck = dsgd::checkpoint;
using dsgd::test::contains;
using dsgd::test::error_of;
using cpu = dsgd::device::cpu;

struct temp_dir : dsgd::test::temp_dir {
  temp_dir() : dsgd::test::temp_dir("dsgd_format_test_") {}
};

using dsgd::test::slurp;
void spit(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
}

void put_u32(std::string& bytes, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// Rewrites data file @p name as version @p version, its header and file checksums made good.
void set_data_version(const fs::path& file, std::uint32_t version) {
  auto bytes = slurp(file);
  put_u32(bytes, 8, version);
  put_u32(bytes, 36, dsgd::detail::crc32c(dsgd::detail::as_bytes(std::string_view(bytes).substr(0, 36))));
  const auto body = bytes.size() - 24;
  put_u32(bytes, body + 12, dsgd::detail::crc32c(dsgd::detail::as_bytes(std::string_view(bytes).substr(0, body))));
  spit(file, bytes);
}

// Turns checkpoint @p step in @p dir into what a version 1 build wrote (data files @p data_version,
// the manifest @p manifest_version), every checksum valid.
void rewrite_as(const fs::path& dir, std::uint64_t step, std::uint32_t data_version, std::uint32_t manifest_version) {
  const auto mname = ck::detail::manifest_name(step);
  auto m = ck::detail::parse_manifest(slurp(dir / mname), mname);
  for (auto& f : m.files) {
    set_data_version(dir / f.name, data_version);
    f.crc32c = dsgd::detail::crc32c(dsgd::detail::as_bytes(slurp(dir / f.name)));
  }
  m.version = manifest_version;
  spit(dir / mname, ck::detail::encode_manifest(m));
}

const std::vector<float> w_values{1.f, 2.f, 3.f, 4.f};
const std::vector<float> w_velocity{0.5f, -0.5f, 0.25f, 0.f};

// A one-variable checkpoint of step 7, with the velocity slot when @p with_slot.
void write_checkpoint(const fs::path& dir, bool with_slot) {
  ck::saver s(dir);
  std::vector<ck::shard_data> records{{"w", {4}, 0, w_values}};
  if (with_slot) records.push_back({"w/velocity", {4}, 0, w_velocity});
  s.write_shard_file(7, 0, 1, records);
  s.commit(7, dsgd::placement::round_robin{}.place({{"w", {4}}}, 1));
}

dsgd::protocol::shard_layout w_layout() {
  dsgd::protocol::shard_layout l;
  l.name = "w";
  l.extents = {4};
  l.rows = 4;
  return l;
}

// What a ps restoring checkpoint 7 with exponential_decay<momentum> reads of w.
dsgd::update::shard_state read_w(const fs::path& dir, std::vector<std::string>& missing) {
  ck::checkpoint_reader reader(dir, 7);
  dsgd::optim::exponential_decay<dsgd::optim::momentum>::state<cpu> probe(cpu{}, 0);
  return dsgd::server::detail::read_shard_checkpoint<dsgd::update::shard_state>(reader, w_layout(), probe, 4, missing);
}

}  // namespace

BOOST_AUTO_TEST_CASE(this_build_writes_version_3) {
  temp_dir dir;
  write_checkpoint(dir.path, true);
  BOOST_TEST(ck::saver(dir.path).open(7).format_version() == 3u);
  BOOST_TEST(contains(slurp(dir.path / "ckpt-7.manifest"), "\nversion 3\n"));
  BOOST_TEST(slurp(dir.path / "ckpt-7.ps-0-of-1")[8] == 3);
}

BOOST_AUTO_TEST_CASE(a_version_2_checkpoint_still_opens_and_reads) {
  temp_dir dir;
  write_checkpoint(dir.path, false);
  rewrite_as(dir.path, 7, 2, 2);
  auto reader = ck::saver(dir.path).open(7);
  BOOST_TEST(reader.format_version() == 2u);
  BOOST_TEST(reader.read("w") == w_values, boost::test_tools::per_element());
  BOOST_TEST(dsgd::server::detail::read_pushes_received(reader, w_layout(), 2) == (std::vector<std::uint64_t>{0, 0}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_version_1_checkpoint_still_opens_and_reads) {
  temp_dir dir;
  write_checkpoint(dir.path, false);
  rewrite_as(dir.path, 7, 1, 1);
  ck::saver s(dir.path);
  BOOST_TEST(s.latest().value() == 7u);
  auto reader = s.open(7);
  BOOST_TEST(reader.format_version() == 1u);
  BOOST_TEST(reader.read("w") == w_values, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(an_unknown_version_or_versions_that_disagree_are_refused_by_name) {
  temp_dir dir;
  write_checkpoint(dir.path, false);
  rewrite_as(dir.path, 7, 4, 3);
  auto msg = error_of([&] { ck::saver(dir.path).open(7); }, dsgd::errc::checkpoint_corrupt);
  BOOST_TEST(contains(msg, "ckpt-7.ps-0-of-1: unsupported format version 4 (this build reads 1 to 3)"), msg);

  rewrite_as(dir.path, 7, 1, 2);
  msg = error_of([&] { ck::saver(dir.path).open(7); }, dsgd::errc::checkpoint_corrupt);
  BOOST_TEST(contains(msg, "ckpt-7.ps-0-of-1: format version 1, but ckpt-7.manifest says 2"), msg);

  rewrite_as(dir.path, 7, 3, 4);  // last: a manifest of version 4 no longer parses
  msg = error_of([&] { ck::saver(dir.path).open(7); }, dsgd::errc::checkpoint_corrupt);
  BOOST_TEST(contains(msg, "ckpt-7.manifest: unsupported format version 4"), msg);
}

BOOST_AUTO_TEST_CASE(a_ps_restores_every_slot_and_counter_a_version_2_checkpoint_holds) {
  temp_dir dir;
  {
    // What a ps with exponential_decay<momentum> writes: the values, the velocity and the step.
    std::vector<std::pair<dsgd::protocol::shard_layout, dsgd::update::shard_state>> shards(1);
    shards[0].first = w_layout();
    shards[0].second = {9, w_values, {{"velocity", w_velocity}}, {{"schedule_step", 9}}};
    dsgd::server::detail::write_shard_checkpoint(dir.path, 7, 0, 1, shards);
    ck::saver(dir.path).commit(7, dsgd::placement::round_robin{}.place({{"w", {4}}}, 1));
  }
  std::vector<std::string> missing;
  const auto s = read_w(dir.path, missing);
  BOOST_TEST(missing.empty());
  BOOST_TEST(s.values == w_values, boost::test_tools::per_element());
  BOOST_REQUIRE(s.slots.size() == 1u);
  BOOST_TEST(s.slots[0].first == "velocity");
  BOOST_TEST(s.slots[0].second == w_velocity, boost::test_tools::per_element());
  BOOST_REQUIRE(s.counters.size() == 1u);
  BOOST_TEST(s.counters[0].first == "schedule_step");
  BOOST_TEST(s.counters[0].second == 9u);
}

BOOST_AUTO_TEST_CASE(a_version_2_checkpoint_without_a_slot_the_optimizer_needs_is_refused_by_name) {
  temp_dir dir;
  write_checkpoint(dir.path, false);  // values only, as a run with plain SGD would write them
  std::vector<std::string> missing;
  const auto msg = error_of([&] { read_w(dir.path, missing); }, dsgd::errc::not_found);
  BOOST_TEST(contains(msg, "checkpoint 7 holds no w/velocity, which the optimizer's state of w needs"), msg);
}

BOOST_AUTO_TEST_CASE(a_version_1_checkpoint_restores_what_it_holds_and_names_the_rest) {
  // As a build before version 2 wrote plain momentum's state: the velocity, no schedule step.
  temp_dir dir;
  write_checkpoint(dir.path, true);
  rewrite_as(dir.path, 7, 1, 1);
  std::vector<std::string> missing;
  const auto s = read_w(dir.path, missing);
  BOOST_TEST(s.values == w_values, boost::test_tools::per_element());
  BOOST_REQUIRE(s.slots.size() == 1u);
  BOOST_TEST(s.slots[0].second == w_velocity, boost::test_tools::per_element());
  BOOST_TEST(s.counters.empty());
  BOOST_TEST(missing == (std::vector<std::string>{"w/schedule_step"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
