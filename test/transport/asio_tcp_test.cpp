// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/transport/asio_tcp.hpp> over loopback TCP (127.0.0.1, port 0), all driven
// from one io_context on the test thread, every wait bounded.
#include <dsgd/transport/asio_tcp.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <support/loopback_listener.hpp>
#include <support/run_until.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace t = dsgd::transport;
using dsgd::error_code;
using namespace std::chrono_literals;

static_assert(t::ReceiveSink<decltype([](const t::frame_header&, error_code&) {
  return asio::mutable_buffer{};
})>);
static_assert(!t::ReceiveSink<int>);

namespace {

constexpr const char* token = "correct horse battery staple";

dsgd::error_code code(dsgd::errc e) { return dsgd::make_error_code(e); }

using dsgd::test::run_until;

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  std::mt19937_64 rng(seed);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const auto w = rng();
    std::memcpy(v.data() + i, &w, 8);
  }
  for (; i < n; ++i) v[i] = static_cast<std::byte>(rng());
  return v;
}

// A listener on 127.0.0.1:0 collecting its authenticated connections and its log lines.
struct cluster_fixture : dsgd::test::loopback_listener {
  std::vector<std::string> server_log;

  t::tcp_options server_options() {
    t::tcp_options o;
    o.identity = "ps:0";
    o.token = token;
    o.handshake_timeout = 2s;
    o.log = [this](std::string_view line) { server_log.emplace_back(line); };
    return o;
  }

  static t::tcp_options client_options(std::string identity = "worker:0",
                                       std::string tok = token) {
    t::tcp_options o;
    o.identity = std::move(identity);
    o.token = std::move(tok);
    o.handshake_timeout = 2s;
    o.log = [](std::string_view) {};
    return o;
  }

  cluster_fixture() { listen(server_options()); }

  bool log_mentions(const std::string& what) const {
    return std::any_of(server_log.begin(), server_log.end(), [&](const std::string& line) {
      return line.find(what) != std::string::npos;
    });
  }

  // A raw socket to the listener, for speaking malformed protocol by hand.
  asio::ip::tcp::socket raw_socket() {
    asio::ip::tcp::socket s(ioc);
    s.connect(listener->local_endpoint());
    return s;
  }

  error_code raw_write(asio::ip::tcp::socket& s, asio::const_buffer b) {
    std::optional<error_code> r;
    asio::async_write(s, b, [&](error_code ec, std::size_t) { r = ec; });
    BOOST_REQUIRE(run_until(ioc, [&] { return r.has_value(); }));
    return *r;
  }

  error_code raw_read(asio::ip::tcp::socket& s, asio::mutable_buffer b) {
    std::optional<error_code> r;
    asio::async_read(s, b, [&](error_code ec, std::size_t) { r = ec; });
    BOOST_REQUIRE(run_until(ioc, [&] { return r.has_value(); }));
    return *r;
  }

  // Completes the handshake by hand on @p s as initiator, so bad frames can follow.
  void raw_handshake(asio::ip::tcp::socket& s) {
    t::handshake hs(t::handshake::role::initiator, "worker:7", token);
    t::handshake::hello_bytes peer{};
    t::handshake::proof_bytes proof{};
    std::string reason;
    BOOST_REQUIRE(!raw_write(s, asio::buffer(hs.hello())));
    BOOST_REQUIRE(!raw_read(s, asio::buffer(peer)));
    BOOST_REQUIRE(!hs.receive_hello(peer, reason));
    const auto mine = hs.proof();
    BOOST_REQUIRE(!raw_write(s, asio::buffer(mine)));
    BOOST_REQUIRE(!raw_read(s, asio::buffer(proof)));
    BOOST_REQUIRE(!hs.verify_proof(proof, reason));
    BOOST_REQUIRE(run_until(ioc, [&] { return !accepted.empty(); }));
  }

  // The server side is expected to close @p s: reading from it ends in eof or a reset.
  void expect_closed_by_server(asio::ip::tcp::socket& s) {
    std::array<std::byte, 256> sink{};
    auto ec = raw_read(s, asio::buffer(sink));
    BOOST_TEST((ec == asio::error::eof || ec == asio::error::connection_reset), ec.message());
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(transport_asio_tcp, cluster_fixture)

BOOST_AUTO_TEST_CASE(the_listener_binds_exactly_the_requested_address) {
  BOOST_TEST(listener->local_endpoint().address().to_string() == "127.0.0.1");
  BOOST_TEST(listener->local_endpoint().port() != 0);
}

BOOST_AUTO_TEST_CASE(peers_with_the_cluster_token_connect_and_learn_each_others_identity) {
  auto [ec, conn] = connect(client_options("worker:3"));
  BOOST_TEST(!ec, ec.message());
  BOOST_REQUIRE(conn);
  BOOST_TEST(conn->authenticated());
  BOOST_TEST(conn->peer_identity() == "ps:0");
  BOOST_REQUIRE(run_until(ioc, [&] { return accepted.size() == 1; }));
  BOOST_TEST(accepted[0]->peer_identity() == "worker:3");
}

BOOST_AUTO_TEST_CASE(a_wrong_token_is_rejected_and_the_server_keeps_serving) {
  auto [ec, conn] = connect(client_options("worker:1", "wrong token"));
  BOOST_TEST(ec == code(dsgd::errc::handshake_failed), ec.message());
  BOOST_TEST(!conn);
  BOOST_REQUIRE(run_until(ioc, [&] { return listener->rejected() == 1; }));
  BOOST_TEST(log_mentions("wrong cluster token"));
  BOOST_TEST(accepted.empty());

  auto [ec2, good] = connect(client_options("worker:2"));
  BOOST_TEST(!ec2, ec2.message());
  BOOST_REQUIRE(run_until(ioc, [&] { return accepted.size() == 1; }));
}

BOOST_AUTO_TEST_CASE(an_unknown_identity_is_rejected) {
  listener->close();
  auto o = server_options();
  o.accept_peer = [](std::string_view id) { return id.starts_with("worker:"); };
  listen(std::move(o));
  auto [ec, conn] = connect(client_options("intruder:0"));
  BOOST_TEST(ec == code(dsgd::errc::handshake_failed));
  BOOST_REQUIRE(run_until(ioc, [&] { return listener->rejected() == 1; }));
  BOOST_TEST(log_mentions("unknown peer identity 'intruder:0'"));
}

BOOST_AUTO_TEST_CASE(a_peer_speaking_another_protocol_version_is_rejected) {
  auto s = raw_socket();
  std::array<unsigned char, t::handshake::nonce_size> nonce{};
  auto hello = t::handshake::encode_hello(2, t::handshake::role::initiator, "worker:0", nonce);
  BOOST_TEST(!raw_write(s, asio::buffer(hello)));
  expect_closed_by_server(s);
  BOOST_TEST(log_mentions("protocol version 2"));
  BOOST_TEST(listener->rejected() == 1u);
}

BOOST_AUTO_TEST_CASE(garbage_instead_of_a_handshake_is_rejected_and_the_server_keeps_serving) {
  auto s = raw_socket();
  auto junk = random_bytes(300, 1);
  raw_write(s, asio::buffer(junk));  // the server may close before all of it is written
  expect_closed_by_server(s);
  BOOST_TEST(log_mentions("magic"));
  BOOST_TEST(accepted.empty());
  auto [ec, good] = connect(client_options());
  BOOST_TEST(!ec, ec.message());
}

BOOST_AUTO_TEST_CASE(a_silent_peer_is_dropped_after_the_handshake_deadline) {
  listener->close();
  auto o = server_options();
  o.handshake_timeout = 300ms;
  listen(std::move(o));
  auto s = raw_socket();
  const auto start = std::chrono::steady_clock::now();
  expect_closed_by_server(s);
  BOOST_TEST((std::chrono::steady_clock::now() - start >= 250ms));
  BOOST_TEST(log_mentions("timed out"));
}

BOOST_AUTO_TEST_CASE(a_garbage_frame_after_the_handshake_never_reaches_the_sink) {
  auto s = raw_socket();
  raw_handshake(s);
  bool sink_called = false;
  std::optional<error_code> result;
  accepted[0]->async_receive(
      [&](const t::frame_header&, error_code&) {
        sink_called = true;
        return asio::mutable_buffer{};
      },
      [&](error_code ec, t::frame_header) { result = ec; });
  auto junk = random_bytes(t::frame_header_size, 2);
  BOOST_TEST(!raw_write(s, asio::buffer(junk)));
  BOOST_REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
  BOOST_TEST(*result == code(dsgd::errc::bad_frame));
  BOOST_TEST(!sink_called);
  BOOST_TEST(log_mentions("malformed frame header: bad magic"));
  BOOST_TEST(!accepted[0]->is_open());
  expect_closed_by_server(s);
}

BOOST_AUTO_TEST_CASE(an_oversized_length_is_rejected_before_anything_is_allocated) {
  auto s = raw_socket();
  raw_handshake(s);
  bool sink_called = false;
  std::optional<error_code> result;
  accepted[0]->async_receive(
      [&](const t::frame_header&, error_code&) {
        sink_called = true;
        return asio::mutable_buffer{};
      },
      [&](error_code ec, t::frame_header) { result = ec; });
  auto header = t::encode({.payload_length = 1ull << 40, .total_length = 1ull << 40});
  BOOST_TEST(!raw_write(s, asio::buffer(header)));
  BOOST_REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
  BOOST_TEST(*result == code(dsgd::errc::bad_frame));
  BOOST_TEST(!sink_called);
  BOOST_TEST(log_mentions("payload length 1099511627776 exceeds the cap"));
}

BOOST_AUTO_TEST_CASE(payload_checksums_follow_the_policy_and_the_peer_address) {
  struct expectation {
    t::payload_checksums policy;
    bool sent;
  };
  // The listener is on 127.0.0.1: `remote` leaves loopback frames without a payload CRC.
  for (auto [policy, sent] : {expectation{t::payload_checksums::remote, false},
                              expectation{t::payload_checksums::always, true},
                              expectation{t::payload_checksums::never, false}}) {
    auto o = client_options();
    o.checksum_payloads = policy;
    const auto before = accepted.size();
    auto [ec, client] = connect(o);
    BOOST_REQUIRE(!ec);
    BOOST_REQUIRE(run_until(ioc, [&] { return accepted.size() == before + 1; }));
    BOOST_TEST(client->checksums_payloads() == sent);
    const auto payload = random_bytes(4096, 5);
    std::vector<std::byte> dest(payload.size());
    std::optional<t::frame_header> got;
    accepted.back()->async_receive([&](const t::frame_header&, error_code&) { return asio::buffer(dest); },
                                   [&](error_code e, t::frame_header h) {
                                     BOOST_TEST(!e);
                                     got = h;
                                   });
    client->async_send(t::frame_header{.type = 3}, asio::buffer(payload), [](error_code e) { BOOST_TEST(!e); });
    BOOST_REQUIRE(run_until(ioc, [&] { return got.has_value(); }));
    BOOST_TEST(((got->flags & t::frame_flags::payload_crc) != 0) == sent);
    BOOST_TEST((dest == payload));
    client->close();
    accepted.back()->close();
  }
}

BOOST_AUTO_TEST_CASE(a_corrupted_payload_fails_its_checksum) {
  auto s = raw_socket();
  raw_handshake(s);
  std::vector<std::byte> payload = random_bytes(1000, 3), dest(1000);
  t::frame_header h{.flags = t::frame_flags::payload_crc, .payload_length = 1000,
                    .total_length = 1000};
  h.payload_crc = t::crc32c(payload) ^ 1u;
  auto header = t::encode(h);
  std::optional<error_code> result;
  accepted[0]->async_receive(
      [&](const t::frame_header&, error_code&) { return asio::buffer(dest); },
      [&](error_code ec, t::frame_header) { result = ec; });
  BOOST_TEST(!raw_write(s, asio::buffer(header)));
  BOOST_TEST(!raw_write(s, asio::buffer(payload)));
  BOOST_REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
  BOOST_TEST(*result == code(dsgd::errc::bad_frame));
  BOOST_TEST(log_mentions("payload checksum mismatch"));
}

BOOST_AUTO_TEST_CASE(a_100_mb_payload_lands_in_the_supplied_buffer_and_echoes_back) {
  constexpr std::size_t size = 100'000'000;
  listener->close();
  auto so = server_options();
  so.chunk_bytes = 128u << 20;  // the echo goes back as one frame too
  listen(std::move(so));
  auto o = client_options();
  o.chunk_bytes = 128u << 20;  // one frame: the sink is asked exactly once per direction
  auto [ec, client] = connect(o);
  BOOST_REQUIRE(!ec);
  BOOST_REQUIRE(run_until(ioc, [&] { return accepted.size() == 1; }));
  auto server = accepted[0];

  const auto src = random_bytes(size, 4);
  std::vector<std::byte> at_server(size), back_at_client(size);
  std::vector<const void*> supplied;
  auto sink_into = [&](std::vector<std::byte>& dest) {
    return [&dest, &supplied](const t::frame_header& h, error_code&) {
      auto b = asio::buffer(dest.data(), static_cast<std::size_t>(h.payload_length));
      supplied.push_back(b.data());
      return b;
    };
  };

  const auto start = std::chrono::steady_clock::now();
  std::optional<error_code> sent, received, echoed, returned;
  t::frame_header got{};
  server->async_receive(sink_into(at_server), [&](error_code e, t::frame_header h) {
    received = e;
    got = h;
    server->async_send(t::frame_header{.type = 9}, asio::buffer(at_server),
                       [&](error_code e2) { echoed = e2; });
  });
  client->async_receive(sink_into(back_at_client),
                        [&](error_code e, t::frame_header) { returned = e; });
  client->async_send(t::frame_header{.type = 2, .variable = 5, .step = 11}, asio::buffer(src),
                     [&](error_code e) { sent = e; });
  BOOST_REQUIRE(run_until(ioc, [&] { return returned.has_value(); }, 60s));
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  BOOST_TEST_MESSAGE("100 MB round trip on loopback: " << seconds.count() << " s, "
                                                        << 2 * size / 1e6 / seconds.count()
                                                        << " MB/s");
  BOOST_TEST(!*sent);
  BOOST_TEST(!*received);
  BOOST_TEST(!*returned);
  BOOST_TEST(got.variable == 5u);
  BOOST_TEST(got.step == 11u);
  BOOST_TEST(got.payload_length == size);
  BOOST_REQUIRE(supplied.size() == 2u);
  BOOST_TEST(supplied[0] == static_cast<const void*>(at_server.data()));
  BOOST_TEST(supplied[1] == static_cast<const void*>(back_at_client.data()));
  BOOST_TEST((at_server == src));
  BOOST_TEST((back_at_client == src));
}

BOOST_AUTO_TEST_CASE(a_chunked_message_from_several_buffers_is_reassembled_in_order) {
  constexpr std::size_t chunk = 1u << 20;
  auto o = client_options();
  o.chunk_bytes = chunk;
  auto [ec, client] = connect(o);
  BOOST_REQUIRE(!ec);
  BOOST_REQUIRE(run_until(ioc, [&] { return accepted.size() == 1; }));
  auto server = accepted[0];

  // Two caller buffers whose boundary falls inside a chunk.
  const auto a = random_bytes(3 * chunk + 1234, 5), b = random_bytes(6 * chunk + 77, 6);
  const std::size_t total = a.size() + b.size();
  std::vector<std::byte> dest(total);
  std::vector<std::uint64_t> offsets;
  std::optional<error_code> failed;
  bool complete = false;
  std::function<void()> receive_next = [&] {
    server->async_receive(
        [&](const t::frame_header& h, error_code& e) {
          return t::chunk_destination(asio::buffer(dest), h, e);
        },
        [&](error_code e, t::frame_header h) {
          if (e) return void(failed = e);
          offsets.push_back(h.chunk_offset);
          if (h.last_chunk()) complete = true;
          else receive_next();
        });
  };
  receive_next();
  std::optional<error_code> sent;
  std::array<asio::const_buffer, 2> parts{asio::buffer(a), asio::buffer(b)};
  client->async_send(t::frame_header{.type = 1}, parts, [&](error_code e) { sent = e; });
  BOOST_REQUIRE(run_until(ioc, [&] { return complete || failed.has_value(); }));
  BOOST_TEST(!failed.has_value());
  BOOST_REQUIRE(run_until(ioc, [&] { return sent.has_value(); }));
  BOOST_TEST(!*sent);
  BOOST_TEST(offsets.size() == (total + chunk - 1) / chunk);
  for (std::size_t i = 0; i < offsets.size(); ++i) BOOST_TEST(offsets[i] == i * chunk);
  BOOST_TEST(std::equal(a.begin(), a.end(), dest.begin()));
  BOOST_TEST(std::equal(b.begin(), b.end(), dest.begin() + a.size()));

  // A clean close by the client ends the server's next receive with eof.
  std::optional<error_code> after;
  server->async_receive([](const t::frame_header&, error_code&) { return asio::mutable_buffer{}; },
                        [&](error_code e, t::frame_header) { after = e; });
  client->close();
  BOOST_REQUIRE(run_until(ioc, [&] { return after.has_value(); }));
  BOOST_TEST(*after == error_code(asio::error::eof));
}

BOOST_AUTO_TEST_CASE(a_full_send_queue_refuses_more_instead_of_growing) {
  auto o = client_options();
  o.max_queued_sends = 4;
  auto [ec, client] = connect(o);
  BOOST_REQUIRE(!ec);
  const auto payload = random_bytes(1u << 20, 7);
  std::vector<error_code> results;
  for (int i = 0; i < 8; ++i)
    client->async_send(t::frame_header{.type = 1}, asio::buffer(payload),
                       [&](error_code e) { results.push_back(e); });
  BOOST_TEST(client->queued_sends() == 4u);  // four taken, four refused at once
  BOOST_REQUIRE(run_until(ioc, [&] { return results.size() >= 4; }));
  BOOST_TEST(std::count(results.begin(), results.end(),
                        error_code(asio::error::no_buffer_space)) == 4);
  BOOST_TEST(client->is_open());
}

BOOST_AUTO_TEST_CASE(a_peer_that_stops_reading_is_dropped_after_the_write_deadline) {
  auto o = client_options();
  o.write_timeout = 500ms;
  o.socket_buffer_bytes = 256 << 10;
  auto [ec, client] = connect(o);
  BOOST_REQUIRE(!ec);
  BOOST_REQUIRE(run_until(ioc, [&] { return accepted.size() == 1; }));
  // The server never receives, so the kernel buffers fill and the writer stalls.
  const auto payload = random_bytes(64u << 20, 8);
  std::optional<error_code> result;
  client->async_send(t::frame_header{.type = 1}, asio::buffer(payload),
                     [&](error_code e) { result = e; });
  BOOST_REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
  BOOST_TEST(*result == code(dsgd::errc::timed_out));
  BOOST_TEST(!client->is_open());
  BOOST_TEST(client->close_reason().find("peer not reading") != std::string::npos);
  BOOST_TEST(client->queued_bytes() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
