// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// dropped_count: how many pushes this ps task's shards dropped, stale (beyond an SSP bound,
/// behind a sync step) or duplicate, answered at once in the reply's step.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/detail/shard_replies.hpp>
#include <dsgd/server/requests/handler.hpp>

#include <cstdint>

namespace dsgd::server::requests {

template <>
struct handler<protocol::message::dropped_count> {
  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer&, const transport::frame_header& h, S& out) {
    std::uint64_t n = 0;
    t.shards.for_each([&](const auto& shard) { n += shard.dropped(); });
    detail::reply(out, p, h, protocol::message::reply_ok, n);
    return after::nothing;
  }
};

}  // namespace dsgd::server::requests
