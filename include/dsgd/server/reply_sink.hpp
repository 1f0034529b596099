// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// server::reply_sink: where a shard_table's replies go, and what one reply is (the header, the
/// payload, what keeps its bytes alive). server::parameter_server models it with its
/// connections; a test with a recording fake.
#pragma once

#include <dsgd/transport/frame.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace dsgd::server {

/// Names one connection to a ps task's shard_table: chosen by the table's owner, never reused.
using peer_id = std::uint64_t;

/// A reply as a ps task sends it: the header, the payload, and what keeps the payload's bytes
/// alive until they are written (nullptr when they need nothing).
struct outgoing_reply {
  transport::frame_header header;          ///< echoes the request's id, variable, shard
  std::span<const std::byte> payload;      ///< raw floats, push counts or an error_reply
  std::shared_ptr<const void> keep_alive;  ///< owns the payload's bytes until written
};

/// A shard_table's replies go to a sink: `send(peer, reply)` writes a reply (nothing when the
/// peer is gone); `is_open(peer)`; `supersede(peer)` closes a connection whose replica has
/// registered on another (the owner then calls disconnect(peer, false, ...)); `shut_down(peer,
/// reply)` writes the reply to the chief's shutdown, then closes everything.
template <class S>
concept reply_sink = requires(S& s, const S& cs, peer_id p, outgoing_reply r) {
  s.send(p, std::move(r));
  { cs.is_open(p) } -> std::convertible_to<bool>;
  s.supersede(p);
  s.shut_down(p, std::move(r));
};

}  // namespace dsgd::server
