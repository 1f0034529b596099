// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The connection handshake: a mutual HMAC-SHA256 challenge-response over the cluster token,
/// which also carries each side's protocol version and task identity. Pure message logic, no
/// I/O: asio_tcp drives it over a socket, tests drive two of them against each other in memory.
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/error.hpp>
#include <dsgd/transport/frame.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace dsgd::transport {

/// One side of the handshake. Both sides send a hello (magic, version, role, a fresh 32-byte
/// nonce, their task identity); once each holds the other's hello, each sends a proof,
/// HMAC-SHA256(token, label || prover role || initiator hello || acceptor hello), which the
/// other side checks in constant time. The proof binds both nonces, both identities and the
/// roles, so it can be neither replayed nor reflected back at its sender.
///
/// @code
///   handshake a(handshake::role::initiator, "worker:0", token);
///   handshake b(handshake::role::acceptor, "ps:0", token);
///   std::string why;
///   a.receive_hello(b.hello(), why);  b.receive_hello(a.hello(), why);
///   b.verify_proof(a.proof(), why);   a.verify_proof(b.proof(), why);  // both empty codes
/// @endcode
class handshake {
 public:
  /// Which end of the connection this side is.
  enum class role : std::uint8_t {
    initiator = 1,  ///< connected out
    acceptor = 2,   ///< accepted the connection
  };

  static constexpr std::size_t nonce_size = 32;    ///< bytes of random challenge
  static constexpr std::size_t max_identity = 64;  ///< longest task identity
  static constexpr std::size_t hello_size = 104;   ///< bytes of an encoded hello
  static constexpr std::size_t proof_size = 32;    ///< bytes of an HMAC-SHA256 proof
  /// The four bytes a hello starts with.
  static constexpr std::array<std::byte, 4> hello_magic{std::byte{'D'}, std::byte{'S'}, std::byte{'G'}, std::byte{'H'}};

  using hello_bytes = std::array<std::byte, hello_size>;  ///< an encoded hello
  using proof_bytes = std::array<std::byte, proof_size>;  ///< an encoded proof

  /// Prepares this side's hello with a fresh nonce from the OpenSSL CSPRNG.
  /// @param r which end this side is
  /// @param identity this task's identity, 1 to 64 printable ASCII characters ("worker:1")
  /// @param token the cluster token (secret shared by every task), not empty
  /// @throws dsgd::error errc::invalid_argument for a bad identity or empty token, or
  ///         errc::handshake_failed when the random generator fails
  handshake(role r, std::string_view identity, std::string token)
      : role_(r), identity_(identity), token_(std::move(token)) {
    if (std::string why; !valid_identity(identity_, why))
      throw error(errc::invalid_argument, "handshake: own identity " + why);
    if (token_.empty()) throw error(errc::invalid_argument, "handshake: the cluster token is empty");
    if (token_.size() > static_cast<std::size_t>(INT_MAX))
      throw error(errc::invalid_argument, "handshake: the cluster token is too long");
    std::array<unsigned char, nonce_size> nonce{};
    if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1)
      throw error(errc::handshake_failed, "handshake: OpenSSL RAND_bytes failed");
    own_hello_ = encode_hello(protocol_version, r, identity_, nonce);
  }

  /// This side's encoded hello, to send first.
  const hello_bytes& hello() const noexcept { return own_hello_; }

  /// Checks the peer's hello: magic, protocol version, role, identity.
  /// @param in the hello_size bytes received
  /// @param reason on failure, what was wrong
  /// @returns an empty code, or errc::handshake_failed
  error_code receive_hello(std::span<const std::byte, hello_size> in, std::string& reason) {
    auto fail = [&](std::string why) {
      reason = std::move(why);
      return make_error_code(errc::handshake_failed);
    };
    for (std::size_t i = 0; i < 4; ++i)
      if (in[i] != hello_magic[i]) return fail("bad hello magic (not a dsgd peer)");
    const auto version = detail::load_le<std::uint16_t>(in.data() + 4);
    if (version != protocol_version)
      return fail("peer speaks protocol version " + std::to_string(version) + ", this side speaks " +
                  std::to_string(protocol_version));
    const auto peer_role = static_cast<role>(std::to_integer<std::uint8_t>(in[6]));
    const role expected = role_ == role::initiator ? role::acceptor : role::initiator;
    if (peer_role != expected)
      return fail("peer claims role " + std::to_string(std::to_integer<int>(in[6])) + ", expected " +
                  std::to_string(static_cast<int>(expected)));
    const auto length = std::to_integer<std::size_t>(in[7]);
    if (length > max_identity)
      return fail("peer identity length " + std::to_string(length) + " exceeds " + std::to_string(max_identity));
    std::string identity(length, '\0');
    for (std::size_t i = 0; i < length; ++i)
      identity[i] = static_cast<char>(std::to_integer<unsigned char>(in[identity_at + i]));
    for (std::size_t i = identity_at + length; i < hello_size; ++i)
      if (in[i] != std::byte{0}) return fail("peer hello has non-zero padding");
    if (std::string why; !valid_identity(identity, why)) return fail("peer identity " + why);
    std::copy(in.begin(), in.end(), peer_hello_.begin());
    peer_identity_ = std::move(identity);
    has_peer_hello_ = true;
    return {};
  }

  /// This side's proof; call after receive_hello() succeeded.
  proof_bytes proof() const {
    DSGD_ASSERT(has_peer_hello_, "handshake::proof() before receive_hello()");
    return compute_proof(role_);
  }

  /// Checks the peer's proof in constant time.
  /// @returns an empty code, or errc::handshake_failed ("wrong cluster token")
  error_code verify_proof(std::span<const std::byte, proof_size> in, std::string& reason) const {
    if (!has_peer_hello_) {
      reason = "proof received before the peer's hello";
      return make_error_code(errc::handshake_failed);
    }
    const auto expected = compute_proof(role_ == role::initiator ? role::acceptor : role::initiator);
    if (CRYPTO_memcmp(expected.data(), in.data(), proof_size) != 0) {
      reason = "peer '" + peer_identity_ + "' failed the challenge (wrong cluster token)";
      return make_error_code(errc::handshake_failed);
    }
    return {};
  }

  /// The identity the peer claimed in its hello (authenticated once verify_proof() succeeds).
  const std::string& peer_identity() const noexcept { return peer_identity_; }
  /// This side's identity.
  const std::string& identity() const noexcept { return identity_; }
  /// This side's role.
  role side() const noexcept { return role_; }

  /// Encodes a hello; public so that tests can build malformed or foreign-version hellos.
  static hello_bytes encode_hello(std::uint16_t version, role r, std::string_view identity,
                                  std::span<const unsigned char, nonce_size> nonce) noexcept {
    hello_bytes b{};
    for (std::size_t i = 0; i < 4; ++i) b[i] = hello_magic[i];
    detail::store_le(b.data() + 4, version);
    b[6] = static_cast<std::byte>(r);
    const std::size_t n = identity.size() < max_identity ? identity.size() : max_identity;
    b[7] = static_cast<std::byte>(n);
    for (std::size_t i = 0; i < nonce_size; ++i) b[8 + i] = static_cast<std::byte>(nonce[i]);
    for (std::size_t i = 0; i < n; ++i) b[identity_at + i] = static_cast<std::byte>(identity[i]);
    return b;
  }

 private:
  static constexpr std::size_t identity_at = 8 + nonce_size;
  static constexpr std::string_view label = "dsgd-handshake-v1";

  static bool valid_identity(const std::string& id, std::string& why) {
    if (id.empty() || id.size() > max_identity) {
      why = "must be 1 to " + std::to_string(max_identity) + " characters, got " + std::to_string(id.size());
      return false;
    }
    for (std::size_t i = 0; i < id.size(); ++i) {
      const auto c = static_cast<unsigned char>(id[i]);
      if (c < 0x21 || c > 0x7E) {
        why = "has a non-printable or space character at position " + std::to_string(i);
        return false;
      }
    }
    return true;
  }

  proof_bytes compute_proof(role prover) const {
    const hello_bytes& initiator_hello = role_ == role::initiator ? own_hello_ : peer_hello_;
    const hello_bytes& acceptor_hello = role_ == role::initiator ? peer_hello_ : own_hello_;
    std::array<unsigned char, label.size() + 1 + 2 * hello_size> message{};
    std::size_t at = 0;
    for (char c : label) message[at++] = static_cast<unsigned char>(c);
    message[at++] = static_cast<unsigned char>(prover);
    for (std::byte b : initiator_hello) message[at++] = std::to_integer<unsigned char>(b);
    for (std::byte b : acceptor_hello) message[at++] = std::to_integer<unsigned char>(b);
    std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
    unsigned int mac_size = 0;
    if (HMAC(EVP_sha256(), token_.data(), static_cast<int>(token_.size()), message.data(), message.size(), mac.data(),
             &mac_size) == nullptr ||
        mac_size != proof_size)
      throw error(errc::handshake_failed, "handshake: OpenSSL HMAC-SHA256 failed");
    proof_bytes out{};
    for (std::size_t i = 0; i < proof_size; ++i) out[i] = static_cast<std::byte>(mac[i]);
    return out;
  }

  role role_;
  std::string identity_;
  std::string token_;
  hello_bytes own_hello_{};
  hello_bytes peer_hello_{};
  std::string peer_identity_;
  bool has_peer_hello_ = false;
};

}  // namespace dsgd::transport
