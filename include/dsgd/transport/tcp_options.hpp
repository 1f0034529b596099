// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// transport::tcp_options, the connection-options struct every role embeds (ps, client,
/// trainer: `.connection`), and validate(), which names a bad field by its path. Used by both
/// transports (asio_tcp.hpp, inproc.hpp); the socket knobs only by TCP.
#pragma once

#include <dsgd/detail/validate.hpp>
#include <dsgd/transport/frame.hpp>
#include <dsgd/transport/tls.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace dsgd::transport {

/// When a sender adds a CRC-32C of every payload (receivers check it whenever a frame says so).
enum class payload_checksums {
  /// On, except towards a peer on a loopback address (bytes that never cross a wire gain
  /// nothing from it, while on a real link it backs up TCP's 16-bit sum end to end) and on a
  /// TLS connection (whose records already authenticate every byte).
  remote,
  always,  ///< on every connection
  never,   ///< off (frame headers are checksummed whatever this says)
};

/// Whether payloads to a peer on this host (a loopback address, or this socket's own address)
/// go through a ring in shared memory, one per direction, with only the frame headers on the
/// socket: one copy on each side instead of the kernel's two socket copies and its TCP work.
/// Both ends must allow it, and the handshake sets it up; it is never used with TLS. A ring that
/// cannot be made (no room for it) only means payloads go inline on the socket.
/// docs/transport.md, "Shared memory between tasks on one host".
struct shared_memory_options {
  bool enabled = true;  ///< false: every payload goes on the socket
  /// Bytes of each direction's ring, reserved in shared memory for the connection's life. A payload
  /// larger than what the ring has free when it is sent goes inline on the socket instead.
  std::size_t ring_bytes = std::size_t{4} << 20;
};

/// Settings shared by a listener and the connections it accepts, or by one outgoing connection.
struct tcp_options {
  /// This task's identity, sent in the handshake ("worker:1", "ps:0").
  std::string identity;
  /// The cluster token every task shares; a peer that does not know it is rejected.
  std::string token;
  /// Optional: returns false for a peer identity that must be rejected (unknown task).
  std::function<bool(std::string_view)> accept_peer;
  /// Optional: called on the connection's executor for each handshake that fails after the
  /// peer's hello named an identity, with that identity (claimed, never proven) and why it was
  /// refused: a ps names a worker refused at authentication to the others.
  std::function<void(std::string_view claimed_identity, std::string_view reason)> on_refused;
  /// Caps every received header is checked against before anything is read or allocated.
  limits caps;
  /// Connect plus handshake must finish within this; a silent peer is dropped after it.
  std::chrono::milliseconds handshake_timeout{10'000};
  /// Once a frame header has arrived, its payload must follow within this.
  std::chrono::milliseconds frame_timeout{60'000};
  /// One frame's write must finish within this (a peer that stops reading is dropped).
  std::chrono::milliseconds write_timeout{60'000};
  /// Large messages are split into frames of at most this many payload bytes.
  std::size_t chunk_bytes = std::size_t{1} << 20;
  /// Most messages waiting in one connection's send queue; more fail with no_buffer_space.
  std::size_t max_queued_sends = 256;
  /// Most payload bytes waiting in one connection's send queue (one message always fits).
  std::uint64_t max_queued_bytes = std::uint64_t{1} << 31;
  /// Which connections send a CRC-32C of every payload (see payload_checksums).
  payload_checksums checksum_payloads = payload_checksums::remote;
  /// SO_SNDBUF and SO_RCVBUF in bytes; 0 keeps the system's default.
  int socket_buffer_bytes = 4 << 20;
  /// A peer that stops answering at the TCP level (a cut link, a host gone without a FIN) fails
  /// the connection within about this long, idle or not: TCP keepalive probes while idle and,
  /// on Linux, TCP_USER_TIMEOUT while sent data is unacknowledged. 0 keeps the system's
  /// defaults (no keepalive; retransmissions for about 15 minutes).
  std::chrono::seconds dead_peer_timeout{60};
  /// Where connection errors are reported; by default one line on stderr.
  std::function<void(std::string_view)> log;
  /// TLS with mutual certificate verification, run after connecting and before the token
  /// handshake (which then runs inside it); empty: plain TCP.
  std::optional<tls_options> tls;
  /// Payloads to a peer on this host through shared memory (see shared_memory_options).
  shared_memory_options shared_memory{};
  /// A listener's: each accepted connection runs on a strand of its own (and the acceptor on
  /// another), so that several threads may run the context (server::serving_options::threads).
  bool strand_per_connection = false;
};

/// Checks every field of @p o that has a domain, naming the first bad one by its path from the
/// struct the user filled in (@p path: "tcp_options", or "trainer_options.connection").
/// @throws dsgd::error(errc::invalid_argument) naming the field and what it must be
inline void validate(const tcp_options& o, std::string_view path = "tcp_options") {
  dsgd::detail::require_positive(o.chunk_bytes, path, "chunk_bytes");
  dsgd::detail::require_positive(o.max_queued_sends, path, "max_queued_sends");
  dsgd::detail::require_positive(o.max_queued_bytes, path, "max_queued_bytes");
  dsgd::detail::require_deadline(o.handshake_timeout, path, "handshake_timeout");
  dsgd::detail::require_deadline(o.frame_timeout, path, "frame_timeout");
  dsgd::detail::require_deadline(o.write_timeout, path, "write_timeout");
  if (o.dead_peer_timeout.count() < 0)
    dsgd::detail::bad_option(path, "dead_peer_timeout", "must not be negative (0: the system's defaults)");
  if (o.socket_buffer_bytes < 0)
    dsgd::detail::bad_option(path, "socket_buffer_bytes", "must not be negative (0: the system's default)");
  dsgd::detail::require_positive(o.caps.max_payload_bytes, std::string(path) + ".caps", "max_payload_bytes");
  dsgd::detail::require_positive(o.caps.max_control_bytes, std::string(path) + ".caps", "max_control_bytes");
  if (o.caps.max_total_bytes < o.caps.max_payload_bytes)
    dsgd::detail::bad_option(std::string(path) + ".caps", "max_total_bytes", "must be at least max_payload_bytes");
  if (o.chunk_bytes > o.caps.max_payload_bytes)
    dsgd::detail::bad_option(
        path, "chunk_bytes",
        "must not exceed caps.max_payload_bytes (" + std::to_string(o.caps.max_payload_bytes) + ")");
  if (o.shared_memory.enabled && o.shared_memory.ring_bytes < 4096)
    dsgd::detail::bad_option(std::string(path) + ".shared_memory", "ring_bytes", "must be at least 4096 when enabled");
}

}  // namespace dsgd::transport
