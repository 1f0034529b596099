// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for the push counts in a ps's checkpoint (server/detail/shard_checkpoint.hpp, format
// version 3): a ps saves each shard's pushes received per replica with its values, a restore
// sets them back (the registration then answers the checkpoint's counts, not the live ones),
// a checkpoint written by another number of ps tasks restores the lowest of the overlapping
// shards' counts, and one of an older version, without counts, restores them as zero.
#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/shard_table.hpp>
#include <dsgd/update/async.hpp>

#include <support/shard_table_driver.hpp>
#include <support/temp_dir.hpp>

#include <boost/test/unit_test.hpp>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

BOOST_AUTO_TEST_SUITE(push_counts_test)

using namespace std::chrono_literals;
namespace ds = dsgd::server;
namespace protocol = dsgd::protocol;
namespace ck = dsgd::checkpoint;
using protocol::message;

namespace {

using counting_table = ds::shard_table<dsgd::update::async, dsgd::optim::sgd>;

using dsgd::test::recording_sink;

// Sends @p payload as one frame of @p type from peer @p p, which the table must take; @returns
// the type of its last reply.
message send_frame(counting_table& t, recording_sink& out, ds::peer_id p, message type, std::uint64_t step,
                   std::string_view payload) {
  dsgd::test::deliver_accepted(t, out, p, {type, 0, 0, step, dsgd::test::bytes_of(payload)});
  BOOST_REQUIRE(!out.replies.empty());
  return out.replies.back().type();
}

const std::vector<float> counter_zero{0.f};
std::string_view bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)};
}

const auto counter_plan = dsgd::placement::round_robin{}.place({{"c", {1}}}, 1);

// Registers peer @p p as replica @p replica. @returns the counts the ps answered.
std::uint64_t register_replica(counting_table& t, recording_sink& out, ds::peer_id p, std::uint32_t replica) {
  const auto task = dsgd::test::replica_task(replica);
  t.connect(p, task);
  protocol::register_request r{task, replica, replica == 0, counter_plan.fingerprint(), counter_plan.describe(), 1, {}};
  r.layouts.push_back({0, 0, "c", {1}, 0, 1});
  BOOST_REQUIRE(send_frame(t, out, p, message::register_worker, 0, protocol::encode_control(r)) == message::reply_ok);
  BOOST_REQUIRE_EQUAL(out.replies.back().payload.size(), 8u);
  return dsgd::transport::detail::load_le<std::uint64_t>(out.replies.back().payload.data());
}

protocol::shard_layout rows(std::uint64_t first, std::uint64_t n) { return {0, 0, "e", {6, 2}, first, n}; }

}  // namespace

BOOST_AUTO_TEST_CASE(a_restore_sets_the_push_counts_to_those_the_checkpoint_holds) {
  dsgd::test::temp_dir dir("dsgd_push_counts_");
  recording_sink out;
  counting_table::options o;
  o.connection.log = [](std::string_view) {};
  o.optimizer = dsgd::optim::sgd{1.f};
  counting_table t({"ps", 0}, 1, 2, o);
  BOOST_TEST(register_replica(t, out, 1, 0) == 0u);
  BOOST_TEST(register_replica(t, out, 2, 1) == 0u);
  BOOST_REQUIRE(send_frame(t, out, 1, message::init_shard, 0, bytes(counter_zero)) == message::reply_ok);
  const std::vector<float> minus_one{-1.f};
  for (int i = 0; i < 3; ++i) send_frame(t, out, 1, message::push, 0, bytes(minus_one));
  send_frame(t, out, 2, message::push, 0, bytes(minus_one));
  const auto where = protocol::encode_control(protocol::checkpoint_request{dir.path.string()});
  BOOST_REQUIRE(send_frame(t, out, 1, message::save, 4, where) == message::reply_ok);
  ck::saver(dir.path).commit(4, counter_plan);
  // Pushes after the checkpoint, which the restore rolls back.
  for (int i = 0; i < 2; ++i) send_frame(t, out, 1, message::push, 0, bytes(minus_one));
  send_frame(t, out, 2, message::push, 0, bytes(minus_one));
  BOOST_TEST(register_replica(t, out, 3, 1) == 2u);  // live: 2 pushes of replica 1

  auto reader = ck::saver(dir.path).open(4);
  BOOST_TEST(reader.format_version() == 3u);
  BOOST_TEST(reader.read("c/pushes_received/0-1").size() == 4u);  // 2 replicas, 2 halves each
  BOOST_REQUIRE(send_frame(t, out, 1, message::restore, 4, where) == message::reply_ok);
  BOOST_TEST(register_replica(t, out, 4, 0) == 3u);
  BOOST_TEST(register_replica(t, out, 5, 1) == 1u);
  float value = 0.f;
  BOOST_TEST(const_cast<counting_table::shard_type*>(t.find(0, 0))->try_pull(0, 0, &value).has_value());
  BOOST_TEST(value == 4.f);  // the 3 + 1 pushes the counts say
}

BOOST_AUTO_TEST_CASE(counts_restore_by_range_and_are_zero_where_a_checkpoint_holds_none) {
  dsgd::test::temp_dir dir("dsgd_push_counts_");
  // e [6, 2] written by two ps tasks as rows [0, 3) and [3, 6), with counts for 2 replicas.
  std::vector<float> values(6, 0.f);
  std::vector<std::pair<protocol::shard_layout, dsgd::update::shard_state>> first{{rows(0, 3), {7, values, {}, {}}}};
  std::vector<std::pair<protocol::shard_layout, dsgd::update::shard_state>> second{{rows(3, 3), {7, values, {}, {}}}};
  const std::vector<std::vector<std::uint64_t>> first_counts{{5, std::uint64_t{1} << 40}};
  const std::vector<std::vector<std::uint64_t>> second_counts{{4, 6}};
  ds::detail::write_shard_checkpoint(dir.path, 7, 0, 2, first, first_counts);
  ds::detail::write_shard_checkpoint(dir.path, 7, 1, 2, second, second_counts);
  ck::saver(dir.path).commit(7, dsgd::placement::plan({{"e", {6, 2}}}, 2, {{0, 0, 0, 6}, {0, 1, 6, 6}}));
  ck::checkpoint_reader reader(dir.path, 7);
  using v = std::vector<std::uint64_t>;
  BOOST_TEST(ds::detail::read_pushes_received(reader, rows(0, 3), 2) == (v{5, std::uint64_t{1} << 40}),
             boost::test_tools::per_element());
  BOOST_TEST(ds::detail::read_pushes_received(reader, rows(3, 3), 2) == (v{4, 6}), boost::test_tools::per_element());
  // A shard across both: the lower count of each replica; a replica the checkpoint lacks: 0.
  BOOST_TEST(ds::detail::read_pushes_received(reader, rows(0, 6), 3) == (v{4, 6, 0}), boost::test_tools::per_element());
  BOOST_TEST(ds::detail::read_pushes_received(reader, rows(2, 2), 1) == (v{4}), boost::test_tools::per_element());
  BOOST_TEST(ds::detail::read_pushes_received(reader, rows(4, 1), 2) == (v{4, 6}), boost::test_tools::per_element());

  // Without counts (a checkpoint of format version 2 or 1, or of a single process): zero, and
  // zero too for a shard only part of whose rows have counts.
  dsgd::test::temp_dir old("dsgd_push_counts_");
  std::vector<std::pair<protocol::shard_layout, dsgd::update::shard_state>> whole{
      {rows(0, 6), {7, std::vector<float>(12, 0.f), {}, {}}}};
  ds::detail::write_shard_checkpoint(old.path, 7, 0, 1, whole);
  ck::saver(old.path).commit(7, dsgd::placement::round_robin{}.place({{"e", {6, 2}}}, 1));
  BOOST_TEST(ds::detail::read_pushes_received(ck::checkpoint_reader(old.path, 7), rows(0, 6), 2) == (v{0, 0}),
             boost::test_tools::per_element());
  dsgd::test::temp_dir part("dsgd_push_counts_");
  ds::detail::write_shard_checkpoint(part.path, 7, 0, 2, first, first_counts);
  ds::detail::write_shard_checkpoint(part.path, 7, 1, 2, second);
  ck::saver(part.path).commit(7, dsgd::placement::plan({{"e", {6, 2}}}, 2, {{0, 0, 0, 6}, {0, 1, 6, 6}}));
  BOOST_TEST(ds::detail::read_pushes_received(ck::checkpoint_reader(part.path, 7), rows(0, 6), 2) == (v{0, 0}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
