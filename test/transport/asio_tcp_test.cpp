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
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

BOOST_AUTO_TEST_SUITE(asio_tcp_test)

namespace asio = boost::asio;
namespace t = dsgd::transport;
using dsgd::error_code;
using namespace std::chrono_literals;

static_assert(t::ReceiveSink<decltype([](const t::frame_header&, error_code&) { return asio::mutable_buffer{}; })>);
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

  static t::tcp_options client_options(std::string identity = "worker:0", std::string tok = token) {
    t::tcp_options o;
    o.identity = std::move(identity);
    o.token = std::move(tok);
    o.handshake_timeout = 2s;
    o.log = [](std::string_view) {};
    return o;
  }

  cluster_fixture() { listen(server_options()); }

  bool log_mentions(const std::string& what) const {
    return std::any_of(server_log.begin(), server_log.end(),
                       [&](const std::string& line) { return line.find(what) != std::string::npos; });
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

  // The token part of the handshake by hand on @p s as initiator: hellos and proofs.
  void raw_proofs(asio::ip::tcp::socket& s) {
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
  }

  // Completes the handshake by hand on @p s as initiator, so bad frames can follow.
  void raw_handshake(asio::ip::tcp::socket& s) {
    raw_proofs(s);
    // No shared-memory ring offered, and the server's (if any) declined.
    const auto no_offer = t::detail::ring_offer{}.encode();
    t::detail::ring_offer::bytes_type server_offer{};
    t::detail::ring_answer::bytes_type server_answer{};
    BOOST_REQUIRE(!raw_write(s, asio::buffer(no_offer)));
    BOOST_REQUIRE(!raw_read(s, asio::buffer(server_offer)));
    const auto declined = t::detail::ring_answer::encode(false);
    BOOST_REQUIRE(!raw_write(s, asio::buffer(declined)));
    BOOST_REQUIRE(!raw_read(s, asio::buffer(server_answer)));
    BOOST_REQUIRE(run_until(ioc, [&] { return !accepted.empty(); }));
    BOOST_REQUIRE(!accepted.back()->sends_through_shared_memory());
  }

  // Completes a handshake by hand on a raw socket, then writes @p frame on it while the accepted
  // connection receives: the receive must fail with bad_frame before it asks its sink for a
  // buffer. @returns the socket.
  asio::ip::tcp::socket expect_refused_frame(asio::const_buffer frame) {
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
    BOOST_TEST(!raw_write(s, frame));
    BOOST_REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
    BOOST_TEST(*result == code(dsgd::errc::bad_frame));
    BOOST_TEST(!sink_called);
    return s;
  }

  // Receives one message of any number of chunks into @p dest on @p conn.
  std::optional<error_code> receive_message(t::tcp_connection& conn, std::vector<std::byte>& dest,
                                            std::vector<t::frame_header>* headers = nullptr) {
    std::optional<error_code> result;
    std::function<void()> next = [&] {
      conn.async_receive(
          [&](const t::frame_header& h, error_code& e) { return t::chunk_destination(asio::buffer(dest), h, e); },
          [&](error_code e, t::frame_header h) {
            if (headers && !e) headers->push_back(h);
            if (e || h.last_chunk()) return void(result = e);
            next();
          });
    };
    next();
    if (!run_until(ioc, [&] { return result.has_value(); })) return std::nullopt;
    return result;
  }

  // Sends @p payload from @p from and checks that @p to receives it whole; @returns the headers
  // of the frames it came in.
  std::vector<t::frame_header> expect_delivered(t::tcp_connection& from, t::tcp_connection& to,
                                                const std::vector<std::byte>& payload, std::uint64_t step = 0) {
    std::vector<std::byte> dest(payload.size());
    std::vector<t::frame_header> headers;
    from.async_send(t::frame_header{.type = 1, .step = step}, asio::buffer(payload),
                    [](error_code e) { BOOST_TEST(!e); });
    const auto got = receive_message(to, dest, &headers);
    BOOST_REQUIRE(got.has_value());
    BOOST_TEST(!*got, got->message());
    BOOST_TEST((dest == payload));
    return headers;
  }

  // This process's descriptors of ring segments, through which a peer could still open one
  // (none once every handshake has finished: the mappings stay, the descriptors go), and any
  // dsgd name in /dev/shm (rings have none).
  static std::vector<std::string> open_segments() {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
      std::error_code link_ec;
      const auto target = std::filesystem::read_symlink(e.path(), link_ec).string();
      if (!link_ec && target.starts_with("/memfd:dsgd-ring")) out.push_back(e.path().string() + " -> " + target);
    }
    for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec))
      if (e.path().filename().string().starts_with("dsgd-")) out.push_back(e.path().string());
    return out;
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
  const std::uint16_t other = t::protocol_version + 1;
  auto hello = t::handshake::encode_hello(other, t::handshake::role::initiator, "worker:0", nonce);
  BOOST_TEST(!raw_write(s, asio::buffer(hello)));
  expect_closed_by_server(s);
  BOOST_TEST(log_mentions("protocol version " + std::to_string(other)));
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
  auto junk = random_bytes(t::frame_header_size, 2);
  auto s = expect_refused_frame(asio::buffer(junk));
  BOOST_TEST(log_mentions("malformed frame header: bad magic"));
  BOOST_TEST(!accepted[0]->is_open());
  expect_closed_by_server(s);
}

BOOST_AUTO_TEST_CASE(an_oversized_length_is_rejected_before_anything_is_allocated) {
  auto header = t::encode({.payload_length = 1ull << 40, .total_length = 1ull << 40});
  const auto s = expect_refused_frame(asio::buffer(header));  // open, as the peer keeps it, to the end
  BOOST_TEST(log_mentions("payload length 1099511627776 exceeds the cap"));
}

BOOST_AUTO_TEST_CASE(payload_checksums_follow_the_policy_and_the_peer_address) {
  struct expectation {
    t::payload_checksums policy;
    bool sent;
  };
  // The listener is on 127.0.0.1: `remote` leaves loopback frames without a payload CRC.
  for (auto [policy, sent] :
       {expectation{t::payload_checksums::remote, false}, expectation{t::payload_checksums::always, true},
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
  t::frame_header h{.flags = t::frame_flags::payload_crc, .payload_length = 1000, .total_length = 1000};
  h.payload_crc = t::crc32c(payload) ^ 1u;
  auto header = t::encode(h);
  std::optional<error_code> result;
  accepted[0]->async_receive([&](const t::frame_header&, error_code&) { return asio::buffer(dest); },
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
    server->async_send(t::frame_header{.type = 9}, asio::buffer(at_server), [&](error_code e2) { echoed = e2; });
  });
  client->async_receive(sink_into(back_at_client), [&](error_code e, t::frame_header) { returned = e; });
  client->async_send(t::frame_header{.type = 2, .variable = 5, .step = 11}, asio::buffer(src),
                     [&](error_code e) { sent = e; });
  BOOST_REQUIRE(run_until(
      ioc, [&] { return returned.has_value(); }, 60s));
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  BOOST_TEST_MESSAGE("100 MB round trip on loopback: " << seconds.count() << " s, " << 2 * size / 1e6 / seconds.count()
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
        [&](const t::frame_header& h, error_code& e) { return t::chunk_destination(asio::buffer(dest), h, e); },
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
    client->async_send(t::frame_header{.type = 1}, asio::buffer(payload), [&](error_code e) { results.push_back(e); });
  BOOST_TEST(client->queued_sends() == 4u);  // four taken, four refused at once
  const auto refused = [&] {
    return std::count(results.begin(), results.end(), error_code(asio::error::no_buffer_space));
  };
  BOOST_REQUIRE(run_until(ioc, [&] { return refused() == 4; }));
  BOOST_TEST(results.size() <= 8u);
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
  client->async_send(t::frame_header{.type = 1}, asio::buffer(payload), [&](error_code e) { result = e; });
  BOOST_REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
  BOOST_TEST(*result == code(dsgd::errc::timed_out));
  BOOST_TEST(!client->is_open());
  BOOST_TEST(client->close_reason().find("peer not reading") != std::string::npos);
  BOOST_TEST(client->queued_bytes() == 0u);
}

BOOST_AUTO_TEST_CASE(peers_on_one_host_move_payloads_through_shared_memory_and_leave_no_segment_behind) {
  auto [ec, client] = connect(client_options());
  BOOST_REQUIRE(!ec);
  BOOST_REQUIRE(run_until(ioc, [&] { return accepted.size() == 1; }));
  auto server = accepted[0];
  BOOST_TEST(client->sends_through_shared_memory());
  BOOST_TEST(client->receives_through_shared_memory());
  BOOST_TEST(server->sends_through_shared_memory());
  BOOST_TEST(server->receives_through_shared_memory());
  BOOST_TEST(open_segments().empty());  // both descriptors closed once mapped

  // Ten messages of 2.5 MiB each way through 4 MiB rings: every lap wraps, and a chunk that
  // finds the ring full goes inline; the bytes arrive whole and in order either way.
  std::size_t through_ring = 0, inline_chunks = 0;
  for (unsigned i = 0; i < 10; ++i) {
    const auto payload = random_bytes((5u << 20) / 2 + i, 10 + i);
    const auto headers = expect_delivered(*client, *server, payload, i);
    expect_delivered(*server, *client, payload, i);
    for (const auto& h : headers) ((h.flags & t::frame_flags::shared_memory) ? through_ring : inline_chunks)++;
  }
  BOOST_TEST(through_ring > 0u);
  // Small payloads and control messages stay on the socket.
  const auto headers = expect_delivered(*client, *server, random_bytes(100, 3));
  BOOST_TEST((headers.at(0).flags & t::frame_flags::shared_memory) == 0u);
}

BOOST_AUTO_TEST_CASE(shared_memory_is_used_only_when_both_sides_allow_it) {
  for (bool client_allows : {false, true}) {
    listener->close();
    auto so = server_options();
    so.shared_memory.enabled = client_allows;  // one side refuses in each round
    listen(std::move(so));
    auto o = client_options();
    o.shared_memory.enabled = !client_allows;
    auto [ec, client] = connect(o);
    BOOST_REQUIRE(!ec);
    BOOST_REQUIRE(run_until(ioc, [&] { return !accepted.empty() && accepted.back()->authenticated(); }));
    auto server = accepted.back();
    BOOST_TEST(!client->sends_through_shared_memory());
    BOOST_TEST(!client->receives_through_shared_memory());
    BOOST_TEST(!server->sends_through_shared_memory());
    BOOST_TEST(!server->receives_through_shared_memory());
    const auto headers = expect_delivered(*client, *server, random_bytes(1u << 20, 21));
    BOOST_TEST((headers.at(0).flags & t::frame_flags::shared_memory) == 0u);
    BOOST_TEST(open_segments().empty());
  }
}

BOOST_AUTO_TEST_CASE(a_frame_claiming_shared_memory_that_was_never_set_up_is_a_bad_frame) {
  auto s = raw_socket();
  raw_handshake(s);  // declines the server's ring and offers none
  std::vector<std::byte> dest(4096);
  std::optional<error_code> result;
  accepted[0]->async_receive([&](const t::frame_header&, error_code&) { return asio::buffer(dest); },
                             [&](error_code ec, t::frame_header) { result = ec; });
  auto header = t::encode({.flags = t::frame_flags::shared_memory, .payload_length = 4096, .total_length = 4096});
  BOOST_TEST(!raw_write(s, asio::buffer(header)));
  BOOST_REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
  BOOST_TEST(*result == code(dsgd::errc::bad_frame));
  BOOST_TEST(log_mentions("payload in shared memory, but none was set up"));
  expect_closed_by_server(s);
}

BOOST_AUTO_TEST_CASE(a_malformed_shared_memory_offer_fails_the_handshake_and_names_it) {
  auto s = raw_socket();
  raw_proofs(s);
  // An offer naming something other than a dsgd segment is refused: nothing else is opened.
  t::detail::ring_offer bad{.bytes = 4096, .name = "/etc-passwd-00000000000000000000"};
  const auto bytes = bad.encode();
  BOOST_REQUIRE(!raw_write(s, asio::buffer(bytes)));
  expect_closed_by_server(s);
  BOOST_TEST(log_mentions("shared-memory offer names no dsgd segment"));
  BOOST_TEST(accepted.empty());
  BOOST_TEST(open_segments().empty());  // the server's own ring went with the failed handshake
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(transport_shared_ring)

BOOST_AUTO_TEST_CASE(payloads_wrap_around_the_ring_and_a_full_ring_refuses_instead_of_overwriting) {
  std::string why;
  auto tx = t::detail::shared_ring::create(16384, why);
  BOOST_REQUIRE_MESSAGE(tx.has_value(), why);
  auto rx = t::detail::shared_ring::open(tx->offer(), 1u << 20, why);
  BOOST_REQUIRE_MESSAGE(rx.has_value(), why);
  tx->withdraw();
  std::mt19937 rng(5);
  std::vector<std::vector<std::byte>> in_flight;
  std::size_t refused = 0;
  for (int round = 0; round < 200; ++round) {
    // Write up to three payloads of 1 to 7 KiB, then read all but (sometimes) one.
    for (int k = 0; k < 3; ++k) {
      auto p = random_bytes(1024 + rng() % 6144, static_cast<unsigned>(round * 3 + k));
      std::array<asio::const_buffer, 1> slices{asio::buffer(p)};
      if (tx->try_write(slices, p.size())) in_flight.push_back(std::move(p));
      else ++refused;
    }
    while (in_flight.size() > rng() % 2) {
      std::vector<std::byte> out(in_flight.front().size());
      BOOST_REQUIRE_MESSAGE(rx->read(asio::buffer(out), why), why);
      BOOST_REQUIRE((out == in_flight.front()));
      in_flight.erase(in_flight.begin());
    }
  }
  BOOST_TEST(refused > 0u);
  // More than was written is a broken peer, not a read of stale bytes.
  std::vector<std::byte> out(2048);
  while (!in_flight.empty()) {
    std::vector<std::byte> o(in_flight.front().size());
    BOOST_REQUIRE(rx->read(asio::buffer(o), why));
    in_flight.erase(in_flight.begin());
  }
  BOOST_TEST(!rx->read(asio::buffer(out), why));
  BOOST_TEST(why.find("not in the shared-memory ring") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_segment_is_opened_only_with_its_cookie_and_within_the_size_cap) {
  std::string why;
  auto tx = t::detail::shared_ring::create(8192, why);
  BOOST_REQUIRE(tx.has_value());
  auto forged = tx->offer();
  forged.cookie[0] ^= std::byte{1};
  BOOST_TEST(!t::detail::shared_ring::open(forged, 1u << 20, why).has_value());
  BOOST_TEST(why.find("cookie") != std::string::npos);
  BOOST_TEST(!t::detail::shared_ring::open(tx->offer(), 4096, why).has_value());
  auto wrong_size = tx->offer();
  wrong_size.bytes = 4096;
  BOOST_TEST(!t::detail::shared_ring::open(wrong_size, 1u << 20, why).has_value());
  const auto withdrawn = tx->offer();
  tx->withdraw();
  BOOST_TEST(!t::detail::shared_ring::open(withdrawn, 1u << 20, why).has_value());  // descriptor closed
  BOOST_TEST(why.find("open /proc/") != std::string::npos, why);
  // Only a ring's descriptor is opened: a regular file named by its /proc path is not.
  const auto file = std::filesystem::temp_directory_path() / ("dsgd_ring_file_" + std::to_string(::getpid()));
  const int file_fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  BOOST_REQUIRE(file_fd >= 0);
  BOOST_REQUIRE(::ftruncate(file_fd, static_cast<off_t>(t::detail::shared_ring::header_bytes + 8192)) == 0);
  auto on_disk = withdrawn;
  on_disk.name = "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(file_fd);
  BOOST_TEST(!t::detail::shared_ring::open(on_disk, 1u << 20, why).has_value());
  BOOST_TEST(why.find("not a dsgd ring") != std::string::npos, why);
  ::close(file_fd);
  std::filesystem::remove(file);
  // The offer round-trips through its wire form.
  auto again = t::detail::shared_ring::create(8192, why);
  BOOST_REQUIRE(again.has_value());
  auto decoded = t::detail::ring_offer::decode(again->offer().encode(), why);
  BOOST_REQUIRE(decoded.has_value());
  BOOST_TEST(decoded->name == again->offer().name);
  BOOST_TEST(decoded->bytes == 8192u);
  BOOST_TEST(t::detail::shared_ring::open(*decoded, 1u << 20, why).has_value());
}

// A creator killed between making its ring and its peer opening it (the soak's kill -9 during a
// handshake) leaves nothing: the segment has no name anywhere, the kernel frees it with the
// creator's descriptor, and the peer's open fails, so payloads would go inline. 200 times, a
// child makes a 4 MiB ring, hands over its offer and is killed with SIGKILL; no dsgd name
// appears in /dev/shm, no open succeeds, and the host's shared memory does not grow by the
// 800 MiB the rings would hold had they outlived their creators.
BOOST_AUTO_TEST_CASE(a_creator_killed_before_its_peer_opens_the_ring_leaves_nothing) {
  using ring = t::detail::shared_ring;
  const auto shmem_kib = [] {
    std::FILE* f = std::fopen("/proc/meminfo", "r");
    long kib = -1;
    char line[256];
    while (f && std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "Shmem: %ld kB", &kib) == 1) break;
    if (f) std::fclose(f);
    return kib;
  };
  const long before = shmem_kib();
  std::size_t refused = 0;
  for (int round = 0; round < 200; ++round) {
    int pipe_fds[2];
    BOOST_REQUIRE(::pipe(pipe_fds) == 0);
    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
      std::string why;
      auto r = ring::create(4u << 20, why);
      const auto offer = r ? r->offer().encode() : t::detail::ring_offer{}.encode();
      if (::write(pipe_fds[1], offer.data(), offer.size()) != static_cast<ssize_t>(offer.size())) ::_exit(1);
      ::pause();  // killed here, holding the ring, its peer not yet in
      ::_exit(0);
    }
    ::close(pipe_fds[1]);
    t::detail::ring_offer::bytes_type bytes{};
    BOOST_REQUIRE(::read(pipe_fds[0], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    ::close(pipe_fds[0]);
    ::kill(child, SIGKILL);
    int status = 0;
    BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
    std::string why;
    const auto offer = t::detail::ring_offer::decode(bytes, why);
    BOOST_REQUIRE_MESSAGE(offer && offer->bytes == (4u << 20), why);
    if (!ring::open(*offer, 8u << 20, why)) ++refused;
  }
  BOOST_TEST(refused == 200u);
  BOOST_TEST(cluster_fixture::open_segments().empty());
  const long after = shmem_kib();
  BOOST_TEST_MESSAGE("Shmem before " << before << " kB, after " << after << " kB");
  if (before >= 0 && after >= 0) BOOST_TEST(after - before < 200 * 1024, "Shmem grew by " << after - before << " kB");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
