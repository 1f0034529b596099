// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// A job's life on a ps task: wait_ready (answered once every shard exists in a session the
/// chief opened), open_session (the chief's stamp), finish (a replica has no more data) and
/// shutdown (the chief's, answered once every replica finished, then the ps closes).
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/detail/shard_replies.hpp>
#include <dsgd/server/requests/handler.hpp>

#include <string>

namespace dsgd::server::requests {

template <>
struct handler<protocol::message::wait_ready> {
  static constexpr bool parks = true;

  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer&, const transport::frame_header& h, S& out) {
    return answer_or_park<protocol::message::wait_ready>(t, p, h, out);
  }
  template <class T, reply_sink S>
  static bool try_answer(T& t, const parked_request& r, S& out) {
    if (!t.shards.ready() || !t.peers.session().is_open()) return false;  // answered in a session only
    detail::reply(out, r.from, r.request, protocol::message::reply_ok, t.peers.session().stamp());
    return true;
  }
  template <class T>
  static std::string why_waiting(const T& t, const parked_request&) {
    if (t.shards.ready()) return t.peers.session().not_opened(t.self);
    return t.self + ": variables not initialised before the deadline (" + t.shards.progress() +
           " shards created; is the chief running?)";
  }
  template <class T>
  static auto timeout(const T& t) {
    return t.opts.serving.ready_timeout;
  }
};

template <>
struct handler<protocol::message::open_session> {
  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer&, const transport::frame_header& h, S& out) {
    t.peers.session().open(h.step);
    detail::reply(out, p, h, protocol::message::reply_ok);
    return after::retry_parked;
  }
};

template <>
struct handler<protocol::message::finish> {
  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer& s, const transport::frame_header& h, S& out) {
    t.shards.for_each([&](auto& shard) { shard.finish(s.replica); });
    t.tables.finish(s.replica);
    t.peers.finished(s, t.shards.global_step());
    detail::reply(out, p, h, protocol::message::reply_ok);
    return after::retry_parked;
  }
};

template <>
struct handler<protocol::message::shutdown> {
  static constexpr bool parks = true;

  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer&, const transport::frame_header& h, S& out) {
    return answer_or_park<protocol::message::shutdown>(t, p, h, out);
  }
  template <class T, reply_sink S>
  static bool try_answer(T& t, const parked_request& r, S& out) {
    if (!t.peers.all_finished()) return false;
    shut_down(t, r, out);
    return true;
  }
  template <class T>
  static std::string why_waiting(const T& t, const parked_request&) {
    return t.self + ": " + t.peers.unfinished() + " did not finish";
  }
  template <class T>
  static auto timeout(const T& t) {
    return t.opts.serving.step_timeout;
  }
  // At its deadline the ps shuts down without the replicas that did not finish.
  template <class T, reply_sink S>
  static void expire(T& t, const parked_request& r, S& out) {
    t.log(t.self + ": shutting down without " + t.peers.unfinished() + " having finished");
    shut_down(t, r, out);
  }

 private:
  template <class T, reply_sink S>
  static void shut_down(T& t, const parked_request& r, S& out) {
    t.log(t.self + ": shutdown requested by " + t.peers.at(r.from).identity);
    out.shut_down(r.from, {detail::reply_header(r.request, protocol::message::reply_ok), {}, nullptr});
  }
};

}  // namespace dsgd::server::requests
