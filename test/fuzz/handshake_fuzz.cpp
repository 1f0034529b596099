// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Fuzz target for <dsgd/transport/handshake.hpp>: arbitrary peer hello and proof bytes, fed to
// both roles.
//
// Input: one option byte, then the rest by mode (bits 0-1):
//   0 raw:     a peer hello (104 bytes) and a proof (32 bytes) from an attacker who does not
//              know the token; bit 2 picks our role. A hello may be accepted, a proof never.
//   1 relay:   two honest sides talk through the fuzzer, which XORs masks into each of the
//              four messages (hello a->b, hello b->a, proof a->b, proof b->a) and may give one
//              side another token. Both sides authenticate exactly when nothing was changed.
//   2 config:  own identity (length byte, characters) and token (the rest) from the input;
//              the constructor either accepts them or throws dsgd::error.
//   3 offer:   a peer's shared-memory offer (64 bytes) and answer (8 bytes), as the handshake
//              reads them after the proofs: each decodes or is refused with a reason; a decoded
//              offer names nothing but a dsgd segment, and opening it fails cleanly (none exists).
#include "fuzz_support.hpp"

#include <dsgd/transport/detail/shared_ring.hpp>
#include <dsgd/transport/handshake.hpp>

#include <algorithm>
#include <array>
#include <string>

namespace t = dsgd::transport;
using role = t::handshake::role;

namespace {

constexpr const char* token = "fuzz cluster token";

bool printable_identity(const std::string& id) {
  return !id.empty() && id.size() <= t::handshake::max_identity &&
         std::all_of(id.begin(), id.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

void raw_peer(dsgd::fuzz::input_reader& in, std::uint8_t options) {
  const role mine = options & 4 ? role::acceptor : role::initiator;
  t::handshake hs(mine, mine == role::acceptor ? "ps:0" : "worker:3", token);

  t::handshake::hello_bytes hello{};
  const auto h = in.bytes(t::handshake::hello_size);
  std::copy(h.begin(), h.end(), hello.begin());
  t::handshake::proof_bytes proof{};
  const auto p = in.bytes(t::handshake::proof_size);
  std::copy(p.begin(), p.end(), proof.begin());

  std::string reason;
  // A proof before any hello is refused, not checked against an empty hello.
  dsgd::fuzz::check(static_cast<bool>(hs.verify_proof(proof, reason)), "a proof before the hello was accepted");
  reason.clear();
  if (auto ec = hs.receive_hello(hello, reason)) {
    dsgd::fuzz::check(ec == dsgd::errc::handshake_failed && !reason.empty(), "hello refused without a reason");
    return;
  }
  dsgd::fuzz::check(printable_identity(hs.peer_identity()),
                    "accepted a peer identity that is not 1-64 printable characters");
  (void)hs.proof();
  dsgd::fuzz::check(static_cast<bool>(hs.verify_proof(proof, reason)), "a proof made without the token was accepted");
}

void relay(dsgd::fuzz::input_reader& in, std::uint8_t options) {
  const bool other_token = (options & 4) != 0;
  t::handshake a(role::initiator, "worker:0", token);
  t::handshake b(role::acceptor, "ps:1", other_token ? std::string(token) + "!" : std::string(token));
  bool tampered = other_token;
  auto xor_in = [&](auto msg) {
    for (auto& byte : msg) {
      const auto m = static_cast<std::byte>(in.byte());
      tampered = tampered || m != std::byte{0};
      byte ^= m;
    }
    return msg;
  };
  std::string why;
  const auto hello_ab = xor_in(a.hello());
  const auto hello_ba = xor_in(b.hello());
  const bool b_hello = !b.receive_hello(hello_ab, why);
  const bool a_hello = !a.receive_hello(hello_ba, why);
  bool a_ok = false, b_ok = false;
  if (a_hello && b_hello) {
    const auto proof_ab = xor_in(a.proof());
    const auto proof_ba = xor_in(b.proof());
    b_ok = !b.verify_proof(proof_ab, why);
    a_ok = !a.verify_proof(proof_ba, why);
  }
  if (tampered) {
    dsgd::fuzz::check(!(a_ok && b_ok), "both sides authenticated a tampered exchange");
  } else {
    dsgd::fuzz::check(a_ok && b_ok, "an untouched exchange failed: " + why);
    dsgd::fuzz::check(a.peer_identity() == "ps:1" && b.peer_identity() == "worker:0", "wrong peer identities");
  }
}

void config(dsgd::fuzz::input_reader& in, std::uint8_t options) {
  const std::size_t n = in.byte();
  std::string identity;
  for (std::size_t i = 0; i < n && in.remaining() > 0; ++i) identity.push_back(static_cast<char>(in.byte()));
  const std::string tok(in.rest());
  const role r = options & 4 ? role::acceptor : role::initiator;
  try {
    t::handshake hs(r, identity, tok);
    dsgd::fuzz::check(printable_identity(identity) && !tok.empty(), "accepted a bad own identity or an empty token");
    dsgd::fuzz::check(hs.identity() == identity && hs.side() == r, "the handshake does not keep its identity");
  } catch (const dsgd::error& e) {
    dsgd::fuzz::check(e.code() == dsgd::errc::invalid_argument, "a bad configuration is not invalid_argument");
    dsgd::fuzz::check(!printable_identity(identity) || tok.empty(), "refused a good identity and token");
  }
}

void offer(dsgd::fuzz::input_reader& in) {
  t::detail::ring_offer::bytes_type offer_bytes{};
  const auto o = in.bytes(offer_bytes.size());
  std::copy(o.begin(), o.end(), offer_bytes.begin());
  t::detail::ring_answer::bytes_type answer_bytes{};
  const auto a = in.bytes(answer_bytes.size());
  std::copy(a.begin(), a.end(), answer_bytes.begin());
  std::string reason;
  if (auto decoded = t::detail::ring_offer::decode(offer_bytes, reason)) {
    if (decoded->bytes != 0) {
      dsgd::fuzz::check(decoded->name.size() <= t::detail::ring_offer::name_size &&
                            decoded->name.starts_with("/proc/") && decoded->name.find("/fd/") != std::string::npos &&
                            decoded->name.find_first_not_of("0123456789/procfd") == std::string::npos,
                        "an offer naming something other than a descriptor path was accepted");
      std::string why;
      dsgd::fuzz::check(!t::detail::shared_ring::open(*decoded, std::size_t{1} << 20, why).has_value() && !why.empty(),
                        "a forged offer opened a segment, or failed without a reason");
    }
  } else {
    dsgd::fuzz::check(!reason.empty(), "an offer refused without a reason");
  }
  reason.clear();
  if (auto mapped = t::detail::ring_answer::decode(answer_bytes, reason))
    dsgd::fuzz::check(t::detail::ring_answer::encode(*mapped) == answer_bytes,
                      "an answer other than 0 or 1 was accepted");
  else dsgd::fuzz::check(!reason.empty(), "an answer refused without a reason");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dsgd::fuzz::input_scope scope({data, size});
  dsgd::fuzz::input_reader in({data, size});
  const auto options = in.byte();
  dsgd::fuzz::decodes([&] {
    switch (options & 3) {
      case 0:
        raw_peer(in, options);
        break;
      case 1:
        relay(in, options);
        break;
      case 2:
        config(in, options);
        break;
      default:
        offer(in);
        break;
    }
  });
  return 0;
}

std::vector<std::string> dsgd::fuzz::seeds() {
  std::vector<std::string> out;
  const std::array<unsigned char, t::handshake::nonce_size> nonce{1, 2, 3};
  const t::handshake::proof_bytes zero_proof{};
  // Raw: a well-formed hello of the opposite role, so that the proof check is reached.
  out.push_back(std::string(1, '\0') +
                as_string(t::handshake::encode_hello(t::protocol_version, role::acceptor, "ps:0", nonce)) +
                as_string(zero_proof));
  out.push_back(std::string(1, '\4') +
                as_string(t::handshake::encode_hello(t::protocol_version, role::initiator, "worker:1", nonce)) +
                as_string(zero_proof));
  out.push_back(std::string(1, '\0') +
                as_string(t::handshake::encode_hello(t::protocol_version + 1, role::acceptor, "ps:0", nonce)));
  out.push_back(std::string(1, '\0') + as_string(t::handshake::encode_hello(t::protocol_version, role::acceptor,
                                                                            std::string(64, 'x'), nonce)));
  // Relay: untouched, one flipped bit in a hello, one in a proof, another token.
  out.push_back(std::string(1, '\1') + std::string(2 * (104 + 32), '\0'));
  auto flip_hello = std::string(1, '\1') + std::string(2 * (104 + 32), '\0');
  flip_hello[1 + 60] = 1;
  out.push_back(flip_hello);
  auto flip_proof = std::string(1, '\1') + std::string(2 * (104 + 32), '\0');
  flip_proof[1 + 2 * 104 + 5] = static_cast<char>(0x80);
  out.push_back(flip_proof);
  out.push_back(std::string(1, '\5') + std::string(2 * (104 + 32), '\0'));
  // Config.
  out.push_back(std::string(1, '\2') + "\x08worker:0" + token);
  out.push_back(std::string(1, '\6') + "\x05ps 0" + token);
  // Offer: a well-formed one naming a segment that does not exist, one naming a file elsewhere,
  // and no offer; answers 1 and 2.
  const t::detail::ring_offer good{.bytes = 4096, .name = "/proc/1/fd/999999"};
  const t::detail::ring_offer bad{.bytes = 4096, .name = "/dev-shm-../../../etc/passwd0000"};
  out.push_back(std::string(1, '\3') + as_string(good.encode()) + as_string(t::detail::ring_answer::encode(true)));
  auto two = t::detail::ring_answer::encode(true);
  two[4] = std::byte{2};
  out.push_back(std::string(1, '\3') + as_string(bad.encode()) + as_string(two));
  out.push_back(std::string(1, '\3') + as_string(t::detail::ring_offer{}.encode()) +
                as_string(t::detail::ring_answer::encode(false)));
  return out;
}
