// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The shape of a request handler, and how a shard_table finds one: `handler<K>` is the one
/// place request kind K is handled, specialised in a header of server/requests/ for every
/// request of protocol::messages (a kind without one does not compile).
///
/// A handler has, for a table_state `t`, the peer's id `p` and state `s`, the frame header `h`
/// and a reply_sink `out` (static member function templates):
///  - `answer(t, p, s, h, out) -> after` (required): acts on the request once its last chunk
///    is in, and answers it (or parks it); an error it throws is answered to the peer;
///  - `destination(t, s, h, ec) -> std::span<std::byte>`: where its payload goes (without
///    one: into s.control for a control payload, and none allowed for a request without one);
///  - `chunk(t, s, h)`: a chunk other than the last has arrived (a push applied as it streams);
///  - `before_registration = true`: answered before register_worker and in any generation;
/// and, for a request that can wait (`parks = true`):
///  - `try_answer(t, r, out) -> bool`: answers parked_request r if it may be answered now;
///  - `why_waiting(t, r) -> std::string`: what it waits for, in its errc::timed_out;
///  - `timeout(t)`: how long it may wait;
///  - `blocked_by_refusals = true`: a step's pull, which fails at once where refused replicas
///    leave no step to complete (table_state::stalled_by_refusals);
///  - `expire(t, r, out)`: what its deadline does instead of errc::timed_out (shutdown).
/// The pulls of a step take all but try_answer from step_pull.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/detail/parked_requests.hpp>
#include <dsgd/server/detail/shard_replies.hpp>
#include <dsgd/server/detail/table_peer.hpp>
#include <dsgd/server/reply_sink.hpp>
#include <dsgd/transport/frame.hpp>
#include <dsgd/update/concepts.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <utility>
#include <vector>

namespace dsgd::server::requests {

using detail::parked_request;
using detail::table_peer;

/// The handler of request kind @p K (see the file's comment).
template <protocol::message K>
struct handler;

/// A handler of a request that can wait (parks = true).
template <class H>
concept parking_handler = requires {
  requires H::parks;
};

/// A handler answered before register_worker and in any generation.
template <class H>
concept answered_unregistered = requires {
  requires H::before_registration;
};

/// A handler of a step's pull (blocked_by_refusals = true).
template <class H>
concept waits_for_a_step = requires {
  requires H::blocked_by_refusals;
};

/// What a handler's answer allows: nothing more, or parked requests to be retried (a push
/// applied, a shard created, a replica finished, a session opened).
enum class after { nothing, retry_parked };

/// Answers request @p h of peer @p p as handler<K>::try_answer can now, else parks it until
/// its handler's timeout. @throws dsgd::error(errc::handshake_failed) for a step's pull that
/// refused replicas leave no step to complete
template <protocol::message K, class T, reply_sink S>
after answer_or_park(T& t, peer_id p, const transport::frame_header& h, S& out, std::vector<std::uint64_t> rows = {}) {
  using H = handler<K>;
  parked_request r{p, K, h, update::clock_type::now() + H::timeout(t), std::move(rows)};
  if (H::try_answer(t, r, out)) return after::nothing;
  if constexpr (waits_for_a_step<H>)
    if (t.stalled_by_refusals()) throw error(errc::handshake_failed, t.peers.absent().cannot_complete(t.self, h.step));
  t.parked.park(std::move(r));
  return after::nothing;
}

/// Answers a push of peer @p p with @p done (what it did, the shard's step after it).
template <reply_sink S>
after answer_push(peer_id p, const transport::frame_header& h, std::pair<update::push_outcome, std::uint64_t> done,
                  S& out) {
  detail::reply_pushed(out, p, h, done.first, done.second);
  return done.first == update::push_outcome::applied ? after::retry_parked : after::nothing;
}

/// What every pull of a step (pull, compressed_pull, sparse_pull) shares: it parks until the
/// rule lets the reader have the step, for at most serving.step_timeout; at its deadline it
/// names its shard's wait reason and the absent replicas; and it fails at once where refused
/// replicas leave no step to complete. A handler of one derives from it and adds try_answer.
template <protocol::message K>
struct step_pull {
  static constexpr bool parks = true;
  static constexpr bool blocked_by_refusals = true;

  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer&, const transport::frame_header& h, S& out) {
    return answer_or_park<K>(t, p, h, out);
  }
  template <class T>
  static std::string why_waiting(const T& t, const parked_request& r) {
    const auto* shard = t.shards.find(r.request);
    return t.self + ": " +
           (shard ? shard->wait_reason(t.peers.at(r.from).replica, r.request.step) : std::string("no such shard")) +
           t.peers.absent().describe();
  }
  template <class T>
  static auto timeout(const T& t) {
    return t.opts.serving.step_timeout;
  }
};

// Calls @p f(handler<K>{}) if @p kind is K, the request of row @p I of protocol::messages.
template <std::size_t I, class F>
bool call_if_kind(protocol::message kind, F& f) {
  constexpr protocol::message_info info = protocol::messages[I];
  if constexpr (info.payload == protocol::payload_kind::reply) {
    return false;
  } else {
    if (kind != info.kind) return false;
    f(handler<info.kind>{});
    return true;
  }
}

/// Calls @p f(handler<kind>{}) for the request @p kind. @returns false for a reply's kind.
template <class F>
bool with_handler(protocol::message kind, F&& f) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) { return (call_if_kind<I>(kind, f) || ...); }
  (std::make_index_sequence<std::size(protocol::messages)>{});
}

}  // namespace dsgd::server::requests
