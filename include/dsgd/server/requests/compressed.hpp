// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Compressed traffic, each shard in the codec agreed at registration: compressed_push (a
/// gradient as the variable's compress::codec encodes it, decoded into the rule's accumulator)
/// and compressed_pull (the shard's values as fp16 or bf16, encoded once per version).
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/detail/compressed_pull.hpp>
#include <dsgd/server/detail/compressed_push.hpp>
#include <dsgd/server/requests/handler.hpp>
#include <dsgd/update/concepts.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

namespace dsgd::server::requests {

template <>
struct handler<protocol::message::compressed_push> {
  // At most what the shard's agreed codec can send (else bad_frame).
  template <class T>
  static std::span<std::byte> destination(T& t, table_peer& s, const transport::frame_header& h, error_code& ec) {
    const auto* l = t.shards.layout(h);
    const auto* shard = t.shards.find(h);
    if (!l || !shard) return detail::bad_frame(ec);
    if (h.chunk_offset == 0 &&
        !detail::size_compressed(s.compressed, t.opts.compression.of(l->name), shard->size(), h.total_length))
      return detail::bad_frame(ec);
    auto whole = std::as_writable_bytes(std::span(s.compressed))
                     .first(std::min<std::size_t>(s.compressed.size() * sizeof(std::uint32_t),
                                                  static_cast<std::size_t>(h.total_length)));
    return detail::chunk_of(whole, h, ec);
  }
  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer& s, const transport::frame_header& h, S& out) {
    const auto& l = *t.shards.layout(h);  // destination() checked both exist
    auto& shard = *t.shards.find(h);
    auto payload = std::as_bytes(std::span(s.compressed)).first(static_cast<std::size_t>(h.total_length));
    auto outcome = detail::push_compressed<T::device_type::is_host>(
        shard, t.opts.compression.of(l.name), payload, s.incoming, s.replica, h.step, detail::pushed_shard(l, t.self));
    ++t.shards.pushes_received(t.shards.key(h), s.replica);
    return answer_push(p, h, {outcome, shard.step()}, out);
  }
};

template <>
struct handler<protocol::message::compressed_pull> : step_pull<protocol::message::compressed_pull> {
  template <class T, reply_sink S>
  static bool try_answer(T& t, const parked_request& r, S& out) {
    auto reply = t.encodings.reply(t.shards.pulled(r.request), t.shards.layouts(), r.request,
                                   t.peers.at(r.from).replica, t.opts.pull_compression, t.self);
    if (reply) out.send(r.from, std::move(*reply));
    return reply.has_value();
  }
};

}  // namespace dsgd::server::requests
