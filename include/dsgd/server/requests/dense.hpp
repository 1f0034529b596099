// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Whole shards as raw floats: init_shard (the chief's initial or restored values of a shard),
/// push (a gradient, applied as its chunks stream in where the rule can) and pull (the shard's
/// values, once the rule lets the reader have them).
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/detail/shard_replies.hpp>
#include <dsgd/server/requests/handler.hpp>
#include <dsgd/update/concepts.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <utility>

namespace dsgd::server::requests {

/// Sizes @p s's buffer for the raw floats of @p h when they are @p floats (nullopt: no shard
/// takes them) and names the chunk's part of it; else bad_frame.
inline std::span<std::byte> dense_payload(table_peer& s, const transport::frame_header& h,
                                          std::optional<std::size_t> floats, error_code& ec) {
  const bool fits = h.total_length % sizeof(float) == 0 && floats == h.total_length / sizeof(float);
  if (!fits) return detail::bad_frame(ec);
  if (h.chunk_offset == 0) {
    s.incoming.resize(*floats);
    s.streaming = false;
  }
  return detail::chunk_of(std::as_writable_bytes(std::span(s.incoming)), h, ec);
}

template <>
struct handler<protocol::message::init_shard> {
  // Only a shard of the registered placement, at its size: the only allocation a peer can ask
  // for is one the placement accounts for.
  template <class T>
  static std::span<std::byte> destination(T& t, table_peer& s, const transport::frame_header& h, error_code& ec) {
    const auto* l = t.shards.layout(h);
    return dense_payload(s, h, l ? std::optional(l->rows * l->row_elements()) : std::nullopt, ec);
  }

  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer& s, const transport::frame_header& h, S& out) {
    if (auto* shard = t.shards.create(h, s.incoming)) {
      t.peers.members().admit(*shard);
      if (t.shards.ready()) t.log(t.self + " ready: " + std::to_string(t.shards.size()) + " shards");
    }
    detail::reply(out, p, h, protocol::message::reply_ok);
    return after::retry_parked;
  }
};

template <>
struct handler<protocol::message::push> {
  // A push for a shard this ps holds, at its size.
  template <class T>
  static std::span<std::byte> destination(T& t, table_peer& s, const transport::frame_header& h, error_code& ec) {
    const auto* shard = t.shards.find(h);
    return dense_payload(s, h, shard ? std::optional(shard->size()) : std::nullopt, ec);
  }

  // A chunk other than the last: applied now, out of place, where the shard can
  // (streams_pushes), overlapping the rest of the push; published or applied whole at the last
  // chunk. Not for a worker on this host: through shared memory a chunk arrives in the time of
  // a copy, and applying in place once is cheaper than streaming out of place.
  template <class T>
  static void chunk(T& t, table_peer& s, const transport::frame_header& h) {
    if constexpr (update::streams_pushes<typename T::shard_type>) {
      if (h.chunk_offset == 0)
        s.streaming = t.opts.serving.apply_in_chunks && s.registered && t.peers.current(s) && !s.shared_memory;
      if (!s.streaming) return;
      if (h.chunk_offset % sizeof(float) != 0 || h.payload_length % sizeof(float) != 0) {
        s.streaming = false;
        return;
      }
      auto* shard = t.shards.find(h);
      s.streaming = shard && shard->push_chunk(s.replica, h.chunk_offset / sizeof(float),
                                               h.payload_length / sizeof(float), s.incoming.data());
    }
  }

  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer& s, const transport::frame_header& h, S& out) {
    auto& shard = *t.shards.find(h);  // destination() checked it exists
    update::push_outcome outcome;
    if constexpr (update::streams_pushes<typename T::shard_type>) {
      outcome = std::exchange(s.streaming, false) ? shard.push_streamed(s.replica, h.step, s.incoming.data())
                                                  : shard.push(s.replica, h.step, s.incoming.data());
    } else {
      outcome = shard.push(s.replica, h.step, s.incoming.data());
    }
    ++t.shards.pushes_received(t.shards.key(h), s.replica);
    return answer_push(p, h, {outcome, shard.step()}, out);
  }
};

template <>
struct handler<protocol::message::pull> : step_pull<protocol::message::pull> {
  template <class T, reply_sink S>
  static bool try_answer(T& t, const parked_request& r, S& out) {
    auto reply = detail::pull_reply(t.shards.pulled(r.request), t.peers.at(r.from).replica, r.request.step,
                                    detail::reply_header(r.request, protocol::message::pull_reply));
    if (reply) out.send(r.from, std::move(*reply));
    return reply.has_value();
  }
};

}  // namespace dsgd::server::requests
