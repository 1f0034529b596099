// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/client/detail/request_table.hpp>: a worker's completion slots, without a
// socket: each completes once, failures keep their message, replies land in their own slots
// in any order, unknown ids are reported, and a lost connection fails only its own requests.
#include <dsgd/client/detail/request_table.hpp>

#include <boost/test/unit_test.hpp>

#include <array>
#include <cstdint>
#include <string>

BOOST_AUTO_TEST_SUITE(request_table_test)

namespace client = dsgd::client;
namespace protocol = dsgd::protocol;
using client::detail::request_table;
using client::detail::slot_state;

BOOST_AUTO_TEST_SUITE(request_table_suite)

BOOST_AUTO_TEST_CASE(a_slot_completes_once_and_is_freed_when_taken) {
  request_table t(1);
  std::array<float, 4> into{};
  auto& s = t.open(0, 7, boost::asio::buffer(into));
  BOOST_TEST(s.reply_into.data() == static_cast<void*>(into.data()));
  BOOST_TEST(s.reply_into.size() == sizeof(into));
  BOOST_TEST(!t.done(0, 7));
  BOOST_TEST(!t.take(0, 7).has_value());  // pending: nothing to take, the slot stays
  BOOST_TEST(t.size(0) == 1u);

  BOOST_TEST(t.answer(0, 7, {protocol::message::pull_reply, 12}));
  BOOST_TEST(t.done(0, 7));
  // A second answer, or a failure, finds it no longer pending and changes nothing.
  BOOST_TEST(!t.answer(0, 7, {protocol::message::push_dropped, 99}));
  BOOST_TEST(!t.fail(0, 7, make_error_code(dsgd::errc::peer_lost), "late"));
  BOOST_TEST(t.pending(0, 7) == nullptr);

  auto got = t.take(0, 7);
  BOOST_REQUIRE(got.has_value());
  BOOST_TEST((got->state == slot_state::answered));
  BOOST_TEST((got->answer.type == protocol::message::pull_reply));
  BOOST_TEST(got->answer.step == 12u);
  BOOST_TEST(t.size(0) == 0u);
}

BOOST_AUTO_TEST_CASE(an_open_id_cannot_be_opened_twice) {
  request_table t(1);
  t.open(0, 1);
  try {
    t.open(0, 1);
    BOOST_FAIL("a second open of request 1 was accepted");
  } catch (const dsgd::error& e) {
    BOOST_TEST((e.code() == dsgd::errc::invalid_argument));
    BOOST_TEST(std::string(e.what()).find("request 1") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(a_failure_keeps_its_code_and_message) {
  request_table t(2);
  t.open(1, 3);
  BOOST_TEST(t.fail(1, 3, make_error_code(dsgd::errc::shape_mismatch), "ps:1: w[4,2]: 3 floats, not 8"));
  BOOST_TEST(!t.answer(1, 3, {}));  // failed first: the answer is late
  auto got = t.take(1, 3);
  BOOST_REQUIRE(got.has_value());
  BOOST_TEST((got->state == slot_state::failed));
  BOOST_TEST((got->code == dsgd::errc::shape_mismatch));
  BOOST_TEST(got->what == "ps:1: w[4,2]: 3 floats, not 8");

  client::detail::request_parts parts;
  parts.parts.push_back({1, 3, protocol::message::push, 0, false, {}});
  parts.settle(parts.parts[0], std::move(*got));
  BOOST_REQUIRE(parts.first_error.has_value());
  BOOST_TEST((parts.first_error->code() == dsgd::errc::shape_mismatch));
  BOOST_TEST(std::string(parts.first_error->what()).find("3 floats, not 8") != std::string::npos);
  BOOST_TEST(!parts.pending());
}

BOOST_AUTO_TEST_CASE(out_of_order_replies_land_in_their_own_slots) {
  request_table t(1);
  std::array<std::array<float, 2>, 3> into{};
  for (std::uint64_t id = 0; id < 3; ++id) t.open(0, 10 + id, boost::asio::buffer(into[id]));
  // The receive loop finds each reply's destination by its id, whatever the order.
  for (std::uint64_t id : {12u, 10u, 11u}) {
    auto* s = t.pending(0, id);
    BOOST_REQUIRE(s != nullptr);
    BOOST_TEST(s->reply_into.data() == static_cast<void*>(into[id - 10].data()));
    static_cast<float*>(s->reply_into.data())[0] = float(id);
    BOOST_TEST(t.answer(0, id, {protocol::message::pull_reply, id * 100}));
  }
  client::detail::request_parts parts;
  for (std::uint64_t id = 10; id < 13; ++id) parts.parts.push_back({0, id, protocol::message::pull, 0, false, {}});
  BOOST_TEST(parts.pending());
  for (auto& p : parts.parts) parts.settle(p, std::move(*t.take(0, p.id)));
  for (std::uint64_t id = 10; id < 13; ++id) {
    BOOST_TEST(parts.parts[id - 10].result.step == id * 100);
    BOOST_TEST(into[id - 10][0] == float(id));
  }
  BOOST_TEST(parts.lowest_step == 1000u);
  BOOST_TEST(!parts.first_error.has_value());
  BOOST_TEST(!parts.pending());
}

BOOST_AUTO_TEST_CASE(an_unknown_or_late_id_is_reported) {
  request_table t(2);
  t.open(0, 5);
  BOOST_TEST(t.pending(0, 6) == nullptr);  // never opened
  BOOST_TEST(t.pending(1, 5) == nullptr);  // opened on another connection
  BOOST_TEST(!t.answer(0, 6, {}));
  BOOST_TEST(!t.fail(1, 5, make_error_code(dsgd::errc::peer_lost), "x"));
  BOOST_TEST(t.answer(0, 5, {}));
  (void)t.take(0, 5);
  BOOST_TEST(t.pending(0, 5) == nullptr);  // taken: a second reply is late
  BOOST_TEST(!t.answer(0, 5, {}));
  auto none = t.take(0, 5);  // taking what is not open is a failure naming it
  BOOST_REQUIRE(none.has_value());
  BOOST_TEST((none->state == slot_state::failed));
  BOOST_TEST((none->code == dsgd::errc::invalid_argument));
  BOOST_TEST(none->what.find("request 5") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_lost_connection_fails_its_pending_slots_and_no_other) {
  request_table t(3);
  t.open(0, 1);
  t.open(1, 2);
  t.open(1, 3);
  t.open(2, 4);
  t.answer(1, 3, {protocol::message::reply_ok, 8});  // answered before the loss: it stays so
  BOOST_TEST(t.fail_connection(1, make_error_code(dsgd::errc::peer_lost), "connection to ps:1 lost") == 1u);
  auto lost = t.take(1, 2);
  BOOST_REQUIRE(lost.has_value());
  BOOST_TEST((lost->state == slot_state::failed));
  BOOST_TEST((lost->code == dsgd::errc::peer_lost));
  BOOST_TEST(lost->what == "connection to ps:1 lost");
  auto kept = t.take(1, 3);
  BOOST_REQUIRE(kept.has_value());
  BOOST_TEST((kept->state == slot_state::answered));
  BOOST_TEST(kept->answer.step == 8u);
  BOOST_TEST(!t.done(0, 1));  // other connections' requests still wait
  BOOST_TEST(!t.done(2, 4));
  BOOST_TEST(t.pending(0, 1) != nullptr);
}

BOOST_AUTO_TEST_CASE(an_orphaned_slot_takes_no_reply_and_is_freed_on_completion) {
  request_table t(1);
  t.open(0, 1);
  t.open(0, 2);
  t.answer(0, 2, {});
  client::detail::request_parts parts;
  parts.parts.push_back({0, 1, protocol::message::pull, 0, false, {}});
  parts.parts.push_back({0, 2, protocol::message::pull, 0, false, {}});
  parts.abandon(t);  // a timeout: nothing of it may land any more
  BOOST_TEST(!parts.pending());
  BOOST_TEST(t.size(0) == 1u);             // the answered slot is freed now
  BOOST_TEST(t.pending(0, 1) == nullptr);  // a reply to the other is unknown: bad frame
  BOOST_TEST(t.fail_connection(0, make_error_code(dsgd::errc::peer_lost), "closed") == 1u);
  BOOST_TEST(t.size(0) == 0u);  // and freed once its connection fails
}

BOOST_AUTO_TEST_CASE(parts_count_dropped_pushes_and_keep_the_first_error) {
  request_table t(1);
  client::detail::request_parts parts;
  for (std::uint64_t id = 1; id <= 4; ++id) {
    t.open(0, id);
    parts.parts.push_back({0, id, protocol::message::push, 0, false, {}});
  }
  t.answer(0, 1, {protocol::message::push_dropped, 5});
  t.fail(0, 2, make_error_code(dsgd::errc::aborted), "first");
  t.fail(0, 3, make_error_code(dsgd::errc::peer_lost), "second");
  t.answer(0, 4, {protocol::message::reply_ok, 6});
  for (auto& p : parts.parts) parts.settle(p, std::move(*t.take(0, p.id)));
  BOOST_TEST(parts.dropped == 1u);
  BOOST_TEST(parts.lowest_step == 5u);
  BOOST_REQUIRE(parts.first_error.has_value());
  BOOST_TEST((parts.first_error->code() == dsgd::errc::aborted));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
