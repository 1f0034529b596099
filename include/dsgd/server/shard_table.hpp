// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// server::shard_table: what a ps task holds and how it answers requests, without a socket (the
/// ps-lite KVServer's request handling, typed). It owns the shards, their layouts, the
/// generation (restores so far), the pushes received per replica, the finished replicas and the
/// parked requests; it is given each peer's frames (header, then payload into the buffer
/// destination() names) and hands every reply to a reply_sink. server::parameter_server puts
/// it behind a TCP listener; a test drives it with frames in memory.
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/detail/shard_replies.hpp>
#include <dsgd/server/detail/shard_requests.hpp>
#include <dsgd/server/ps_options.hpp>
#include <dsgd/server/reply_sink.hpp>
#include <dsgd/update/concepts.hpp>
#include <dsgd/update/sync_average.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

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
class shard_table : detail::shard_requests<U, O, D> {
  using base = detail::shard_requests<U, O, D>;

 public:
  using options = ps_options<U, O>;                     ///< the ps's settings
  using shard_type = typename U::template shard<D, O>;  ///< one shard of the rule

  /// A table for ps task @p self of @p ps_tasks, serving @p replicas training replicas; logs
  /// through opts.connection.log (must be set).
  shard_table(cluster::task_id self, std::size_t ps_tasks, std::size_t replicas, options opts, D device = {})
      : base(std::move(self), ps_tasks, replicas, std::move(opts), std::move(device)) {}

  /// A new connection @p p, authenticated as @p identity ("worker:1"); @p shared_memory: its
  /// payloads arrive through a shared-memory ring (its pushes are then applied whole).
  void connect(peer_id p, std::string identity, bool shared_memory = false) {
    auto& s = this->peers_[p];
    s.identity = std::move(identity);
    s.shared_memory = shared_memory;
  }

  /// Peer @p p's connection is gone: its parked requests are forgotten. With @p departs, a
  /// registered replica that has not finished and has no other connection counts as gone for
  /// the rule (update::tracks_departures) until it registers again. @returns the peer's state,
  /// taken out of the table: the buffers its payloads were read into live as long as the caller
  /// keeps it (a ps on several threads, until the connection's reads have stopped).
  template <reply_sink S>
  auto disconnect(peer_id p, bool departs, S& out) {
    auto it = this->peers_.find(p);
    if (it == this->peers_.end()) return decltype(this->peers_.extract(it)){};
    auto node = this->peers_.extract(it);
    const auto& gone = node.mapped();
    std::erase_if(this->parked_, [&](const auto& r) { return r.from == p; });
    if (!departs || !gone.registered || this->finished_.contains(gone.replica) || connected(gone.replica, out))
      return node;
    this->absent_.departed(gone.replica, gone.identity);
    this->members_.left(gone.replica, gone.identity, "connection lost", this->global_step());
    if constexpr (update::tracks_departures<shard_type>) {
      for (auto& [k, s] : this->shards_) s->depart(gone.replica);
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
    if (replica >= this->replicas_ || this->finished_.contains(replica) || connected(replica, out)) return;
    if (!this->absent_.refused(replica, task, why)) return;
    this->log(this->self_ + ": " + task + " (replica " + std::to_string(replica) +
              ") was refused at authentication: " + why);
    if (!stalled_by_refusals()) return;
    std::erase_if(this->parked_, [&](const auto& r) {
      if (r.kind != protocol::message::pull && r.kind != protocol::message::compressed_pull &&
          r.kind != protocol::message::sparse_pull)
        return false;
      this->reply_error(out, r.from, r.request, make_error_code(errc::handshake_failed), cannot_complete(r.request));
      return true;
    });
  }

  /// Where the payload of @p h from @p p goes: straight into the buffer that will use it,
  /// exactly h.payload_length bytes. Decodes the message kind for received().
  /// @param ec set to errc::bad_frame for a frame no request of the placement can be (a push or
  ///        init_shard of a shard it lacks or of another size, a payload on a request without
  ///        one): the owner closes the connection. A sparse request that fails a check gets a
  ///        scratch buffer and its error is answered at its last chunk.
  std::span<std::byte> destination(peer_id p, const transport::frame_header& h, error_code& ec) {
    auto found = this->peers_.find(p);
    if (found == this->peers_.end()) return base::fail(ec);  // not connected
    auto& s = found->second;
    const auto* info = protocol::decode_request(h.type);
    s.kind = info ? std::optional<protocol::message>(info->kind) : std::nullopt;
    switch (info ? info->payload : protocol::payload_kind::none) {
      case protocol::payload_kind::control:
        s.control.resize(h.payload_length);
        return std::as_writable_bytes(std::span(s.control));
      case protocol::payload_kind::dense:
        return this->dense_destination(s, *s.kind, h, ec);
      case protocol::payload_kind::sparse:
        return this->sparse_destination(s, *s.kind, h, ec);
      case protocol::payload_kind::compressed:
        return this->compressed_destination(s, h, ec);
      default:
        if (h.payload_length != 0) ec = make_error_code(errc::bad_frame);
        return {};
    }
  }

  /// The payload of @p h (named by destination()) has arrived: a push's chunk is applied where
  /// the shard can; a message's last chunk is answered through @p out (an error naming what was
  /// wrong, keeping the connection).
  template <reply_sink S>
  void received(peer_id p, const transport::frame_header& h, S& out) {
    auto found = this->peers_.find(p);
    if (found == this->peers_.end()) return;  // disconnected meanwhile
    auto& s = found->second;
    if (!h.last_chunk()) {
      if (s.kind == protocol::message::push) this->push_chunk(s, h);
      return;
    }
    try {
      dispatch(p, s, h, out);
    } catch (const dsgd::error& e) {
      this->reply_error(out, p, h, e.code(), e.what());
    }
  }

  /// Answers every parked request the shards now allow (after a push applied, a finish, an init).
  template <reply_sink S>
  void retry_parked(S& out) {
    for (auto it = this->parked_.begin(); it != this->parked_.end();) {
      bool done = false;
      try {
        done = !out.is_open(it->from) || try_answer(it->from, it->kind, it->request, it->rows, out);
      } catch (const dsgd::error& e) {
        this->reply_error(out, it->from, it->request, e.code(), e.what());
        done = true;
      }
      it = done ? this->parked_.erase(it) : std::next(it);
    }
  }

  /// Answers the parked requests whose deadline is before @p now with errc::timed_out and what
  /// they wait for; a parked shutdown shuts down without the replicas that did not finish.
  /// @returns true when it shut down (the owner stops sweeping)
  template <reply_sink S>
  bool sweep(update::clock_type::time_point now, S& out) {
    for (auto it = this->parked_.begin(); it != this->parked_.end();) {
      if (it->deadline > now) {
        ++it;
        continue;
      }
      if (it->kind == protocol::message::shutdown) {
        this->log(this->self_ + ": shutting down without " + this->unfinished() + " having finished");
        auto r = std::move(*it);
        this->parked_.erase(it);
        shut_down(r.from, r.request, out);
        return true;
      }
      this->reply_error(out, it->from, it->request, make_error_code(errc::timed_out), this->why_waiting(*it));
      it = this->parked_.erase(it);
    }
    return false;
  }

  /// @returns the shard (variable, shard) or nullptr.
  const shard_type* find(std::uint32_t variable, std::uint32_t shard) const {
    auto it = this->shards_.find(base::key(variable, shard));
    return it == this->shards_.end() ? nullptr : it->second.get();
  }
  /// @returns true once every shard of the registered placement exists.
  bool ready() const noexcept { return base::ready(); }
  /// @returns how many requests are parked.
  std::size_t parked() const noexcept { return this->parked_.size(); }
  /// @returns how many restores have re-created the session.
  std::uint64_t generation() const noexcept { return this->session_.generation(); }
  /// @returns true once a chief has registered.
  bool chief_registered() const noexcept { return this->chief_seen_; }
  /// @returns true while a registered chief is connected.
  bool chief_connected() const noexcept {
    return std::ranges::any_of(this->peers_, [](const auto& peer) { return peer.second.chief; });
  }
  /// @returns true when @p p's replica has finished (its connection may end cleanly).
  bool finished(peer_id p) const {
    auto it = this->peers_.find(p);
    return it != this->peers_.end() && this->finished_.contains(it->second.replica);
  }

 private:
  using peer_state = typename base::peer_state;

  // The one place that says what each request does: a new message kind gets its case here.
  template <reply_sink S>
  void dispatch(peer_id p, peer_state& s, const transport::frame_header& h, S& out) {
    if (!s.kind) throw error(errc::bad_frame, "unknown message type " + std::to_string(h.type));
    const protocol::message kind = *s.kind;
    if (kind != protocol::message::register_worker && !s.registered)
      throw error(errc::invalid_argument, std::string(protocol::to_string(kind)) + " before register_worker");
    if (kind != protocol::message::register_worker && s.generation != this->session_.generation())
      throw this->aborted(s);
    switch (kind) {
      case protocol::message::register_worker:
        return on_register(p, s, h, out);
      case protocol::message::init_shard:
        this->init(s, h);
        this->reply(out, p, h, protocol::message::reply_ok);
        return retry_parked(out);
      case protocol::message::wait_ready:
      case protocol::message::pull:
      case protocol::message::compressed_pull:
      case protocol::message::shutdown:
        return park_or_answer(p, kind, h, {}, out);
      case protocol::message::push:
        return after_push(p, h, this->push(s, h), out);
      case protocol::message::sparse_pull:
        return park_or_answer(p, kind, h, this->sparse_pull_rows(s, h), out);
      case protocol::message::sparse_push:
        return after_push(p, h, this->sparse_push(s, h), out);
      case protocol::message::compressed_push:
        return after_push(p, h, this->compressed_push(s, h), out);
      case protocol::message::finish:
        for (auto& [k, shard] : this->shards_) shard->finish(s.replica);
        this->finished_.insert(s.replica);
        this->members_.finished(s.replica, s.identity, this->global_step());
        this->reply(out, p, h, protocol::message::reply_ok);
        return retry_parked(out);
      case protocol::message::save:
        this->save(s, h);
        return this->reply(out, p, h, protocol::message::reply_ok);
      case protocol::message::restore:
        return on_restore(p, s, h, out);
      case protocol::message::open_session:
        this->session_.open(h.step);
        this->reply(out, p, h, protocol::message::reply_ok);
        return retry_parked(out);
      default:
        throw error(errc::bad_frame, "unknown message type " + std::to_string(h.type));
    }
  }

  template <reply_sink S>
  void on_register(peer_id p, peer_state& s, const transport::frame_header& h, S& out) {
    auto r = this->check_registration(s);
    detail::check_compression(this->opts_.compression, r, this->self_);
    detail::check_pull_compression(this->opts_.pull_compression, r, this->self_);
    // A replica registering on a new connection supersedes its older ones (a restarted or
    // reconnected worker): closed now, nothing they still carry is applied after the counts
    // below are read, so those counts are final.
    std::vector<peer_id> older;
    for (const auto& [q, other] : this->peers_)
      if (q != p && other.registered && other.replica == r.replica) older.push_back(q);
    for (auto q : older) {
      this->log(this->self_ + ": " + r.task + " registered again; closing its older connection");
      out.supersede(q);
    }
    auto counts = this->complete_registration(s, r);
    auto bytes = std::as_bytes(std::span(*counts));
    out.send(p, {detail::reply_header(h, protocol::message::reply_ok), bytes, std::move(counts)});
  }

  template <reply_sink S>
  void after_push(peer_id p, const transport::frame_header& h, std::pair<update::push_outcome, std::uint64_t> done,
                  S& out) {
    auto [outcome, step] = done;
    auto type = outcome == update::push_outcome::applied       ? protocol::message::push_applied
                : outcome == update::push_outcome::accumulated ? protocol::message::push_accumulated
                                                               : protocol::message::push_dropped;
    this->reply(out, p, h, type, step);
    if (outcome == update::push_outcome::applied) retry_parked(out);
  }

  template <reply_sink S>
  void on_restore(peer_id p, peer_state& s, const transport::frame_header& h, S& out) {
    this->restore(s, h);
    this->reply(out, p, h, protocol::message::reply_ok);
    // Requests of workers registered before a restore that re-created the session read values
    // that are gone (none are parked after a restore onto a fresh ps task).
    std::erase_if(this->parked_, [&](const auto& r) {
      const auto& from = this->peers_.at(r.from);
      if (from.generation == this->session_.generation()) return false;
      const auto e = this->aborted(from);
      this->reply_error(out, r.from, r.request, e.code(), e.what());
      return true;
    });
    retry_parked(out);
  }

  // Answers a wait_ready, pull, sparse_pull or shutdown now if allowed, else parks it until a
  // push, a finish or its deadline.
  template <reply_sink S>
  void park_or_answer(peer_id p, protocol::message kind, const transport::frame_header& h,
                      std::vector<std::uint64_t> rows, S& out) {
    if (try_answer(p, kind, h, rows, out)) return;
    const auto& serving = this->opts_.serving;
    auto timeout = kind == protocol::message::wait_ready ? serving.ready_timeout : serving.step_timeout;
    if ((kind == protocol::message::pull || kind == protocol::message::compressed_pull ||
         kind == protocol::message::sparse_pull) &&
        stalled_by_refusals())
      throw error(errc::handshake_failed, cannot_complete(h));
    this->parked_.push_back({p, kind, h, update::clock_type::now() + timeout, std::move(rows)});
  }

  template <reply_sink S>
  bool connected(std::size_t replica, const S& out) const {
    return std::ranges::any_of(this->peers_, [&](const auto& peer) {
      return peer.second.registered && peer.second.replica == replica && out.is_open(peer.first);
    });
  }
  // Whether no sync step can complete: more replicas refused at authentication than backups.
  bool stalled_by_refusals() const {
    if constexpr (std::is_same_v<U, update::sync_average>)  // a refused replica is no member when elastic
      return !this->members_.elastic() &&
             this->absent_.stall_sync(this->opts_.rule.replicas_to_aggregate, this->replicas_);
    else return false;
  }
  std::string cannot_complete(const transport::frame_header& h) const {
    return this->absent_.cannot_complete(this->self_, h.step);
  }

  template <reply_sink S>
  bool try_answer(peer_id p, protocol::message kind, const transport::frame_header& h,
                  const std::vector<std::uint64_t>& rows, S& out) {
    if (kind == protocol::message::shutdown) {
      // Elastic: once no member is left unfinished (the slots never held, or departed, are not).
      if (this->members_.elastic() ? this->members_.members() > 0 : this->finished_.size() < this->replicas_)
        return false;
      shut_down(p, h, out);
      return true;
    }
    if (kind == protocol::message::wait_ready) {
      if (!this->ready() || !this->session_.is_open()) return false;  // answered in a session only
      this->reply(out, p, h, protocol::message::reply_ok, this->session_.stamp());
      return true;
    }
    auto reply = kind == protocol::message::sparse_pull ? this->try_pull_rows(this->peers_.at(p), h, rows)
                                                        : this->try_pull(this->peers_.at(p), h);
    if (!reply) return false;
    out.send(p, std::move(*reply));
    return true;
  }

  shard_type& pulled_shard(const transport::frame_header& h) {
    return detail::pulled_shard(this->shards_, base::key(h.variable, h.shard), h, this->self_);
  }

  // A pull's reply if the rule lets @p s read now.
  std::optional<outgoing_reply> try_pull(const peer_state& s, const transport::frame_header& h) {
    if (static_cast<protocol::message>(h.type) == protocol::message::compressed_pull)
      return this->pull_encodings_.reply(pulled_shard(h), this->layouts_, h, s.replica, this->opts_.pull_compression,
                                         this->self_);
    return detail::pull_reply(pulled_shard(h), s.replica, h.step,
                              detail::reply_header(h, protocol::message::pull_reply));
  }
  // A sparse_pull's reply (@p rows local to the shard) if the rule lets @p s read now.
  std::optional<outgoing_reply> try_pull_rows(const peer_state& s, const transport::frame_header& h,
                                              const std::vector<std::uint64_t>& rows) {
    const std::size_t dim = this->layouts_.at(base::key(h.variable, h.shard)).row_elements();
    return detail::rows_reply(pulled_shard(h), s.replica, h.step, rows, dim,
                              detail::reply_header(h, protocol::message::pull_reply));
  }

  template <reply_sink S>
  void shut_down(peer_id p, const transport::frame_header& h, S& out) {
    this->log(this->self_ + ": shutdown requested by " + this->peers_.at(p).identity);
    out.shut_down(p, {detail::reply_header(h, protocol::message::reply_ok), {}, nullptr});
  }
};

}  // namespace dsgd::server
