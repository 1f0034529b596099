// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// A flood of bad handshakes against a real tcp_listener (<dsgd/transport/asio_tcp.hpp>) on
// 127.0.0.1: random garbage, a wrong token, a foreign protocol version, a truncated hello, and
// a hello followed straight by a frame. Every one must be rejected during the handshake, so no
// byte of theirs reaches frame decoding, and the listener must still serve a good peer after.
// Clients and server share one io_context on the test thread, with up to `concurrency`
// connections in flight; every wait is bounded.
#include <dsgd/transport/asio_tcp.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <support/run_until.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(handshake_flood_test)

namespace asio = boost::asio;
namespace t = dsgd::transport;
using dsgd::error_code;
using namespace std::chrono_literals;

namespace {

constexpr const char* token = "flood test token";
constexpr std::size_t attempts = 10'000;
constexpr std::size_t concurrency = 64;

enum class attack { garbage, wrong_token, wrong_version, truncated_hello, frame_without_proof, count };

using dsgd::test::run_until;

// A peer that writes some bytes, half-closes, and reads until the server closes the connection
// (so that it completes only once the server has decided).
struct raw_peer : std::enable_shared_from_this<raw_peer> {
  raw_peer(asio::io_context& ioc, std::vector<std::byte> bytes, std::function<void()> on_done)
      : socket(ioc), out(std::move(bytes)), done(std::move(on_done)) {}

  void start(const asio::ip::tcp::endpoint& to) {
    socket.async_connect(to, [self = shared_from_this()](error_code ec) {
      if (ec) return self->finish();
      asio::async_write(self->socket, asio::buffer(self->out), [self](error_code, std::size_t) {
        error_code ignored;  // the server may have closed already
        self->socket.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
        self->drain();
      });
    });
  }

  void drain() {
    socket.async_read_some(asio::buffer(sink), [self = shared_from_this()](error_code ec, std::size_t) {
      if (ec) return self->finish();
      self->drain();
    });
  }

  void finish() {
    error_code ignored;
    socket.close(ignored);
    done();
  }

  asio::ip::tcp::socket socket;
  std::vector<std::byte> out;
  std::array<std::byte, 512> sink{};
  std::function<void()> done;
};

template <class Bytes>
std::vector<std::byte> to_vector(const Bytes& b) {
  return {b.begin(), b.end()};
}

struct flood_fixture {
  asio::io_context ioc;
  std::shared_ptr<t::tcp_listener> listener;
  std::vector<std::shared_ptr<t::tcp_connection>> accepted;
  std::vector<std::string> server_log;
  std::mt19937_64 rng{20260101};

  flood_fixture() {
    t::tcp_options o;
    o.identity = "ps:0";
    o.token = token;
    o.handshake_timeout = 5s;
    o.log = [this](std::string_view line) { server_log.emplace_back(line); };
    listener = t::tcp_listener::create(ioc.get_executor(), {asio::ip::make_address("127.0.0.1"), 0}, std::move(o));
    listener->start([this](std::shared_ptr<t::tcp_connection> c) { accepted.push_back(std::move(c)); });
  }
  ~flood_fixture() {
    listener->close();
    for (auto& c : accepted) c->close();
  }

  static t::tcp_options client_options(std::string tok) {
    t::tcp_options o;
    o.identity = "worker:0";
    o.token = std::move(tok);
    o.handshake_timeout = 5s;
    o.log = [](std::string_view) {};
    return o;
  }

  std::vector<std::byte> random_bytes(std::size_t n) {
    std::vector<std::byte> v(n);
    for (auto& b : v) b = static_cast<std::byte>(rng());
    return v;
  }

  t::handshake::hello_bytes hello(std::uint16_t version) {
    std::array<unsigned char, t::handshake::nonce_size> nonce{};
    for (auto& b : nonce) b = static_cast<unsigned char>(rng());
    return t::handshake::encode_hello(version, t::handshake::role::initiator, "worker:0", nonce);
  }

  // Starts bad peer number @p i; calls @p done when the client side has finished.
  void start_attack(std::size_t i, std::function<void()> done) {
    const auto kind = static_cast<attack>(i % static_cast<std::size_t>(attack::count));
    std::vector<std::byte> bytes;
    switch (kind) {
      case attack::wrong_token:
        t::async_connect(ioc.get_executor(), listener->local_endpoint(), client_options("not the token"),
                         [done](error_code ec, std::shared_ptr<t::tcp_connection> c) {
                           BOOST_TEST(static_cast<bool>(ec));
                           if (c) c->close();
                           done();
                         });
        return;
      case attack::garbage:
        bytes = random_bytes(1 + rng() % 300);
        break;
      case attack::wrong_version:
        bytes = to_vector(hello(t::protocol_version + 1 + rng() % 100));
        break;
      case attack::truncated_hello:
        bytes = to_vector(hello(t::protocol_version));
        bytes.resize(rng() % t::handshake::hello_size);
        break;
      case attack::frame_without_proof: {
        bytes = to_vector(hello(t::protocol_version));
        const auto payload = random_bytes(64);
        const auto header = t::encode({.type = 5, .payload_length = payload.size(), .total_length = payload.size()});
        bytes.insert(bytes.end(), header.begin(), header.end());
        bytes.insert(bytes.end(), payload.begin(), payload.end());
        break;
      }
      case attack::count:
        break;
    }
    std::make_shared<raw_peer>(ioc, std::move(bytes), std::move(done))->start(listener->local_endpoint());
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(transport_handshake_flood, flood_fixture)

BOOST_AUTO_TEST_CASE(ten_thousand_bad_handshakes_are_rejected_and_a_good_peer_still_connects) {
  const auto began = std::chrono::steady_clock::now();
  std::size_t started = 0, finished = 0;
  std::function<void()> next = [&] {
    const auto i = started++;
    start_attack(i, [&] {
      ++finished;
      if (started < attempts) next();
    });
  };
  for (std::size_t k = 0; k < concurrency; ++k) next();
  BOOST_REQUIRE(run_until(
      ioc, [&] { return finished == attempts && listener->rejected() == attempts; }, 180s));
  const auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  BOOST_TEST_MESSAGE(attempts << " bad handshakes rejected in " << took << " s");

  // Rejected during the handshake: no connection was handed over, so nothing of theirs was
  // ever decoded as a frame. The log stays quiet under the flood: per interval the first few
  // rejections in full, the rest counted per reason in one line (flushed when the listener
  // closes), and every rejection is accounted for exactly once.
  BOOST_TEST(listener->rejected() == attempts);
  BOOST_TEST(accepted.empty());
  const auto log_lines_before_close = server_log.size();
  BOOST_TEST_MESSAGE(log_lines_before_close << " log lines for " << attempts << " rejections");
  // A good peer connects and its frame arrives intact.
  std::optional<error_code> connected;
  std::shared_ptr<t::tcp_connection> client;
  t::async_connect(ioc.get_executor(), listener->local_endpoint(), client_options(token),
                   [&](error_code ec, std::shared_ptr<t::tcp_connection> c) {
                     connected = ec;
                     client = std::move(c);
                   });
  BOOST_REQUIRE(run_until(
      ioc, [&] { return connected.has_value() && !accepted.empty(); }, 20s));
  BOOST_REQUIRE(!*connected);
  BOOST_TEST(accepted.front()->peer_identity() == "worker:0");

  const std::vector<float> sent{1.f, 2.f, 3.f, 4.f};
  std::vector<float> got(sent.size());
  std::optional<error_code> send_ec, recv_ec;
  t::frame_header received;
  client->async_send(t::frame_header{.type = 5, .variable = 3, .step = 9},
                     asio::buffer(sent.data(), sent.size() * sizeof(float)), [&](error_code ec) { send_ec = ec; });
  accepted.front()->async_receive(
      [&](const t::frame_header& h, error_code& ec) {
        return t::chunk_destination(asio::buffer(got.data(), got.size() * sizeof(float)), h, ec);
      },
      [&](error_code ec, t::frame_header h) {
        recv_ec = ec;
        received = h;
      });
  BOOST_REQUIRE(run_until(
      ioc, [&] { return send_ec.has_value() && recv_ec.has_value(); }, 20s));
  BOOST_TEST(!*send_ec);
  BOOST_TEST(!*recv_ec);
  BOOST_TEST(received.variable == 3u);
  BOOST_TEST(received.step == 9u);
  BOOST_TEST(got == sent, boost::test_tools::per_element());
  BOOST_TEST(listener->rejected() == attempts);
  client->close();

  listener->close();  // reports what it counted but did not log yet
  std::size_t in_full = 0, counted = 0;
  std::map<std::string, std::size_t> reasons;
  const std::regex summary(
      R"(dsgd transport: (\d+) more rejected connections? in the last \d+ ms, not logged one by one: (.*))");
  const std::regex part(R"((\d+) ([a-z ]+))");
  for (const auto& line : server_log) {
    std::smatch m;
    if (std::regex_search(line, m, summary)) {
      BOOST_TEST_MESSAGE(line);
      counted += std::stoul(m[1]);
      const std::string parts = m[2];
      for (std::sregex_iterator it(parts.begin(), parts.end(), part), end; it != end; ++it)
        reasons[(*it)[2]] += std::stoul((*it)[1]);
    } else {
      BOOST_TEST(line.find("handshake failed") != std::string::npos, line);
      ++in_full;
    }
  }
  BOOST_TEST(in_full + counted == attempts);
  BOOST_TEST(server_log.size() < 200u, server_log.size() << " lines: the flood reached the log");
  BOOST_TEST(reasons["wrong token"] > 0u);
  BOOST_TEST(reasons["wrong version"] > 0u);
  BOOST_TEST(reasons["not a dsgd peer"] > 0u);
  BOOST_TEST(reasons["closed before its hello"] > 0u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
