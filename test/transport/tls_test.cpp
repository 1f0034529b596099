// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for TLS in the TCP transport (<dsgd/transport/tls.hpp>, tcp_options::tls) over loopback
// TCP, with a CA, task certificates and a rogue CA made at run time (test/support/tls_certs.hpp).
// Connections are driven from one io_context on the test thread, every wait bounded.
#include <dsgd/client/ps_client.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/parameter_server.hpp>
#include <dsgd/transport/asio_tcp.hpp>
#include <dsgd/transport/tls.hpp>
#include <dsgd/update/async.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <support/error_checks.hpp>
#include <support/loopback_cluster.hpp>
#include <support/loopback_listener.hpp>
#include <support/run_until.hpp>
#include <support/tls_certs.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(tls_test)

namespace asio = boost::asio;
namespace t = dsgd::transport;
using dsgd::error_code;
using dsgd::test::contains;
using dsgd::test::error_of;
using dsgd::test::run_until;
using namespace std::chrono_literals;

static_assert(std::is_same_v<decltype(t::tcp_options{}.tls), std::optional<t::tls_options>>);
static_assert(std::is_same_v<decltype(dsgd::client::client_options{}.connection.tls), std::optional<t::tls_options>>);

namespace {

constexpr const char* token = "correct horse battery staple";

dsgd::error_code code(dsgd::errc e) { return dsgd::make_error_code(e); }

// One CA for the cluster, certificates for ps:0, worker:0 and worker:1 from it, and a rogue
// CA with its own worker:0 certificate. Made once for the whole test program.
const dsgd::test::cert_dir& certs() {
  static const auto dir = [] {
    auto d = std::make_unique<dsgd::test::cert_dir>();
    d->add_ca("ca");
    d->add_cert("ps0", "ca", "ps:0", "DNS:localhost,IP:127.0.0.1");
    d->add_cert("worker0", "ca", "worker:0");
    d->add_cert("worker1", "ca", "worker:1");
    d->add_cert("expired", "ca", "worker:0", "", true);
    d->add_ca("rogue-ca");
    d->add_cert("rogue-worker0", "rogue-ca", "worker:0");
    return d;
  }();
  return *dir;
}

t::tls_options tls_for(const std::string& name, const std::string& ca = "ca") {
  t::tls_options o;
  o.ca_file = certs().cert(ca);
  o.cert_file = certs().cert(name);
  o.key_file = certs().key(name);
  return o;
}

std::vector<std::byte> pattern_bytes(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 131 + seed * 7 + i / 251) & 0xff);
  return v;
}

// A TLS listener on 127.0.0.1:0 as ps:0, collecting its connections and its log lines.
struct tls_fixture : dsgd::test::loopback_listener {
  std::vector<std::string> server_log, client_log;

  t::tcp_options server_options(std::optional<t::tls_options> tls = tls_for("ps0")) {
    t::tcp_options o;
    o.identity = "ps:0";
    o.token = token;
    o.handshake_timeout = 5s;
    o.log = [this](std::string_view line) { server_log.emplace_back(line); };
    o.tls = std::move(tls);
    return o;
  }

  t::tcp_options client_options(std::string identity, std::optional<t::tls_options> tls) {
    t::tcp_options o;
    o.identity = std::move(identity);
    o.token = token;
    o.handshake_timeout = 5s;
    o.log = [this](std::string_view line) { client_log.emplace_back(line); };
    o.tls = std::move(tls);
    return o;
  }

  tls_fixture() { listen(server_options()); }

  static bool mentions(const std::vector<std::string>& log, const std::string& what) {
    return std::any_of(log.begin(), log.end(), [&](const std::string& l) { return contains(l, what); });
  }

  // Sends one message on @p from and receives it on @p to (chunk by chunk into one buffer).
  std::pair<std::vector<t::frame_header>, std::vector<std::byte>> round_trip(
      t::tcp_connection& from, t::tcp_connection& to, t::frame_header h, const std::vector<asio::const_buffer>& payload,
      std::size_t total) {
    std::optional<error_code> sent;
    from.async_send(h, payload, [&](error_code ec) { sent = ec; });
    std::vector<std::byte> got(total);
    std::vector<t::frame_header> headers;
    std::uint64_t received = 0;
    while (received < total || headers.empty()) {
      std::optional<error_code> r;
      to.async_receive(
          [&](const t::frame_header& fh, error_code& ec) { return t::chunk_destination(asio::buffer(got), fh, ec); },
          [&](error_code ec, t::frame_header fh) {
            r = ec;
            if (!ec) headers.push_back(fh);
          });
      BOOST_REQUIRE(run_until(ioc, [&] { return r.has_value(); }));
      BOOST_REQUIRE_MESSAGE(!*r, r->message());
      received += headers.back().payload_length;
    }
    BOOST_REQUIRE(run_until(ioc, [&] { return sent.has_value(); }));
    BOOST_TEST(!*sent, sent->message());
    return {headers, got};
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(transport_tls, tls_fixture)

BOOST_AUTO_TEST_CASE(mutually_verified_peers_exchange_chunked_and_control_messages_intact) {
  auto o = client_options("worker:0", tls_for("worker0"));
  o.chunk_bytes = 64 << 10;
  o.checksum_payloads = t::payload_checksums::always;  // CRCs still work inside TLS when asked
  auto [ec, conn] = connect(std::move(o));
  BOOST_REQUIRE_MESSAGE(!ec, ec.message());
  BOOST_REQUIRE(run_until(ioc, [&] { return accepted.size() == 1; }));
  auto& server = *accepted[0];
  BOOST_TEST(conn->encrypted());
  BOOST_TEST(server.encrypted());
  // The peers share a host, but TLS keeps every byte on the encrypted socket.
  BOOST_TEST(!conn->sends_through_shared_memory());
  BOOST_TEST(!server.sends_through_shared_memory());
  BOOST_TEST(!server.receives_through_shared_memory());
  BOOST_TEST(conn->peer_identity() == "ps:0");
  BOOST_TEST(server.peer_identity() == "worker:0");
  BOOST_TEST(!server.checksums_payloads());  // remote (loopback here, and TLS): no payload CRC

  // A payload of two buffers, 1 MiB + 123 bytes: 17 frames of at most 64 KiB.
  const auto a = pattern_bytes(std::size_t{1} << 20, 1), b = pattern_bytes(123, 2);
  std::vector<asio::const_buffer> payload{asio::buffer(a), asio::buffer(b)};
  auto [headers, got] =
      round_trip(*conn, server, t::frame_header{.type = 3, .variable = 7, .step = 11}, payload, a.size() + b.size());
  BOOST_TEST(headers.size() == 17u);
  BOOST_TEST(std::all_of(headers.begin(), headers.end(),
                         [](const t::frame_header& h) { return (h.flags & t::frame_flags::payload_crc) != 0; }));
  BOOST_TEST(headers.back().last_chunk());
  BOOST_TEST(std::equal(a.begin(), a.end(), got.begin()));
  BOOST_TEST(std::equal(b.begin(), b.end(), got.begin() + std::ptrdiff_t(a.size())));

  // A control message back from the server, in one frame, without a payload CRC.
  const std::string body = "a control message over TLS";
  auto [cheaders, cgot] = round_trip(server, *conn, t::frame_header{.type = 9, .flags = t::frame_flags::control},
                                     {asio::buffer(body)}, body.size());
  BOOST_TEST(cheaders.size() == 1u);
  BOOST_TEST((cheaders[0].flags & t::frame_flags::payload_crc) == 0u);
  BOOST_TEST(std::string(reinterpret_cast<const char*>(cgot.data()), cgot.size()) == body);

  // A clean close between frames reads as eof on the other side, as on plain TCP.
  conn->close();
  std::optional<error_code> r;
  std::array<std::byte, 8> sink{};
  server.async_receive([&](const t::frame_header&, error_code&) { return asio::buffer(sink); },
                       [&](error_code e, t::frame_header) { r = e; });
  BOOST_REQUIRE(run_until(ioc, [&] { return r.has_value(); }));
  BOOST_TEST((*r == asio::error::eof), r->message());
  BOOST_TEST(server_log.empty());  // nothing went wrong, so nothing was logged
}

BOOST_AUTO_TEST_CASE(a_client_certificate_from_another_ca_is_rejected_with_the_reason_and_the_listener_keeps_serving) {
  auto [ec, conn] = connect(client_options("worker:0", tls_for("rogue-worker0", "ca")));
  BOOST_TEST(ec == code(dsgd::errc::handshake_failed), ec.message());
  BOOST_TEST(!conn);
  BOOST_REQUIRE(run_until(ioc, [&] { return listener->rejected() == 1; }));
  BOOST_TEST_MESSAGE(server_log.at(0));
  BOOST_TEST(mentions(server_log, "TLS handshake failed"));
  BOOST_TEST(mentions(server_log, "certificate verify failed"));
  BOOST_TEST(mentions(server_log, "unable to get local issuer certificate"));
  BOOST_TEST(mentions(server_log, "CN = worker:0"));
  BOOST_TEST(accepted.empty());

  auto [ec2, good] = connect(client_options("worker:0", tls_for("worker0")));
  BOOST_TEST(!ec2, ec2.message());
  BOOST_REQUIRE(run_until(ioc, [&] { return accepted.size() == 1; }));
  BOOST_TEST(good->encrypted());
}

BOOST_AUTO_TEST_CASE(a_client_that_does_not_trust_the_servers_ca_rejects_the_server) {
  auto [ec, conn] = connect(client_options("worker:0", tls_for("worker0", "rogue-ca")));
  BOOST_TEST(ec == code(dsgd::errc::handshake_failed), ec.message());
  BOOST_TEST(!conn);
  BOOST_TEST_MESSAGE(client_log.at(0));
  BOOST_TEST(mentions(client_log, "certificate verify failed"));
  // The server sends its chain up to the cluster CA, a root this client does not trust.
  BOOST_TEST(mentions(client_log, "self-signed certificate in certificate chain"));
  BOOST_TEST(mentions(client_log, "CN = ca"));
  BOOST_REQUIRE(run_until(ioc, [&] { return listener->rejected() == 1; }));
}

BOOST_AUTO_TEST_CASE(a_client_without_a_certificate_is_rejected) {
  // tls_options always carries a certificate, so this client is a bare Asio SSL stream: it
  // verifies the server but presents nothing.
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  ctx.load_verify_file(certs().cert("ca"));
  ctx.set_verify_mode(asio::ssl::verify_peer);
  asio::ssl::stream<asio::ip::tcp::socket> s(ioc, ctx);
  s.next_layer().connect(listener->local_endpoint());
  std::optional<error_code> hs;
  s.async_handshake(asio::ssl::stream_base::client, [&](error_code ec) { hs = ec; });
  BOOST_REQUIRE(run_until(ioc, [&] { return hs.has_value(); }));
  // Under TLS 1.3 the client's half of the handshake ends before the server checks its
  // certificate; the refusal then arrives as an alert on the first read.
  std::optional<error_code> rd;
  std::array<std::byte, 104> hello{};
  if (!*hs) asio::async_read(s, asio::buffer(hello), [&](error_code ec, std::size_t) { rd = ec; });
  BOOST_REQUIRE(run_until(ioc, [&] { return *hs || rd.has_value(); }));
  BOOST_TEST((*hs || *rd));
  BOOST_REQUIRE(run_until(ioc, [&] { return listener->rejected() == 1; }));
  BOOST_TEST_MESSAGE(server_log.at(0));
  BOOST_TEST(mentions(server_log, "TLS handshake failed"));
  BOOST_TEST(mentions(server_log, "did not return a certificate"));
  BOOST_TEST(accepted.empty());
}

BOOST_AUTO_TEST_CASE(a_plain_client_fails_cleanly_against_a_tls_listener) {
  const auto start = std::chrono::steady_clock::now();
  auto [ec, conn] = connect(client_options("worker:0", std::nullopt));
  BOOST_TEST(ec == code(dsgd::errc::handshake_failed), ec.message());  // not timed_out
  BOOST_TEST(!conn);
  BOOST_REQUIRE(run_until(ioc, [&] { return listener->rejected() == 1; }));
  BOOST_TEST((std::chrono::steady_clock::now() - start < 5s));
  BOOST_TEST_MESSAGE(server_log.at(0));
  BOOST_TEST(mentions(server_log, "TLS handshake failed"));
}

BOOST_AUTO_TEST_CASE(a_tls_client_fails_cleanly_against_a_plain_listener) {
  listen(server_options(std::nullopt));
  const auto start = std::chrono::steady_clock::now();
  auto [ec, conn] = connect(client_options("worker:0", tls_for("worker0")));
  BOOST_TEST(ec == code(dsgd::errc::handshake_failed), ec.message());
  BOOST_TEST(!conn);
  BOOST_REQUIRE(run_until(ioc, [&] { return listener->rejected() == 1; }));
  BOOST_TEST((std::chrono::steady_clock::now() - start < 5s));
  BOOST_TEST_MESSAGE(client_log.at(0));
  BOOST_TEST(mentions(client_log, "TLS handshake failed"));
  BOOST_TEST(mentions(server_log, "handshake failed"));
}

BOOST_AUTO_TEST_CASE(the_task_identity_policy_holds_a_peer_to_the_name_in_its_certificate) {
  auto server = server_options();
  server.tls->peer_names = t::peer_name_check::task_identity;
  listen(std::move(server));
  // worker:1 holding worker:0's certificate (the token is right: only the name is wrong).
  auto [ec, conn] = connect(client_options("worker:1", tls_for("worker0")));
  BOOST_TEST(ec == code(dsgd::errc::handshake_failed), ec.message());
  BOOST_REQUIRE(run_until(ioc, [&] { return listener->rejected() == 1; }));
  BOOST_TEST_MESSAGE(server_log.at(0));
  BOOST_TEST(mentions(server_log, "proved identity 'worker:1' but its TLS certificate names only [worker:0]"));

  auto client = tls_for("worker1");
  client.peer_names = t::peer_name_check::task_identity;  // and the client checks ps:0's name
  auto [ec2, good] = connect(client_options("worker:1", client));
  BOOST_TEST(!ec2, ec2.message());
  BOOST_REQUIRE(run_until(ioc, [&] { return accepted.size() == 1; }));
}

BOOST_AUTO_TEST_CASE(unloadable_certificates_and_keys_throw_naming_the_file) {
  const std::string missing = (certs().path() / "no-such.pem").string();
  auto o = tls_for("worker0");
  o.ca_file = missing;
  auto msg = error_of([&] { t::make_tls_context(o); }, dsgd::errc::not_found);
  BOOST_TEST(contains(msg, "tls_options.ca_file '" + missing + "'"));
  BOOST_TEST(contains(msg, "No such file"));

  o = tls_for("worker0");
  o.key_file = missing;
  msg = error_of(
      [&] {
        t::tcp_listener::create(ioc.get_executor(), {asio::ip::make_address("127.0.0.1"), 0}, server_options(o));
      },
      dsgd::errc::not_found);
  BOOST_TEST(contains(msg, "tls_options.key_file '" + missing + "'"));

  const std::string garbage = (certs().path() / "garbage.pem").string();
  std::ofstream(garbage) << "not a certificate\n";
  o = tls_for("worker0");
  o.cert_file = garbage;
  msg = error_of(
      [&] {
        t::async_connect(ioc.get_executor(), listener->local_endpoint(), client_options("worker:0", o),
                         [](error_code, auto) {});
      },
      dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "tls_options.cert_file '" + garbage + "': holds no PEM certificate"));

  o = tls_for("worker0");
  o.key_file = certs().key("worker1");  // another task's key
  msg = error_of([&] { t::make_tls_context(o); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "tls_options.key_file '" + certs().key("worker1") + "': the key does not match"));

  o = tls_for("expired");
  msg = error_of([&] { t::make_tls_context(o); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "tls_options.cert_file '" + certs().cert("expired") + "': the certificate has expired"));

  o = {};
  o.ca_file = certs().cert("ca");
  msg = error_of([&] { t::make_tls_context(o); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "neither cert_file nor cert_pem"));
}

BOOST_AUTO_TEST_CASE(pem_text_works_as_well_as_files_and_copies_share_one_context) {
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  t::tls_options o;
  o.ca_pem = read(certs().cert("ca"));
  o.cert_pem = read(certs().cert("worker0"));
  o.key_pem = read(certs().key("worker0"));
  auto copy = o;
  BOOST_TEST(t::shared_tls_context(o) == t::shared_tls_context(copy));
  auto [ec, conn] = connect(client_options("worker:0", o));
  BOOST_TEST(!ec, ec.message());
  BOOST_TEST(t::shared_tls_context(o) != t::shared_tls_context(tls_for("worker0")));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(a_ps_and_a_worker_push_and_pull_over_tls) {
  namespace ds = dsgd::server;
  namespace client = dsgd::client;
  using async_ps = ds::parameter_server<dsgd::update::async, dsgd::optim::sgd>;
  auto spec = dsgd::test::loopback_cluster(1, 1);
  async_ps::options po;
  po.connection.token = "secret";
  po.optimizer = {1.f / 4.f};  // a power of two: the values below are exact
  po.connection.log = [](std::string_view) {};
  po.connection.tls = tls_for("ps0");
  po.connection.tls->peer_names = t::peer_name_check::task_identity;
  async_ps ps(spec, 0, po);
  std::thread serving([&] { ps.join(); });

  std::string failure;
  constexpr std::size_t n = 300'000;  // 1.2 MB: several 256 KiB chunks each way
  std::vector<float> w(n, 1.f), g(n, 2.f);
  try {
    client::client_options co;
    co.connection.token = "secret";
    co.requests.startup_timeout = 10s;
    co.requests.request_timeout = 30s;
    co.connection.chunk_bytes = 256 << 10;
    co.connection.log = [](std::string_view) {};
    co.connection.tls = tls_for("worker0");
    co.connection.tls->peer_names = t::peer_name_check::task_identity;
    client::ps_client c(spec, {"worker", 0}, co);
    c.connect();
    auto plan = dsgd::placement::round_robin{}.place({{"w", {n}}}, 1);
    c.register_worker(plan, 0, true);
    std::vector<std::span<const float>> init{w};
    c.initialize(plan, init);
    c.wait_ready();
    std::vector<std::span<const float>> src{g};
    c.push(plan, 0, src);
    std::vector<std::span<float>> dst{w};
    c.pull(plan, 0, dst);
    c.finish();
    c.shutdown_cluster();
  } catch (const std::exception& e) {
    failure = e.what();
    ps.stop();
  }
  serving.join();
  BOOST_TEST(failure.empty(), failure);
  BOOST_TEST(std::count(w.begin(), w.end(), 1.f - 2.f / 4.f) == std::ptrdiff_t(n));
}

BOOST_AUTO_TEST_SUITE_END()
