// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/server/shard_table.hpp>: the ps's requests answered without a socket, from
// frames built in memory, with a sink that records every reply.
#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/shard_table.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>

#include <support/shard_table_driver.hpp>

#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(shard_table_test)

using namespace std::chrono_literals;
namespace ds = dsgd::server;
namespace protocol = dsgd::protocol;
using protocol::message;
using namespace dsgd::test;

namespace {

const auto& model = w_and_b;

// Little-endian keys, then (sparse_push) the rows.
std::vector<std::byte> keys_of(const std::vector<std::uint64_t>& keys, std::span<const float> rows = {}) {
  std::vector<std::byte> out(keys.size() * 8);
  for (std::size_t i = 0; i < keys.size(); ++i) dsgd::transport::detail::store_le(out.data() + 8 * i, keys[i]);
  auto r = bytes_of(rows);
  out.insert(out.end(), r.begin(), r.end());
  return out;
}

const std::vector<float> w0{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
const std::vector<float> b0{1, 1, 1};

// A table for @p replicas replicas with peers 1 ("chief:0", replica 0), 2 ("worker:0",
// replica 1), ... registered and (with @p init) both shards created in session 1.
template <class Table>
Table registered(recording_sink& out, std::uint32_t replicas, bool init = true) {
  auto t = registered_table<Table>(out, replicas, quiet_options<Table>(), [](const std::string& task, std::uint32_t r) {
    return w_and_b_registration(task, r, r == 0);
  });
  if (init) {
    init_shards(t, out, {w0, b0});
    deliver(t, out, 1, {message::open_session, 0, 0, 1});
  }
  for (const auto& s : out.take()) BOOST_REQUIRE(s.type() == message::reply_ok);
  return t;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(shard_table_without_a_socket)

BOOST_AUTO_TEST_CASE(register_answers_the_push_counts_and_names_a_placement_mismatch) {
  recording_sink out;
  sync_table t({"ps", 0}, 1, 2, quiet_options<sync_table>());
  t.connect(1, "chief:0");
  t.connect(2, "worker:0");
  BOOST_TEST(
      !deliver(t, out, 1, {message::register_worker, 0, 0, 0, control_of(w_and_b_registration("chief:0", 0, true))}));
  auto r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST((r[0].type() == message::reply_ok));
  BOOST_TEST(r[0].payload == std::vector<std::byte>(16, std::byte{0}));  // no pushes yet, for w and b
  BOOST_TEST(t.chief_registered());
  BOOST_TEST(t.chief_connected());

  // A peer claiming another task than its handshake proved.
  deliver(t, out, 2, {message::register_worker, 0, 0, 0, control_of(w_and_b_registration("worker:3", 1, false))});
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST(r[0].error().code == int(dsgd::errc::handshake_failed));

  std::vector<dsgd::placement::variable_info> other{{"w", {4, 3}}, {"b", {5}}};
  deliver(t, out, 2,
          {message::register_worker, 0, 0, 0, control_of(w_and_b_registration("worker:0", 1, false, other))});
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST((r[0].type() == message::reply_error));
  auto e = r[0].error();
  BOOST_TEST(e.code == int(dsgd::errc::placement_mismatch));
  BOOST_TEST(contains(e.message, "placement of worker:0 differs from the one ps:0 holds"), e.message);
  BOOST_TEST(contains(e.message, dsgd::placement::round_robin{}.place(model, 1).describe()), e.message);
  BOOST_TEST(contains(e.message, dsgd::placement::round_robin{}.place(other, 1).describe()), e.message);

  // Unregistered, its requests are refused by name.
  deliver(t, out, 2, {message::pull});
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST(r[0].error().message == "pull before register_worker");
}

BOOST_AUTO_TEST_CASE(wait_ready_is_parked_until_every_shard_exists_in_a_session_the_chief_opened) {
  recording_sink out;
  auto t = registered<sync_table>(out, 1, false);
  deliver(t, out, 1, {message::wait_ready});
  BOOST_TEST(out.take().empty());
  BOOST_TEST(t.parked() == 1u);
  deliver(t, out, 1, {message::init_shard, 0, 0, 0, bytes_of(w0)});
  BOOST_TEST(out.take().size() == 1u);  // the init's ok only
  BOOST_TEST(!t.ready());
  deliver(t, out, 1, {message::init_shard, 1, 0, 0, bytes_of(b0)});
  BOOST_TEST(out.take().size() == 1u);  // every shard exists, but no session is open yet
  BOOST_TEST(t.ready());
  BOOST_TEST(t.parked() == 1u);
  deliver(t, out, 1, {message::open_session, 0, 0, 77});
  auto r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 2u);
  BOOST_TEST((r[1].type() == message::reply_ok));
  BOOST_TEST(r[1].header.request_id == r[0].header.request_id - 3);  // the wait_ready, answered now
  BOOST_TEST(r[1].header.step == 77u);                               // with the session's stamp
  BOOST_TEST(t.parked() == 0u);
  BOOST_TEST(t.find(0, 0)->size() == 12u);
  BOOST_TEST(t.find(1, 0)->size() == 3u);
}

BOOST_AUTO_TEST_CASE(a_sync_pull_is_parked_until_the_step_completes) {
  recording_sink out;
  auto t = registered<sync_table>(out, 2);
  deliver(t, out, 1, {message::pull, 0, 0, 1});
  BOOST_TEST(out.take().empty());
  BOOST_TEST(t.parked() == 1u);
  std::vector<float> g1(12, 1.f), g2(12, 3.f);
  deliver(t, out, 1, {message::push, 0, 0, 0, bytes_of(g1), 16});  // in chunks of 4 floats
  auto r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST((r[0].type() == message::push_accumulated));
  deliver(t, out, 2, {message::push, 0, 0, 0, bytes_of(g2)});
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 2u);
  BOOST_TEST((r[0].type() == message::push_applied));
  BOOST_TEST(r[0].to == 2u);
  BOOST_TEST(r[0].header.step == 1u);
  BOOST_TEST((r[1].type() == message::pull_reply));
  BOOST_TEST(r[1].to == 1u);
  BOOST_TEST(r[1].header.step == 1u);
  std::vector<float> expected = w0;
  for (auto& w : expected) w -= 0.5f * 2.f;  // the mean of 1 and 3
  BOOST_TEST(r[1].floats() == expected, boost::test_tools::per_element());
  BOOST_TEST(t.parked() == 0u);

  // A restarted worker learns which of its pushes arrived.
  t.connect(3, "worker:0");
  deliver(t, out, 3, {message::register_worker, 0, 0, 0, control_of(w_and_b_registration("worker:0", 1, false))});
  BOOST_TEST(out.superseded == std::vector<ds::peer_id>{2});
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  std::vector<std::byte> counts(16, std::byte{0});
  counts[0] = std::byte{1};  // one push of w, none of b
  BOOST_TEST(r[0].payload == counts);
}

BOOST_AUTO_TEST_CASE(dropped_count_answers_the_pushes_its_shards_dropped) {
  recording_sink out;
  auto t = registered<sync_table>(out, 2);
  auto dropped = [&] {
    deliver(t, out, 2, {message::dropped_count, 0, 0, 0});
    auto r = out.take();
    BOOST_REQUIRE_EQUAL(r.size(), 1u);
    BOOST_REQUIRE((r[0].type() == message::reply_ok));
    return r[0].header.step;
  };
  BOOST_TEST(dropped() == 0u);
  std::vector<float> g(12, 1.f);
  deliver(t, out, 1, {message::push, 0, 0, 0, bytes_of(g)});
  deliver(t, out, 2, {message::push, 0, 0, 0, bytes_of(g)});  // step 0 of w applied: w is at step 1
  deliver(t, out, 2, {message::push, 0, 0, 0, bytes_of(g)});  // computed at step 0 again: stale
  auto r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 3u);
  BOOST_TEST((r[2].type() == message::push_dropped));
  BOOST_TEST(dropped() == 1u);
}

BOOST_AUTO_TEST_CASE(a_push_for_a_shard_it_lacks_is_refused_before_its_payload) {
  recording_sink out;
  auto t = registered<sync_table>(out, 1);
  BOOST_TEST((deliver(t, out, 1, {message::push, 7, 0, 0, bytes_of(w0)}) == dsgd::errc::bad_frame));
  BOOST_TEST((deliver(t, out, 1, {message::push, 0, 0, 0, bytes_of(b0)}) == dsgd::errc::bad_frame));  // wrong size
  BOOST_TEST((deliver(t, out, 1, {message::init_shard, 0, 3, 0, bytes_of(w0)}) == dsgd::errc::bad_frame));
  BOOST_TEST((deliver(t, out, 1, {message::finish, 0, 0, 0, bytes_of(b0)}) == dsgd::errc::bad_frame));
  BOOST_TEST(out.take().empty());
  deliver(t, out, 1, {message::pull, 7});
  auto r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST(r[0].error().code == int(dsgd::errc::not_found));
  BOOST_TEST(r[0].error().message == "pull of variable 7 shard 0, which ps:0 does not hold");
  // A type this version does not know, without a payload: answered, the connection kept.
  deliver(t, out, 1, {static_cast<message>(40)});
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST(r[0].error().message == "unknown message type 40");
}

BOOST_AUTO_TEST_CASE(the_sweep_answers_an_expired_request_naming_what_it_waits_for) {
  recording_sink out;
  auto t = registered<sync_table>(out, 2);
  auto ready = registered<sync_table>(out, 1, false);
  deliver(t, out, 1, {message::pull, 0, 0, 1});
  deliver(t, out, 1, {message::push, 0, 0, 0, bytes_of(w0)});
  deliver(ready, out, 1, {message::wait_ready});
  out.take();
  const auto now = dsgd::update::clock_type::now();
  BOOST_TEST(!t.sweep(now, out));
  BOOST_TEST(out.take().empty());  // before the deadline
  BOOST_TEST(!t.sweep(now + 2s, out));
  BOOST_TEST(!ready.sweep(now + 2s, out));
  auto r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 2u);
  BOOST_TEST(r[0].error().code == int(dsgd::errc::timed_out));
  BOOST_TEST(contains(r[0].error().message, "ps:0: sync_average: worker 0 waited past its deadline for step 1"),
             r[0].error().message);
  BOOST_TEST(contains(r[0].error().message, "no gradient yet from"), r[0].error().message);
  BOOST_TEST(
      contains(r[1].error().message, "ps:0: variables not initialised before the deadline (0 of 2 shards created"),
      r[1].error().message);
  BOOST_TEST(t.parked() == 0u);
}

BOOST_AUTO_TEST_CASE(a_shutdown_waits_until_every_replica_finished) {
  recording_sink out;
  auto t = registered<sync_table>(out, 2);
  deliver(t, out, 1, {message::shutdown});
  BOOST_TEST(!out.shutdown);
  deliver(t, out, 1, {message::finish});
  BOOST_TEST(!out.shutdown);
  BOOST_TEST(t.finished(1));
  BOOST_TEST(!t.finished(2));
  deliver(t, out, 2, {message::finish});
  BOOST_REQUIRE(out.shutdown);
  BOOST_TEST(out.shutdown->to == 1u);
  BOOST_TEST((out.shutdown->type() == message::reply_ok));
  BOOST_TEST(out.take().size() == 2u);  // the finishes' ok

  // Without the finishes, the deadline shuts down anyway.
  recording_sink late;
  auto u = registered<sync_table>(late, 2);
  deliver(u, late, 1, {message::shutdown});
  BOOST_TEST(u.sweep(dsgd::update::clock_type::now() + 2s, late));
  BOOST_TEST(late.shutdown.has_value());
}

BOOST_AUTO_TEST_CASE(a_restore_starts_a_generation_and_aborts_older_peers) {
  const auto dir = std::filesystem::temp_directory_path() / ("dsgd_shard_table_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  recording_sink out;
  auto t = registered<sync_table>(out, 2);
  deliver(t, out, 1, {message::save, 0, 0, 5, control_of(protocol::checkpoint_request{dir.string()})});
  BOOST_REQUIRE_EQUAL(out.replies.size(), 1u);
  BOOST_TEST((out.take()[0].type() == message::reply_ok));
  dsgd::checkpoint::saver(dir).commit(5, dsgd::placement::round_robin{}.place(model, 1));
  deliver(t, out, 1, {message::push, 0, 0, 0, bytes_of(w0)});
  deliver(t, out, 2, {message::push, 0, 0, 0, bytes_of(w0)});
  deliver(t, out, 2, {message::pull, 0, 0, 2});  // parked: step 1 is the last
  out.take();
  BOOST_TEST(t.parked() == 1u);

  deliver(t, out, 1, {message::restore, 0, 0, 5, control_of(protocol::checkpoint_request{dir.string()})});
  BOOST_TEST(t.generation() == 1u);
  auto r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 2u);
  BOOST_TEST((r[0].type() == message::reply_ok));
  BOOST_TEST(r[1].to == 2u);  // its parked pull, aborted
  BOOST_TEST(r[1].error().code == int(dsgd::errc::aborted));
  BOOST_TEST(r[1].error().message ==
             "ps:0 restored checkpoint 5 after worker:0 registered: register again and read the variables anew");
  BOOST_TEST(t.parked() == 0u);

  deliver(t, out, 2, {message::pull});  // an older generation's request
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST(r[0].error().code == int(dsgd::errc::aborted));
  deliver(t, out, 1, {message::pull});  // the chief belongs to the new one: the saved values
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST((r[0].type() == message::pull_reply));
  BOOST_TEST(r[0].header.step == 5u);
  BOOST_TEST(r[0].floats() == w0, boost::test_tools::per_element());
  t.connect(3, "worker:0");  // registered again, it reads again
  deliver(t, out, 3, {message::register_worker, 0, 0, 0, control_of(w_and_b_registration("worker:0", 1, false))});
  deliver(t, out, 3, {message::pull});
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 2u);
  BOOST_TEST((r[1].type() == message::pull_reply));

  // The restore closed session 1: a wait_ready waits for the chief's next one (which it opens
  // once every ps task holds the checkpoint), and past its deadline says so.
  deliver(t, out, 3, {message::wait_ready});
  BOOST_TEST(out.take().empty());
  BOOST_TEST(t.sweep(dsgd::update::clock_type::now() + 2s, out) == false);
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST(r[0].error().code == int(dsgd::errc::timed_out));
  BOOST_TEST(r[0].error().message ==
             "ps:0: every shard exists, but no chief opened a session before the deadline since the restore of "
             "checkpoint 5 (did the chief fail while restoring the other ps tasks?)");
  deliver(t, out, 3, {message::wait_ready});
  deliver(t, out, 1, {message::open_session, 0, 0, 2});
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 2u);
  BOOST_TEST(r[1].to == 3u);
  BOOST_TEST(r[1].header.step == 2u);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(sparse_requests_name_a_bad_row_and_serve_good_ones) {
  recording_sink out;
  auto t = registered<async_table>(out, 1);
  deliver(t, out, 1, {message::sparse_pull, 0, 0, 0, keys_of({1, 9})});
  auto r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST(r[0].error().code == int(dsgd::errc::invalid_argument));
  BOOST_TEST(r[0].error().message ==
             "sparse_pull: row 9 (key 1 of 2) out of range for w [4, 3] on ps:0 (holds rows 0-3)");
  deliver(t, out, 1, {message::sparse_pull, 1, 0, 0, keys_of({0})});
  BOOST_TEST(contains(out.take().at(0).error().message,
                      "sparse_pull of b [3] on ps:0: sparse rows need a variable of rank 2"));
  std::vector<float> half_row{1.f, 2.f};
  deliver(t, out, 1, {message::sparse_push, 0, 0, 0, keys_of({1}, half_row)});
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST(r[0].error().code == int(dsgd::errc::shape_mismatch));
  BOOST_TEST(contains(r[0].error().message, "not a whole number of keys with their rows (8 + 3 x 4 bytes each)"));

  std::vector<float> row{2.f, 2.f, 2.f};
  deliver(t, out, 1, {message::sparse_push, 0, 0, 0, keys_of({2}, row)});
  BOOST_TEST((out.take().at(0).type() == message::push_applied));
  deliver(t, out, 1, {message::sparse_pull, 0, 0, 0, keys_of({2, 0})});
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST((r[0].type() == message::pull_reply));
  BOOST_TEST(r[0].floats() == (std::vector<float>{6, 7, 8, 1, 2, 3}), boost::test_tools::per_element());

  // A dense push in chunks, applied chunk by chunk where the rule streams pushes.
  deliver(t, out, 1, {message::push, 0, 0, 0, bytes_of(std::vector<float>(12, 2.f)), 12});
  BOOST_TEST((out.take().at(0).type() == message::push_applied));
  deliver(t, out, 1, {message::pull});
  std::vector<float> expected{0, 1, 2, 3, 4, 5, 5, 6, 7, 9, 10, 11};
  BOOST_TEST(out.take().at(0).floats() == expected, boost::test_tools::per_element());
}

// No rows at all: a valid request, a push that counts and a pull of nothing, under both rules
// (found by the request_stream fuzzer: an empty push read the first of no rows).
BOOST_AUTO_TEST_CASE(a_sparse_push_and_pull_of_no_rows_are_answered) {
  recording_sink out;
  auto sync = registered<sync_table>(out, 1);
  deliver(sync, out, 1, {message::sparse_push, 0, 0, 0, keys_of({})});
  BOOST_TEST((out.take().at(0).type() == message::push_applied));
  deliver(sync, out, 1, {message::sparse_pull, 0, 0, 1, keys_of({})});
  auto r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST((r[0].type() == message::pull_reply));
  BOOST_TEST(r[0].payload.empty());
  auto async = registered<async_table>(out, 1);
  deliver(async, out, 1, {message::sparse_push, 0, 0, 0, keys_of({})});
  BOOST_TEST((out.take().at(0).type() == message::push_applied));
}

BOOST_AUTO_TEST_CASE(a_peer_gone_takes_its_parked_requests_with_it) {
  recording_sink out;
  auto t = registered<sync_table>(out, 2);
  deliver(t, out, 2, {message::pull, 0, 0, 1});
  BOOST_TEST(t.parked() == 1u);
  t.disconnect(2, true, out);
  BOOST_TEST(t.parked() == 0u);
  BOOST_TEST(out.take().empty());
  BOOST_TEST(t.chief_connected());
  t.disconnect(1, true, out);
  BOOST_TEST(!t.chief_connected());
  BOOST_TEST(t.chief_registered());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
