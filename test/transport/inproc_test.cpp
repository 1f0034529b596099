// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/transport/inproc.hpp>: addressing on a hub, the handshake's checks, chunking
// and the single copy, caps and sinks, close, the bounded send queue, an unreachable address,
// a context destroyed with operations pending, and two tasks on two threads each running its
// own io_context (also run under ThreadSanitizer). No sockets, no sleeps.
#include <dsgd/transport/inproc.hpp>

#include "pair_fixture.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/test/unit_test.hpp>

#include <array>
#include <cstddef>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(inproc_test)

namespace asio = boost::asio;
namespace t = dsgd::transport;
using dsgd::error_code;
using dsgd::test::run_until;
using fixture = dsgd::test::pair_fixture<t::inproc>;

namespace {

error_code code(dsgd::errc e) { return dsgd::make_error_code(e); }

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 37 + seed) & 0xFF);
  return v;
}

std::optional<std::pair<error_code, std::shared_ptr<t::inproc_connection>>> connect_now(fixture& f,
                                                                                        const std::string& to,
                                                                                        t::tcp_options o) {
  std::optional<std::pair<error_code, std::shared_ptr<t::inproc_connection>>> r;
  f.net.async_connect(f.ioc.get_executor(), to, std::move(o),
                      [&](error_code ec, std::shared_ptr<t::inproc_connection> c) { r.emplace(ec, std::move(c)); });
  BOOST_REQUIRE(run_until(f.ioc, [&] { return r.has_value(); }));
  return r;
}

// Receives messages on @p conn one after another, each whole into @p incoming (sized by its first
// chunk): after each message's last chunk calls on_message(header), which says whether to
// receive the next; on the first error calls on_end(error).
template <class OnMessage, class OnEnd>
void receive_messages(t::inproc_connection& conn, std::vector<std::byte>& incoming, OnMessage on_message,
                      OnEnd on_end) {
  conn.async_receive(
      [&incoming](const t::frame_header& h, error_code& ec) {
        if (h.chunk_offset == 0) incoming.assign(h.total_length, std::byte{0});
        return t::chunk_destination(asio::buffer(incoming), h, ec);
      },
      [&conn, &incoming, on_message, on_end](error_code ec, t::frame_header h) {
        if (ec) return on_end(ec);
        if (h.last_chunk() && !on_message(h)) return;
        receive_messages(conn, incoming, on_message, on_end);
      });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(inproc)

BOOST_AUTO_TEST_CASE(a_null_hub_is_refused) { BOOST_CHECK_THROW(t::inproc{nullptr}, dsgd::error); }

BOOST_AUTO_TEST_CASE(listeners_bind_addresses_on_their_hub) {
  fixture f;
  f.listen();
  BOOST_TEST(f.address().host == "127.0.0.1");
  BOOST_TEST(f.address().port != 0);
  BOOST_TEST(f.net.hub()->listeners() == 1u);
  // The same address twice is refused; port 0 picks another.
  BOOST_CHECK_THROW(f.net.listen(f.ioc.get_executor(), f.address(), f.options("ps:1")), dsgd::error);
  auto other = f.net.listen(f.ioc.get_executor(), dsgd::cluster::task_address{"127.0.0.1", 0}, f.options("ps:1"));
  BOOST_TEST(other->local_address().port != f.address().port);
  // An address string names a fixed port.
  auto fixed = f.net.listen(f.ioc.get_executor(), "127.0.0.1:7000", f.options("ps:2"));
  BOOST_TEST(fixed->local_address().port == 7000);
  fixed.reset();
  // Another hub is another cluster: the address is free there.
  t::inproc elsewhere{t::inproc_hub::create()};
  auto there = elsewhere.listen(f.ioc.get_executor(), f.address(), f.options("ps:0"));
  BOOST_TEST(there->local_address().port == f.address().port);
  // Closing (or destroying) a listener frees its address.
  other->close();
  BOOST_TEST(f.net.hub()->listeners() == 1u);
  there.reset();
  BOOST_TEST(elsewhere.hub()->listeners() == 0u);
}

BOOST_AUTO_TEST_CASE(connects_by_address_string_with_identities_and_no_shared_memory) {
  fixture f;
  f.listen();
  auto r = connect_now(f, f.address().to_string(), f.options("worker:3"));
  BOOST_REQUIRE(!r->first);
  BOOST_REQUIRE(run_until(f.ioc, [&] { return f.accepted.size() == 1; }));
  auto& c = *r->second;
  BOOST_TEST(c.peer_identity() == "ps:0");
  BOOST_TEST(f.accepted[0]->peer_identity() == "worker:3");
  // No shared memory in one process: the connection lacks the capability, and the ps asks false.
  static_assert(!dsgd::transport::shares_memory<dsgd::transport::inproc_connection>);
  BOOST_TEST(!dsgd::transport::receives_through_shared_memory(*f.accepted[0]));
  BOOST_TEST(c.options().identity == "worker:3");
}

BOOST_AUTO_TEST_CASE(nobody_listening_is_refused_at_once) {
  fixture f;
  auto r = connect_now(f, "127.0.0.1:5", f.options("worker:0"));
  BOOST_TEST(r->first == asio::error::connection_refused);
  BOOST_TEST(!r->second);
  // After close the address refuses too, so a client's retry loop sees the same as with TCP.
  f.listen();
  const auto at = f.address().to_string();
  f.listener->close();
  r = connect_now(f, at, f.options("worker:0"));
  BOOST_TEST(r->first == asio::error::connection_refused);
}

BOOST_AUTO_TEST_CASE(connections_made_before_start_wait_for_it) {
  fixture f;
  f.listener = f.net.listen(f.ioc.get_executor(), dsgd::cluster::task_address{"127.0.0.1", 0}, f.options("ps:0"));
  std::optional<error_code> result;
  f.net.async_connect(f.ioc.get_executor(), f.address(), f.options("worker:0"),
                      [&](error_code ec, std::shared_ptr<t::inproc_connection>) { result = ec; });
  f.ioc.restart();
  f.ioc.poll();
  BOOST_TEST(!result.has_value());
  f.listener->start([&](std::shared_ptr<t::inproc_connection> c) { f.accepted.push_back(std::move(c)); });
  BOOST_REQUIRE(run_until(f.ioc, [&] { return result.has_value(); }));
  BOOST_TEST(!*result);
  BOOST_TEST(f.accepted.size() == 1u);
}

BOOST_AUTO_TEST_CASE(the_handshake_checks_token_identities_and_both_sides_accept_peer) {
  fixture f;
  auto so = f.options("ps:0");
  so.accept_peer = [](std::string_view who) { return who != "worker:9"; };
  f.listen(so);
  auto& l = *f.listener;
  BOOST_TEST(f.connect(f.options("worker:0", "wrong")).first == code(dsgd::errc::handshake_failed));
  BOOST_TEST(l.rejected() == 1u);
  BOOST_TEST(f.connect(f.options("worker:9")).first == code(dsgd::errc::handshake_failed));
  BOOST_TEST(l.rejected() == 2u);
  // The connector refuses the listener's identity.
  auto co = f.options("worker:0");
  co.accept_peer = [](std::string_view who) { return who == "ps:1"; };
  BOOST_TEST(f.connect(co).first == code(dsgd::errc::handshake_failed));
  BOOST_TEST(l.rejected() == 3u);
  // An own identity the handshake would refuse (empty, with a space) is an invalid argument.
  BOOST_TEST(f.connect(f.options("")).first == code(dsgd::errc::invalid_argument));
  BOOST_TEST(f.connect(f.options("a b")).first == code(dsgd::errc::invalid_argument));
  BOOST_TEST(f.accepted.empty());
  BOOST_TEST(!f.connect(f.options("worker:0")).first);
}

BOOST_AUTO_TEST_CASE(a_send_completes_once_its_last_chunk_is_received) {
  fixture f;
  auto o = f.options("worker:0");
  o.chunk_bytes = 100;
  auto conn = f.connected(o);
  const auto bytes = pattern(250, 1);
  auto sent = f.send(*conn, t::frame_header{.type = 3}, asio::buffer(bytes));
  std::vector<std::byte> into(bytes.size());
  auto& server = *f.accepted.at(0);
  BOOST_TEST(conn->queued_sends() == 1u);
  const auto first = f.receive_frame(server, asio::buffer(into));
  BOOST_TEST(first.h.payload_length == 100u);
  f.ioc.restart();
  f.ioc.poll();
  BOOST_TEST(!sent->has_value());  // the sender's buffer is still being read
  f.receive_frame(server, asio::buffer(into));
  const auto last = f.receive_frame(server, asio::buffer(into));
  BOOST_TEST(last.h.chunk_offset == 200u);
  BOOST_TEST(last.h.last_chunk());
  BOOST_REQUIRE(run_until(f.ioc, [&] { return sent->has_value(); }));
  BOOST_TEST(!**sent);
  BOOST_TEST(into == bytes);
  BOOST_TEST(conn->queued_sends() == 0u);
}

BOOST_AUTO_TEST_CASE(a_sink_of_the_wrong_size_closes_the_connection) {
  fixture f;
  auto conn = f.connected();
  const auto bytes = pattern(8, 2);
  f.send(*conn, t::frame_header{.type = 3}, asio::buffer(bytes));
  std::array<std::byte, 4> small{};
  std::optional<error_code> r;
  f.accepted.at(0)->async_receive([&](const t::frame_header&, error_code&) { return asio::buffer(small); },
                                  [&](error_code e, t::frame_header) { r = e; });
  BOOST_REQUIRE(run_until(f.ioc, [&] { return r.has_value(); }));
  BOOST_TEST(*r == code(dsgd::errc::invalid_argument));
  BOOST_TEST(!f.accepted[0]->is_open());
  BOOST_TEST(!conn->is_open());
}

BOOST_AUTO_TEST_CASE(one_receive_at_a_time) {
  fixture f;
  auto conn = f.connected();
  std::optional<error_code> first, second;
  auto sink = [](const t::frame_header&, error_code&) { return asio::mutable_buffer{}; };
  conn->async_receive(sink, [&](error_code e, t::frame_header) { first = e; });
  conn->async_receive(sink, [&](error_code e, t::frame_header) { second = e; });
  BOOST_REQUIRE(run_until(f.ioc, [&] { return second.has_value(); }));
  BOOST_TEST(*second == asio::error::already_started);
  BOOST_TEST(!first.has_value());
  conn->close();
  BOOST_REQUIRE(run_until(f.ioc, [&] { return first.has_value(); }));
  BOOST_TEST(*first == asio::error::operation_aborted);
}

BOOST_AUTO_TEST_CASE(a_full_send_queue_refuses_without_closing) {
  fixture f;
  auto o = f.options("worker:0");
  o.max_queued_sends = 2;
  auto conn = f.connected(o);
  const auto bytes = pattern(16, 3);
  auto a = f.send(*conn, t::frame_header{.type = 1}, asio::buffer(bytes));
  auto b = f.send(*conn, t::frame_header{.type = 2}, asio::buffer(bytes));
  auto c = f.send(*conn, t::frame_header{.type = 3}, asio::buffer(bytes));
  BOOST_REQUIRE(run_until(f.ioc, [&] { return c->has_value(); }));
  BOOST_TEST(**c == asio::error::no_buffer_space);
  BOOST_TEST(conn->is_open());
  std::vector<std::byte> into(bytes.size());
  BOOST_TEST(f.receive_frame(*f.accepted.at(0), asio::buffer(into)).h.type == 1);
  BOOST_TEST(f.receive_frame(*f.accepted.at(0), asio::buffer(into)).h.type == 2);
  BOOST_REQUIRE(run_until(f.ioc, [&] { return a->has_value() && b->has_value(); }));
  BOOST_TEST(!**a);
  BOOST_TEST(!**b);
}

BOOST_AUTO_TEST_CASE(a_send_over_the_senders_caps_is_refused_before_queueing) {
  fixture f;
  auto o = f.options("worker:0");
  o.caps.max_control_bytes = 8;
  auto conn = f.connected(o);
  const auto bytes = pattern(16, 4);
  auto s = f.send(*conn, t::frame_header{.type = 1, .flags = t::frame_flags::control}, asio::buffer(bytes));
  BOOST_REQUIRE(run_until(f.ioc, [&] { return s->has_value(); }));
  BOOST_TEST(**s == code(dsgd::errc::invalid_argument));
  BOOST_TEST(conn->is_open());
}

BOOST_AUTO_TEST_CASE(close_fails_queued_sends_both_ways) {
  fixture f;
  auto conn = f.connected();
  const auto bytes = pattern(16, 5);
  auto mine = f.send(*conn, t::frame_header{.type = 1}, asio::buffer(bytes));
  auto theirs = f.send(*f.accepted.at(0), t::frame_header{.type = 2}, asio::buffer(bytes));
  conn->close();
  BOOST_REQUIRE(run_until(f.ioc, [&] { return mine->has_value() && theirs->has_value(); }));
  BOOST_TEST(**mine == asio::error::operation_aborted);
  BOOST_TEST(**theirs == asio::error::eof);
  BOOST_TEST(f.accepted[0]->close_reason() == "peer closed the connection");
  BOOST_TEST(conn->close_reason() == "closed locally");
}

BOOST_AUTO_TEST_CASE(destroying_the_last_handle_closes_the_connection) {
  fixture f;
  auto conn = f.connected();
  conn.reset();
  BOOST_TEST(!f.accepted.at(0)->is_open());
}

BOOST_AUTO_TEST_CASE(a_destroyed_context_drops_pending_operations_without_calling_them) {
  std::weak_ptr<t::inproc_connection> client_end, server_end;
  bool called = false;
  {
    fixture f;
    auto conn = f.connected();
    client_end = conn;
    server_end = f.accepted.at(0);
    // Each pending handler holds its own connection: a cycle only the context's end breaks.
    auto sink = [](const t::frame_header&, error_code&) { return asio::mutable_buffer{}; };
    conn->async_receive(sink, [&called, c = conn](error_code, t::frame_header) { called = true; });
    f.accepted[0]->async_receive(sink, [&called, c = f.accepted[0]](error_code, t::frame_header) { called = true; });
    f.accepted.clear();
    f.listener.reset();
  }
  BOOST_TEST(!called);
  BOOST_TEST(client_end.expired());
  BOOST_TEST(server_end.expired());
}

// Two tasks, each with its own io_context run by its own thread: the client pipelines messages
// of many sizes (chunked), the server echoes each back whole, then the client closes and both
// contexts run out of work.
BOOST_AUTO_TEST_CASE(two_threads_each_with_its_own_context) {
  auto hub = t::inproc_hub::create();
  t::inproc net{hub};
  asio::io_context server_ctx, client_ctx;
  constexpr int messages = 64;

  struct server_state {
    std::shared_ptr<t::inproc_listener> listener;
    std::shared_ptr<t::inproc_connection> conn;
    std::deque<std::vector<std::byte>> echoes;  // kept until the client closes
    std::vector<std::byte> incoming;
    int received = 0;
    error_code ended;
  } s;
  auto so = fixture::options("ps:0");
  so.chunk_bytes = 300;
  s.listener = net.listen(server_ctx.get_executor(), dsgd::cluster::task_address{"ps.local", 0}, so);
  auto server_work = asio::make_work_guard(server_ctx);
  s.listener->start([&](std::shared_ptr<t::inproc_connection> c) {
    s.conn = std::move(c);
    receive_messages(
        *s.conn, s.incoming,
        [&](const t::frame_header& h) {
          ++s.received;
          s.echoes.push_back(std::move(s.incoming));
          s.conn->async_send(h, asio::buffer(s.echoes.back()), [](error_code) {});
          return true;
        },
        [&](error_code ec) {
          s.ended = ec;
          s.listener->close();
          server_work.reset();
        });
  });

  struct client_state {
    std::shared_ptr<t::inproc_connection> conn;
    std::vector<std::vector<std::byte>> sent, echoed;
    std::vector<std::byte> incoming;
    int sends_done = 0, mismatches = 0;
    error_code failure;
  } c;
  for (int i = 0; i < messages; ++i) c.sent.push_back(pattern(static_cast<std::size_t>(i) * 97, unsigned(i)));
  auto client_receive = [&] {
    receive_messages(
        *c.conn, c.incoming,
        [&](const t::frame_header& h) {
          if (c.incoming != c.sent.at(h.request_id)) ++c.mismatches;
          c.echoed.push_back(std::move(c.incoming));
          if (c.echoed.size() < c.sent.size()) return true;
          c.conn->close();
          return false;
        },
        [&](error_code ec) {
          if (ec != asio::error::operation_aborted) c.failure = ec;
        });
  };
  auto co = fixture::options("worker:0");
  co.chunk_bytes = 500;
  net.async_connect(client_ctx.get_executor(), s.listener->local_address(), co,
                    [&](error_code ec, std::shared_ptr<t::inproc_connection> conn) {
                      if (ec) {
                        c.failure = ec;
                        return;
                      }
                      c.conn = std::move(conn);
                      for (int i = 0; i < messages; ++i)
                        c.conn->async_send(t::frame_header{.type = 3, .request_id = std::uint64_t(i)},
                                           asio::buffer(c.sent[i]), [&](error_code e) {
                                             if (e) c.failure = e;
                                             ++c.sends_done;
                                           });
                      client_receive();
                    });

  std::thread server_thread([&] { server_ctx.run(); });
  std::thread client_thread([&] { client_ctx.run(); });
  client_thread.join();
  server_thread.join();

  BOOST_TEST(!c.failure);
  BOOST_TEST(c.sends_done == messages);
  BOOST_TEST(c.echoed.size() == std::size_t(messages));
  BOOST_TEST(c.mismatches == 0);
  BOOST_TEST(s.received == messages);
  BOOST_TEST(s.ended == asio::error::eof);
  BOOST_TEST(hub->listeners() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
