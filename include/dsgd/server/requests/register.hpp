// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// register_worker: a worker (or the chief) says which replica it is and the placement it
/// computed; the ps checks both and its compression against its own, closes the replica's
/// older connections, and answers how many of the replica's pushes each shard received.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/detail/compressed_pull.hpp>
#include <dsgd/server/detail/compressed_push.hpp>
#include <dsgd/server/detail/shard_replies.hpp>
#include <dsgd/server/requests/handler.hpp>
#include <dsgd/update/concepts.hpp>

#include <span>
#include <utility>

namespace dsgd::server::requests {

template <>
struct handler<protocol::message::register_worker> {
  static constexpr bool before_registration = true;

  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer& s, const transport::frame_header& h, S& out) {
    auto r = protocol::decode_control<protocol::register_request>(detail::control_bytes(s), "register_worker");
    t.peers.check(s, r);
    if (t.shards.agree(r) && r.shards == 0) t.log(t.self + " ready: 0 shards");
    detail::check_compression(t.opts.compression, r, t.self);
    detail::check_pull_compression(t.opts.pull_compression, r, t.self);
    // The rule's settings agree (a worker set up without client_options::rule sends none and
    // is not checked; the trainer always sends them).
    if (const auto ours = update::describe_rule(t.opts.rule); !r.rule.empty() && r.rule != ours)
      throw error(errc::invalid_argument, "update rule mismatch: " + r.task + " trains with " + r.rule + " but " +
                                              t.self + " applies " +
                                              (ours.empty() ? std::string("a rule without settings") : ours) +
                                              " (workers and ps tasks need the same trainer_options::rule)");
    // A replica registering on a new connection supersedes its older ones (a restarted or
    // reconnected worker): closed now, nothing they still carry is applied after the counts
    // below are read, so those counts are final.
    for (auto q : t.peers.older_connections(p, r.replica)) {
      t.log(t.self + ": " + r.task + " registered again; closing its older connection");
      out.supersede(q);
    }
    if constexpr (update::tracks_departures<typename T::shard_type>)
      t.shards.for_each([&](auto& shard) { shard.rejoin(r.replica); });
    t.peers.registered(s, r, t.shards.global_step());
    auto counts = t.shards.counts(r.layouts, r.replica);
    auto bytes = std::as_bytes(std::span(*counts));
    out.send(p, {detail::reply_header(h, protocol::message::reply_ok), bytes, std::move(counts)});
    return after::nothing;
  }
};

}  // namespace dsgd::server::requests
