// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// server::shard_table: what a ps task holds and how it answers requests, without a socket (the
/// ps-lite KVServer's request handling, typed). It routes each peer's frames to the handler of
/// their request kind (server/requests/: the one place each kind is handled), retries the
/// parked requests when a handler lets them through, answers them at their deadline, and
/// follows connections coming and going. What it holds are parts with interfaces of their own
/// (detail::table_state): the shards, the peers and the session, the parked requests.
/// server::parameter_server puts it behind a listener; a test drives it with frames in memory.
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/detail/shard_replies.hpp>
#include <dsgd/server/detail/table_state.hpp>
#include <dsgd/server/ps_options.hpp>
#include <dsgd/server/reply_sink.hpp>
#include <dsgd/server/requests/checkpoint.hpp>
#include <dsgd/server/requests/compressed.hpp>
#include <dsgd/server/requests/dense.hpp>
#include <dsgd/server/requests/dropped_count.hpp>
#include <dsgd/server/requests/handler.hpp>
#include <dsgd/server/requests/register.hpp>
#include <dsgd/server/requests/session.hpp>
#include <dsgd/server/requests/sparse.hpp>
#include <dsgd/server/requests/table.hpp>
#include <dsgd/update/concepts.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>

namespace dsgd::server {

/// The shards of one ps task and the answers to every request for them. Single-threaded: its
/// owner calls it from one thread (the ps's io_context).
///
/// For each frame of peer @p p: `destination(p, header, ec)` decodes the message kind (once),
/// checks the sizes against the placement and names the bytes its payload goes into; once they
/// are there, `received(p, header, sink)` acts on it (a push's chunk is applied as it arrives
/// where the shard streams pushes; a message's last chunk is answered). A request the rule
/// makes wait (a pull before its step completes, wait_ready, shutdown before every replica
/// finished) is parked: answered by `retry_parked` after a push or finish, or with its reason
/// by `sweep(now)` at its deadline.
///
/// @tparam U an UpdateRule; @tparam O an Optimizer; @tparam D where the shards live (host).
template <UpdateRule U, class O, Device D = device::cpu>
class shard_table {
 public:
  using options = ps_options<U, O>;                     ///< the ps's settings
  using shard_type = typename U::template shard<D, O>;  ///< one shard of the rule

  /// A table for ps task @p self of @p ps_tasks, serving @p replicas training replicas; logs
  /// through opts.connection.log (must be set).
  shard_table(cluster::task_id self, std::size_t ps_tasks, std::size_t replicas, options opts, D device = {})
      : t_(std::move(self), ps_tasks, replicas, std::move(opts), std::move(device)) {}

  /// A new connection @p p, authenticated as @p identity ("worker:1"); @p shared_memory: its
  /// payloads arrive through a shared-memory ring (its pushes are then applied whole).
  void connect(peer_id p, std::string identity, bool shared_memory = false) {
    t_.peers.connect(p, std::move(identity), shared_memory);
  }

  /// Peer @p p's connection is gone: its parked requests are forgotten. With @p departs, a
  /// registered replica that has not finished and has no other connection counts as gone for
  /// the rule (update::tracks_departures) until it registers again. @returns the peer's state,
  /// taken out of the table: the buffers its payloads were read into live as long as the caller
  /// keeps it (a ps on several threads, until the connection's reads have stopped).
  template <reply_sink S>
  auto disconnect(peer_id p, bool departs, S& out) {
    auto node = t_.peers.take(p);
    if (node.empty()) return node;
    t_.parked.forget(p);
    const auto& gone = node.mapped();
    if (!departs || !gone.registered || t_.peers.finished(gone.replica) || connected(gone.replica, out)) return node;
    t_.peers.departed(gone, t_.shards.global_step());
    if constexpr (update::tracks_departures<shard_type>) {
      t_.shards.for_each([&](auto& shard) { shard.depart(gone.replica); });
      retry_parked(out);
    }
    return node;
  }

  /// A peer claiming to be replica @p replica (task @p task) failed the handshake: @p why.
  /// Unless that replica is connected (a stranger claims it) or finished, errors of steps
  /// waiting for it name it until it registers; where no step can complete without it
  /// (stalled_by_refusals), pulls waiting for one, now or later, fail at once with
  /// errc::handshake_failed naming it.
  template <reply_sink S>
  void refused(std::size_t replica, std::string task, std::string why, S& out) {
    if (connected(replica, out) || !t_.peers.refused(replica, task, why)) return;
    t_.log(t_.self + ": " + task + " (replica " + std::to_string(replica) + ") was refused at authentication: " + why);
    if (!t_.stalled_by_refusals()) return;
    t_.parked.erase_if([&](const detail::parked_request& r) {
      bool pull = false;
      requests::with_handler(r.kind, [&]<class H>(H) { pull = requests::waits_for_a_step<H>; });
      if (pull)
        detail::reply_error(out, r.from, r.request, make_error_code(errc::handshake_failed),
                            t_.peers.absent().cannot_complete(t_.self, r.request.step));
      return pull;
    });
  }

  /// Where the payload of @p h from @p p goes: straight into the buffer that will use it,
  /// exactly h.payload_length bytes. Decodes the message kind for received().
  /// @param ec set to errc::bad_frame for a frame no request of the placement can be (a push or
  ///        init_shard of a shard it lacks or of another size, a payload on a request without
  ///        one): the owner closes the connection. A sparse request that fails a check gets a
  ///        scratch buffer and its error is answered at its last chunk.
  std::span<std::byte> destination(peer_id p, const transport::frame_header& h, error_code& ec) {
    auto* s = t_.peers.find(p);
    if (!s) return detail::bad_frame(ec);  // not connected
    const auto* info = protocol::decode_request(h.type);
    s->kind = info ? std::optional(info->kind) : std::nullopt;
    std::span<std::byte> into;
    const bool known = info && requests::with_handler(info->kind, [&]<class H>(H) {
                         if constexpr (requires { H::destination(t_, *s, h, ec); }) {
                           into = H::destination(t_, *s, h, ec);
                         } else if (info->payload == protocol::payload_kind::control) {
                           s->control.resize(h.payload_length);
                           into = std::as_writable_bytes(std::span(s->control));
                         } else if (h.payload_length != 0) {
                           ec = make_error_code(errc::bad_frame);
                         }
                       });
    if (!known && h.payload_length != 0) ec = make_error_code(errc::bad_frame);
    return into;
  }

  /// The payload of @p h (named by destination()) has arrived: a push's chunk is applied where
  /// the shard can; a message's last chunk is answered through @p out (an error naming what was
  /// wrong, keeping the connection).
  template <reply_sink S>
  void received(peer_id p, const transport::frame_header& h, S& out) {
    auto* s = t_.peers.find(p);
    if (!s) return;  // disconnected meanwhile
    if (!h.last_chunk()) {
      if (s->kind)
        requests::with_handler(*s->kind, [&]<class H>(H) {
          if constexpr (requires { H::chunk(t_, *s, h); }) H::chunk(t_, *s, h);
        });
      return;
    }
    try {
      if (answer(p, *s, h, out) == requests::after::retry_parked) retry_parked(out);
    } catch (const dsgd::error& e) {
      detail::reply_error(out, p, h, e.code(), e.what());
    }
  }

  /// Answers every parked request the shards now allow (after a push applied, a finish, an init).
  template <reply_sink S>
  void retry_parked(S& out) {
    t_.parked.retry([&](const detail::parked_request& r) {
      if (!out.is_open(r.from)) return true;
      bool done = false;
      try {
        requests::with_handler(r.kind, [&]<class H>(H) {
          if constexpr (requests::parking_handler<H>) done = H::try_answer(t_, r, out);
        });
      } catch (const dsgd::error& e) {
        detail::reply_error(out, r.from, r.request, e.code(), e.what());
        done = true;
      }
      return done;
    });
  }

  /// Answers the parked requests whose deadline is before @p now with errc::timed_out and what
  /// they wait for; a parked shutdown shuts down without the replicas that did not finish.
  /// @returns true when it shut down (the owner stops sweeping)
  template <reply_sink S>
  bool sweep(update::clock_type::time_point now, S& out) {
    return t_.parked.sweep(now, [&](const detail::parked_request& r) {
      bool shut_down = false;
      requests::with_handler(r.kind, [&]<class H>(H) {
        if constexpr (requires { H::expire(t_, r, out); }) {
          H::expire(t_, r, out);
          shut_down = true;
        } else if constexpr (requests::parking_handler<H>) {
          detail::reply_error(out, r.from, r.request, make_error_code(errc::timed_out), H::why_waiting(t_, r));
        }
      });
      return shut_down;
    });
  }

  /// @returns the shard (variable, shard) or nullptr.
  const shard_type* find(std::uint32_t variable, std::uint32_t shard) const { return t_.shards.find(variable, shard); }
  /// @returns true once every shard of the registered placement exists.
  bool ready() const { return t_.shards.ready(); }
  /// @returns how many requests are parked.
  std::size_t parked() const noexcept { return t_.parked.size(); }
  /// @returns how many restores have re-created the session.
  std::uint64_t generation() const noexcept { return t_.peers.session().generation(); }
  /// @returns true once a chief has registered.
  bool chief_registered() const noexcept { return t_.peers.chief_registered(); }
  /// @returns true while a registered chief is connected.
  bool chief_connected() const { return t_.peers.chief_connected(); }
  /// @returns true when @p p's replica has finished (its connection may end cleanly).
  bool finished(peer_id p) const {
    auto* s = t_.peers.find(p);
    return s && t_.peers.finished(s->replica);
  }

 private:
  // A request's last chunk is in: checked against the registration and the session, then
  // answered by its kind's handler.
  template <reply_sink S>
  requests::after answer(peer_id p, detail::table_peer& s, const transport::frame_header& h, S& out) {
    if (!s.kind) throw error(errc::bad_frame, "unknown message type " + std::to_string(h.type));
    auto then = requests::after::nothing;
    requests::with_handler(*s.kind, [&]<class H>(H) {
      if constexpr (!requests::answered_unregistered<H>) {
        if (!s.registered)
          throw error(errc::invalid_argument, std::string(protocol::to_string(*s.kind)) + " before register_worker");
        if (!t_.peers.current(s)) throw t_.peers.aborted(s);
      }
      then = H::answer(t_, p, s, h, out);
    });
    return then;
  }

  template <reply_sink S>
  bool connected(std::size_t replica, const S& out) const {
    return t_.peers.connected(replica, [&](peer_id q) { return out.is_open(q); });
  }

  detail::table_state<U, O, D> t_;
};

}  // namespace dsgd::server
