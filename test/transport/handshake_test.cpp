// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/transport/handshake.hpp>: two sides exchanging messages in memory.
#include <dsgd/transport/handshake.hpp>

#include <boost/test/unit_test.hpp>

#include <array>
#include <string>

BOOST_AUTO_TEST_SUITE(handshake_test)

namespace t = dsgd::transport;
using role = t::handshake::role;

namespace {

struct outcome {
  dsgd::error_code initiator, acceptor;
  std::string initiator_reason, acceptor_reason;
};

// Runs the full exchange between @p a (initiator) and @p b (acceptor).
outcome run(t::handshake& a, t::handshake& b) {
  outcome o;
  o.acceptor = b.receive_hello(a.hello(), o.acceptor_reason);
  o.initiator = a.receive_hello(b.hello(), o.initiator_reason);
  if (o.acceptor || o.initiator) return o;
  o.acceptor = b.verify_proof(a.proof(), o.acceptor_reason);
  o.initiator = a.verify_proof(b.proof(), o.initiator_reason);
  return o;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(transport_handshake)

BOOST_AUTO_TEST_CASE(peers_with_the_same_token_authenticate_each_other) {
  t::handshake a(role::initiator, "worker:1", "cluster-secret");
  t::handshake b(role::acceptor, "ps:0", "cluster-secret");
  auto o = run(a, b);
  BOOST_TEST(!o.acceptor, o.acceptor_reason);
  BOOST_TEST(!o.initiator, o.initiator_reason);
  BOOST_TEST(a.peer_identity() == "ps:0");
  BOOST_TEST(b.peer_identity() == "worker:1");
}

BOOST_AUTO_TEST_CASE(a_wrong_token_fails_on_both_sides) {
  t::handshake a(role::initiator, "worker:1", "guess");
  t::handshake b(role::acceptor, "ps:0", "cluster-secret");
  auto o = run(a, b);
  BOOST_TEST(o.acceptor == dsgd::make_error_code(dsgd::errc::handshake_failed));
  BOOST_TEST(o.initiator == dsgd::make_error_code(dsgd::errc::handshake_failed));
  BOOST_TEST(o.acceptor_reason.find("wrong cluster token") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(every_handshake_uses_fresh_nonces) {
  t::handshake a1(role::initiator, "worker:1", "k"), a2(role::initiator, "worker:1", "k");
  BOOST_TEST((a1.hello() != a2.hello()));
}

BOOST_AUTO_TEST_CASE(a_replayed_proof_from_another_session_is_rejected) {
  t::handshake a1(role::initiator, "worker:1", "k"), b1(role::acceptor, "ps:0", "k");
  auto o = run(a1, b1);
  BOOST_TEST(!o.acceptor);
  const auto old_proof = a1.proof();

  // An eavesdropper replays the old hello and proof against a new acceptor session.
  t::handshake b2(role::acceptor, "ps:0", "k");
  std::string reason;
  BOOST_TEST(!b2.receive_hello(a1.hello(), reason));
  BOOST_TEST(b2.verify_proof(old_proof, reason) == dsgd::make_error_code(dsgd::errc::handshake_failed));
}

BOOST_AUTO_TEST_CASE(a_proof_reflected_back_to_its_sender_is_rejected) {
  t::handshake a(role::initiator, "worker:1", "k"), b(role::acceptor, "ps:0", "k");
  std::string reason;
  BOOST_TEST(!b.receive_hello(a.hello(), reason));
  BOOST_TEST(!a.receive_hello(b.hello(), reason));
  BOOST_TEST(b.verify_proof(b.proof(), reason) == dsgd::make_error_code(dsgd::errc::handshake_failed));
  BOOST_TEST(a.verify_proof(a.proof(), reason) == dsgd::make_error_code(dsgd::errc::handshake_failed));
}

BOOST_AUTO_TEST_CASE(a_peer_speaking_another_version_is_rejected_with_the_versions_named) {
  t::handshake b(role::acceptor, "ps:0", "k");
  std::array<unsigned char, t::handshake::nonce_size> nonce{};
  auto hello = t::handshake::encode_hello(7, role::initiator, "worker:9", nonce);
  std::string reason;
  BOOST_TEST(b.receive_hello(hello, reason) == dsgd::make_error_code(dsgd::errc::handshake_failed));
  BOOST_TEST(reason.find("version 7") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(garbage_wrong_roles_and_bad_identities_are_rejected) {
  t::handshake b(role::acceptor, "ps:0", "k");
  std::string reason;
  t::handshake::hello_bytes garbage{};
  garbage.fill(std::byte{0x41});
  BOOST_TEST(b.receive_hello(garbage, reason) == dsgd::make_error_code(dsgd::errc::handshake_failed));
  BOOST_TEST(reason.find("magic") != std::string::npos);

  t::handshake other_acceptor(role::acceptor, "ps:1", "k");
  BOOST_TEST(b.receive_hello(other_acceptor.hello(), reason) == dsgd::make_error_code(dsgd::errc::handshake_failed));
  BOOST_TEST(reason.find("role") != std::string::npos);

  std::array<unsigned char, t::handshake::nonce_size> nonce{};
  auto spaced = t::handshake::encode_hello(t::protocol_version, role::initiator, "bad id", nonce);
  BOOST_TEST(b.receive_hello(spaced, reason) == dsgd::make_error_code(dsgd::errc::handshake_failed));
  BOOST_TEST(reason.find("position 3") != std::string::npos);

  auto overlong = t::handshake::encode_hello(t::protocol_version, role::initiator, "w", nonce);
  overlong[7] = std::byte{200};
  BOOST_TEST(b.receive_hello(overlong, reason) == dsgd::make_error_code(dsgd::errc::handshake_failed));
  BOOST_TEST(reason.find("length 200") != std::string::npos);

  BOOST_TEST(b.verify_proof(t::handshake::proof_bytes{}, reason) ==
             dsgd::make_error_code(dsgd::errc::handshake_failed));
}

BOOST_AUTO_TEST_CASE(bad_local_settings_throw_invalid_argument) {
  BOOST_CHECK_EXCEPTION(t::handshake(role::initiator, "worker:1", ""), dsgd::error,
                        [](const dsgd::error& e) { return e.code() == dsgd::errc::invalid_argument; });
  BOOST_CHECK_EXCEPTION(t::handshake(role::initiator, std::string(65, 'w'), "k"), dsgd::error,
                        [](const dsgd::error& e) { return e.code() == dsgd::errc::invalid_argument; });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
