// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/transport/asio_tcp_policy.hpp>: the Transport contract, run over both models
// (asio_tcp on loopback TCP, inproc) so that both are held to the same semantics: identities,
// frames in order, chunking, control messages whole, gather sends, caps before the sink, a
// sink's error, close, a wrong token.
#include <dsgd/transport/asio_tcp_policy.hpp>
#include <dsgd/transport/inproc.hpp>

#include "pair_fixture.hpp"

#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include <array>
#include <cstddef>
#include <numeric>
#include <optional>
#include <type_traits>
#include <vector>

BOOST_AUTO_TEST_SUITE(asio_tcp_policy_test)

namespace asio = boost::asio;
namespace t = dsgd::transport;
using dsgd::error_code;
using dsgd::test::pair_fixture;

namespace {

using models = boost::mpl::list<t::asio_tcp, t::inproc>;

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + seed) & 0xFF);
  return v;
}

error_code code(dsgd::errc e) { return dsgd::make_error_code(e); }

}  // namespace

BOOST_AUTO_TEST_SUITE(transport_contract)

BOOST_AUTO_TEST_CASE_TEMPLATE(connects_with_proven_identities, T, models) {
  pair_fixture<T> f;
  f.listen();
  BOOST_TEST(f.address().port != 0);
  auto [ec, conn] = f.connect();
  BOOST_REQUIRE(!ec);
  BOOST_REQUIRE_EQUAL(f.accepted.size(), 1u);
  BOOST_TEST(conn->peer_identity() == "ps:0");
  BOOST_TEST(f.accepted[0]->peer_identity() == "worker:0");
  BOOST_TEST(conn->is_open());
  BOOST_TEST(conn->close_reason().empty());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(frames_arrive_in_order_chunked_by_chunk_bytes, T, models) {
  pair_fixture<T> f;
  f.listen();
  auto o = f.options("worker:0");
  o.chunk_bytes = 1000;
  auto [ec, conn] = f.connect(o);
  BOOST_REQUIRE(!ec);
  auto& server = *f.accepted.at(0);

  const auto a = pattern(2500, 1), b = pattern(10, 2), c = pattern(3000, 3);
  t::frame_header ha{.type = 3, .variable = 7, .step = 11};
  t::frame_header hb{.type = 4, .variable = 8};
  t::frame_header hc{.type = 5, .flags = t::frame_flags::control};
  auto sa = f.send(*conn, ha, asio::buffer(a));
  // A gather of two buffers is one message.
  std::array<asio::const_buffer, 2> split{asio::buffer(b.data(), 4), asio::buffer(b.data() + 4, 6)};
  auto sb = f.send(*conn, hb, split);
  auto sc = f.send(*conn, hc, asio::buffer(c));

  std::vector<std::byte> ra(a.size()), rb(b.size()), rc(c.size());
  const auto fa = f.receive_message(server, asio::buffer(ra));
  BOOST_REQUIRE_EQUAL(fa.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    BOOST_TEST(!fa[i].ec);
    BOOST_TEST(fa[i].h.type == 3);
    BOOST_TEST(fa[i].h.variable == 7u);
    BOOST_TEST(fa[i].h.step == 11u);
    BOOST_TEST(fa[i].h.chunk_offset == 1000 * i);
    BOOST_TEST(fa[i].h.payload_length == (i < 2 ? 1000u : 500u));
    BOOST_TEST(fa[i].h.total_length == 2500u);
  }
  BOOST_TEST(ra == a);
  const auto fb = f.receive_message(server, asio::buffer(rb));
  BOOST_REQUIRE_EQUAL(fb.size(), 1u);
  BOOST_TEST(fb[0].h.type == 4);
  BOOST_TEST(rb == b);
  // A control message is never chunked, however large.
  const auto fc = f.receive_message(server, asio::buffer(rc));
  BOOST_REQUIRE_EQUAL(fc.size(), 1u);
  BOOST_TEST(fc[0].h.payload_length == 3000u);
  BOOST_TEST((fc[0].h.flags & t::frame_flags::control) != 0);
  BOOST_TEST(rc == c);
  BOOST_REQUIRE(dsgd::test::run_until(f.ioc, [&] { return sa->has_value() && sb->has_value() && sc->has_value(); }));
  BOOST_TEST(!**sa);
  BOOST_TEST(!**sb);
  BOOST_TEST(!**sc);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(an_empty_message_is_one_frame, T, models) {
  pair_fixture<T> f;
  f.listen();
  auto [ec, conn] = f.connect();
  BOOST_REQUIRE(!ec);
  auto sent = f.send(*conn, t::frame_header{.type = 9}, asio::const_buffer{});
  const auto r = f.receive_frame(*f.accepted.at(0), asio::mutable_buffer{});
  BOOST_TEST(!r.ec);
  BOOST_TEST(r.h.type == 9);
  BOOST_TEST(r.h.payload_length == 0u);
  BOOST_TEST(r.h.last_chunk());
  BOOST_REQUIRE(dsgd::test::run_until(f.ioc, [&] { return sent->has_value(); }));
  BOOST_TEST(!**sent);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_header_over_the_receivers_caps_never_reaches_the_sink, T, models) {
  pair_fixture<T> f;
  auto so = f.options("ps:0");
  so.caps.max_total_bytes = 100;
  so.caps.max_payload_bytes = 100;
  f.listen(so);
  auto [ec, conn] = f.connect();
  BOOST_REQUIRE(!ec);
  const auto big = pattern(200, 4);
  f.send(*conn, t::frame_header{.type = 3}, asio::buffer(big));
  bool sink_called = false;
  std::optional<dsgd::test::received> r;
  auto& server = *f.accepted.at(0);
  server.async_receive(
      [&](const t::frame_header&, error_code&) {
        sink_called = true;
        return asio::mutable_buffer{};
      },
      [&](error_code e, t::frame_header h) {
        r = dsgd::test::received{e, h};
      });
  BOOST_REQUIRE(dsgd::test::run_until(f.ioc, [&] { return r.has_value(); }));
  BOOST_TEST(r->ec == code(dsgd::errc::bad_frame));
  BOOST_TEST(!sink_called);
  BOOST_TEST(!server.is_open());
  // The sender sees the connection go.
  std::vector<std::byte> none;
  const auto peer = f.receive_frame(*conn, asio::buffer(none));
  BOOST_TEST(bool(peer.ec));
  // TCP may report a reset instead (the receiver closed with the payload unread).
  if constexpr (std::is_same_v<T, t::inproc>) BOOST_TEST(peer.ec == asio::error::eof);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_sinks_error_closes_the_connection, T, models) {
  pair_fixture<T> f;
  f.listen();
  auto [ec, conn] = f.connect();
  BOOST_REQUIRE(!ec);
  const auto bytes = pattern(64, 5);
  f.send(*conn, t::frame_header{.type = 3, .variable = 1}, asio::buffer(bytes));
  std::optional<dsgd::test::received> r;
  auto& server = *f.accepted.at(0);
  server.async_receive(
      [](const t::frame_header&, error_code& e) {
        e = code(dsgd::errc::not_found);
        return asio::mutable_buffer{};
      },
      [&](error_code e, t::frame_header h) {
        r = dsgd::test::received{e, h};
      });
  BOOST_REQUIRE(dsgd::test::run_until(f.ioc, [&] { return r.has_value(); }));
  BOOST_TEST(r->ec == code(dsgd::errc::not_found));
  BOOST_TEST(r->h.variable == 1u);
  BOOST_TEST(!server.is_open());
  BOOST_TEST(!server.close_reason().empty());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(close_aborts_here_and_ends_the_peers_receive, T, models) {
  pair_fixture<T> f;
  f.listen();
  auto [ec, conn] = f.connect();
  BOOST_REQUIRE(!ec);
  auto& server = *f.accepted.at(0);
  std::optional<dsgd::test::received> mine, theirs;
  conn->async_receive([](const t::frame_header&, error_code&) { return asio::mutable_buffer{}; },
                      [&](error_code e, t::frame_header h) {
                        mine = dsgd::test::received{e, h};
                      });
  server.async_receive([](const t::frame_header&, error_code&) { return asio::mutable_buffer{}; },
                       [&](error_code e, t::frame_header h) {
                         theirs = dsgd::test::received{e, h};
                       });
  conn->close();
  BOOST_TEST(!conn->is_open());
  BOOST_REQUIRE(dsgd::test::run_until(f.ioc, [&] { return mine.has_value() && theirs.has_value(); }));
  BOOST_TEST(mine->ec == asio::error::operation_aborted);
  BOOST_TEST(theirs->ec == asio::error::eof);
  BOOST_TEST(!server.is_open());
  // A send after close fails, and nothing is sent.
  auto late = f.send(*conn, t::frame_header{.type = 3}, asio::const_buffer{});
  BOOST_REQUIRE(dsgd::test::run_until(f.ioc, [&] { return late->has_value(); }));
  BOOST_TEST(bool(**late));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_wrong_token_fails_the_handshake, T, models) {
  pair_fixture<T> f;
  f.listen();
  auto [ec, conn] = f.connect(f.options("worker:0", "not the token"));
  BOOST_TEST(ec == code(dsgd::errc::handshake_failed));
  BOOST_TEST(!conn);
  BOOST_TEST(f.accepted.empty());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_refused_identity_fails_the_handshake, T, models) {
  pair_fixture<T> f;
  auto so = f.options("ps:0");
  so.accept_peer = [](std::string_view who) { return who == "worker:1"; };
  f.listen(so);
  auto [ec, conn] = f.connect(f.options("worker:0"));
  BOOST_TEST(ec == code(dsgd::errc::handshake_failed));
  auto [ok, conn1] = f.connect(f.options("worker:1"));
  BOOST_TEST(!ok);
  BOOST_REQUIRE_EQUAL(f.accepted.size(), 1u);
  BOOST_TEST(f.accepted[0]->peer_identity() == "worker:1");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
