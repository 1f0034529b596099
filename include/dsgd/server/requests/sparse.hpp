// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Rows of a shard by key: sparse_pull (u64 LE keys, answered with their rows once the rule
/// lets the reader have them) and sparse_push (keys, then a gradient row each). A request that
/// fails a check on its first chunk is read into scratch and its error answered at its last.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/detail/shard_replies.hpp>
#include <dsgd/server/detail/sparse_layout.hpp>
#include <dsgd/server/requests/handler.hpp>
#include <dsgd/update/concepts.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dsgd::server::requests {

/// The layout of the shard sparse request @p kind (header @p h) of @p s names
/// (detail::sparse_request_shard). @throws dsgd::error naming a bad request, or a rule whose
/// shards do not read and update rows (update::keyed_rows)
template <class T>
const protocol::shard_layout& sparse_shard(const T& t, const table_peer& s, protocol::message kind,
                                           const transport::frame_header& h) {
  if constexpr (!update::keyed_rows<typename T::shard_type>)
    throw error(errc::invalid_argument,
                std::string(protocol::to_string(kind)) + " on " + t.self +
                    ": its update rule's shards do not read or update rows (update::keyed_rows)");
  const auto* shard = t.shards.find(h);
  return detail::sparse_request_shard(kind, h, s.registered, t.shards.layout(h),
                                      shard ? std::optional(shard->size()) : std::nullopt, t.self);
}

/// Checks sparse request @p kind from its first header and sizes its buffer, or marks it
/// rejected (its payload then goes into a scratch chunk); names the chunk's bytes.
template <class T>
std::span<std::byte> sparse_payload(const T& t, table_peer& s, protocol::message kind, const transport::frame_header& h,
                                    error_code& ec) {
  const bool pull = kind == protocol::message::sparse_pull;
  return detail::keyed_chunk(
      s, h, ec,
      [&](table_peer& s) {
        const auto& l = sparse_shard(t, s, kind, h);
        auto n = detail::sparse_request_keys(kind, l, h.total_length, t.opts.serving.max_rows_per_request, t.self);
        if (pull) {
          s.keys_in.resize(n);
        } else {
          s.sparse_keys = n;
          s.sparse_in.resize(h.total_length / sizeof(float));
        }
      },
      [&](table_peer& s) {
        return pull ? std::as_writable_bytes(std::span(s.keys_in)) : std::as_writable_bytes(std::span(s.sparse_in));
      });
}

template <>
struct handler<protocol::message::sparse_pull> : step_pull<protocol::message::sparse_pull> {
  template <class T>
  static std::span<std::byte> destination(T& t, table_peer& s, const transport::frame_header& h, error_code& ec) {
    return sparse_payload(t, s, protocol::message::sparse_pull, h, ec);
  }
  // The keys become rows of the shard here (a bad key is answered at once); the reply waits.
  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer& s, const transport::frame_header& h, S& out) {
    detail::throw_if_rejected(s);
    const auto kind = protocol::message::sparse_pull;
    auto rows = detail::local_rows(kind, sparse_shard(t, s, kind, h), s.keys_in, t.self);
    return answer_or_park<kind>(t, p, h, out, std::move(rows));
  }
  template <class T, reply_sink S>
  static bool try_answer(T& t, const parked_request& r, S& out) {
    if constexpr (update::keyed_rows<typename T::shard_type>) {  // else answer() refused it
      auto& shard = t.shards.pulled(r.request);
      const std::size_t dim = t.shards.layout(r.request)->row_elements();  // a shard has a layout
      auto reply = detail::rows_reply(shard, t.peers.at(r.from).replica, r.request.step, r.rows, dim,
                                      detail::reply_header(r.request, protocol::message::pull_reply));
      if (reply) out.send(r.from, std::move(*reply));
      return reply.has_value();
    }
    return true;
  }
};

template <>
struct handler<protocol::message::sparse_push> {
  template <class T>
  static std::span<std::byte> destination(T& t, table_peer& s, const transport::frame_header& h, error_code& ec) {
    return sparse_payload(t, s, protocol::message::sparse_push, h, ec);
  }
  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer& s, const transport::frame_header& h, S& out) {
    detail::throw_if_rejected(s);
    const auto& l = sparse_shard(t, s, protocol::message::sparse_push, h);
    const std::size_t n = s.sparse_keys;
    std::vector<std::uint64_t> keys(n);
    if (n) std::memcpy(keys.data(), s.sparse_in.data(), n * sizeof(std::uint64_t));
    auto rows = detail::local_rows(protocol::message::sparse_push, l, keys, t.self);
    const float* grads = s.sparse_in.data() + n * (sizeof(std::uint64_t) / sizeof(float));
    auto& shard = *t.shards.find(h);  // sparse_shard() checked it exists and takes rows
    if constexpr (update::keyed_rows<typename T::shard_type>) {
      auto outcome = shard.push_rows(s.replica, h.step, rows, l.row_elements(), grads);
      ++t.shards.pushes_received(t.shards.key(h), s.replica);
      return answer_push(p, h, {outcome, shard.step()}, out);
    }
    return after::nothing;
  }
};

}  // namespace dsgd::server::requests
