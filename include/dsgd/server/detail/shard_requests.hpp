// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The state of a shard_table and the work of each request on it, apart from where the replies
/// go: shards and layouts, registration and generations, pushes received per replica, dense
/// and sparse pushes and pulls, checkpoints. server::shard_table adds the dispatch, the parked
/// requests' retries and deadlines, and the reply sink.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/detail/absent_replicas.hpp>
#include <dsgd/server/detail/compressed_pull.hpp>
#include <dsgd/server/detail/compressed_push.hpp>
#include <dsgd/server/detail/membership.hpp>
#include <dsgd/server/detail/ps_session.hpp>
#include <dsgd/server/detail/shard_checkpoint.hpp>
#include <dsgd/server/detail/shard_replies.hpp>
#include <dsgd/server/detail/sparse_layout.hpp>
#include <dsgd/server/detail/table_peer.hpp>
#include <dsgd/server/ps_options.hpp>
#include <dsgd/update/concepts.hpp>

#include <cstring>
#include <filesystem>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dsgd::server {

namespace detail {

/// The state and the per-request work of server::shard_table.
template <UpdateRule U, class O, Device D>
class shard_requests {
 protected:
  using options = ps_options<U, O>;
  using shard_type = typename U::template shard<D, O>;

  using peer_state = table_peer;
  using parked_request = detail::parked_request;

  shard_requests(cluster::task_id self, std::size_t ps_tasks, std::size_t replicas, options opts, D device)
      : self_(self.to_string()),
        ps_index_(static_cast<std::size_t>(self.index)),
        ps_tasks_(ps_tasks),
        replicas_(replicas),
        absent_(replicas),
        members_(replicas, opts.serving.min_replicas, self_, opts.connection.log, opts.serving.on_membership),
        opts_(std::move(opts)),
        device_(std::move(device)) {}

  static std::uint64_t key(std::uint32_t v, std::uint32_t s) { return (std::uint64_t{v} << 32) | s; }
  void log(const std::string& s) const { opts_.connection.log(s); }
  // The step of a shard (the global step under sync), for the membership summaries.
  std::uint64_t global_step() const { return shards_.empty() ? 0 : shards_.begin()->second->step(); }
  // Ready once a registration said how many shards it holds (a placement may leave it none).
  bool ready() const { return placed_ && shards_.size() >= expected_shards_; }

  template <class S>
  void reply(S& out, peer_id p, const transport::frame_header& request, protocol::message type) {
    out.send(p, {reply_header(request, type), {}, nullptr});
  }
  template <class S>
  void reply(S& out, peer_id p, const transport::frame_header& request, protocol::message type, std::uint64_t step) {
    auto h = reply_header(request, type);
    h.step = step;
    out.send(p, {h, {}, nullptr});
  }
  template <class S>
  void reply_error(S& out, peer_id p, const transport::frame_header& request, error_code ec, const std::string& what) {
    auto body = std::make_shared<const std::string>(protocol::encode_control(protocol::error_reply{ec.value(), what}));
    auto h = reply_header(request, protocol::message::reply_error);
    h.flags = transport::frame_flags::control;
    auto bytes = std::as_bytes(std::span(body->data(), body->size()));
    out.send(p, {h, bytes, std::move(body)});
  }

  // --- where payloads go ------------------------------------------------------------------

  std::span<std::byte> dense_destination(peer_state& s, protocol::message kind, const transport::frame_header& h,
                                         error_code& ec) {
    const std::size_t floats = h.total_length / sizeof(float);
    bool fits = h.total_length % sizeof(float) == 0;
    if (fits && kind == protocol::message::push) {
      auto it = shards_.find(key(h.variable, h.shard));  // a push for a shard this ps does not hold
      fits = it != shards_.end() && it->second->size() == floats;
    } else if (fits) {
      // Only a shard of the registered placement, at its size: the only allocation a peer can
      // ask for is one the placement accounts for.
      auto it = layouts_.find(key(h.variable, h.shard));
      fits = it != layouts_.end() && it->second.rows * it->second.row_elements() == floats;
    }
    if (h.chunk_offset == 0 && fits) {
      s.incoming.resize(floats);
      s.streaming = false;
    }
    return fits ? chunk_of(std::as_writable_bytes(std::span(s.incoming)), h, ec) : fail(ec);
  }

  // Checks a sparse request from its first header and sizes its buffer, or marks it rejected
  // (its payload is then read into a scratch chunk, the error answered at its last chunk).
  std::span<std::byte> sparse_destination(peer_state& s, protocol::message kind, const transport::frame_header& h,
                                          error_code& ec) {
    const bool pull = kind == protocol::message::sparse_pull;
    if (h.chunk_offset == 0) {
      s.rejected.reset();
      try {
        const auto& l = sparse_shard(s, kind, h);
        auto n = sparse_request_keys(kind, l, h.total_length, opts_.serving.max_rows_per_request, self_);
        if (pull) {
          s.keys_in.resize(n);
        } else {
          s.sparse_keys = n;
          s.sparse_in.resize(h.total_length / sizeof(float));
        }
      } catch (const dsgd::error& e) {
        s.rejected.emplace(e.code(), e.what());
      }
    }
    if (s.rejected) {
      s.discard.resize(h.payload_length);
      return std::span(s.discard);
    }
    auto whole = pull ? std::as_writable_bytes(std::span(s.keys_in)) : std::as_writable_bytes(std::span(s.sparse_in));
    return chunk_of(whole, h, ec);
  }

  static std::span<std::byte> fail(error_code& ec) {
    ec = make_error_code(errc::bad_frame);
    return {};
  }
  // The part of @p whole the chunk @p h fills (transport::chunk_destination, without Asio).
  static std::span<std::byte> chunk_of(std::span<std::byte> whole, const transport::frame_header& h, error_code& ec) {
    if (h.total_length != whole.size() || h.payload_length > whole.size() ||
        h.chunk_offset > whole.size() - h.payload_length)
      return fail(ec);
    return whole.subspan(static_cast<std::size_t>(h.chunk_offset), static_cast<std::size_t>(h.payload_length));
  }

  // The shard layout a sparse request names (detail::sparse_request_shard).
  const protocol::shard_layout& sparse_shard(const peer_state& s, protocol::message kind,
                                             const transport::frame_header& h) const {
    const auto l = layouts_.find(key(h.variable, h.shard));
    const auto sh = shards_.find(key(h.variable, h.shard));
    return sparse_request_shard(kind, h, s.registered, l == layouts_.end() ? nullptr : &l->second,
                                sh == shards_.end() ? std::nullopt : std::optional(sh->second->size()), self_);
  }

  // --- requests -----------------------------------------------------------------------------

  protocol::register_request check_registration(const peer_state& s) {
    auto r = protocol::decode_control<protocol::register_request>(
        std::string_view(reinterpret_cast<const char*>(s.control.data()), s.control.size()), "register_worker");
    if (r.task != s.identity)
      throw error(errc::handshake_failed,
                  "register_worker claims " + r.task + " but the handshake proved " + s.identity);
    if (r.replica >= replicas_) throw error(errc::invalid_argument, members_.beyond_slots(r.task, r.replica));
    if (!placed_) {
      placed_ = true;
      placement_ = r.placement;
      fingerprint_ = r.fingerprint;
      expected_shards_ = r.shards;
      for (auto& l : r.layouts) layouts_[key(l.variable, l.shard)] = l;
      if (expected_shards_ == 0) log(self_ + " ready: 0 shards");
    } else if (r.fingerprint != fingerprint_ || r.placement != placement_) {
      throw error(errc::placement_mismatch, "placement of " + r.task + " differs from the one " + self_ +
                                                " holds (were variables created " +
                                                "in another order or with other shapes?)\n  " + self_ + ": " +
                                                placement_ + "\n  " + r.task + ": " + r.placement);
    }
    return r;
  }

  // Registers @p s as @p r; @returns per shard of r.layouts its replica's pushes received (u64 LE).
  std::shared_ptr<std::vector<std::uint64_t>> complete_registration(peer_state& s,
                                                                    const protocol::register_request& r) {
    s.replica = r.replica;
    s.registered = true;
    absent_.registered(r.replica);
    if constexpr (update::tracks_departures<shard_type>)
      for (auto& [k, shard] : shards_) shard->rejoin(r.replica);
    members_.joined(r.replica, r.task, global_step());
    s.chief = r.chief;
    if (r.chief) chief_seen_ = true;
    s.generation = session_.generation();
    auto counts = std::make_shared<std::vector<std::uint64_t>>();
    for (const auto& l : r.layouts) counts->push_back(to_le(pushes_received(key(l.variable, l.shard), r.replica)));
    return counts;
  }

  // Pushes of @p replica received for shard @p k (every outcome counts: the push was taken).
  std::uint64_t& pushes_received(std::uint64_t k, std::size_t replica) {
    auto& per_replica = received_[k];
    per_replica.resize(replicas_);
    return per_replica[replica];
  }

  void init(peer_state& s, const transport::frame_header& h) {
    auto k = key(h.variable, h.shard);
    if (shards_.contains(k)) return;
    auto shard = opts_.rule.template make_shard<D, O>(device_, s.incoming, opts_.optimizer, replicas_);
    members_.admit(*shard);
    if (h.step != 0) shard->assign(s.incoming, h.step);  // restored from a checkpoint at that step
    shards_.emplace(k, std::move(shard));
    if (shards_.size() == expected_shards_) log(self_ + " ready: " + std::to_string(shards_.size()) + " shards");
  }

  // A push's chunk other than its last: applied now, out of place, where the shard can
  // (streams_pushes), overlapping the rest of the push; published or applied whole at its last
  // chunk (push). Not for a worker on this host: through shared memory a chunk arrives in the
  // time of a copy, and applying in place once is cheaper than streaming out of place.
  void push_chunk(peer_state& s, const transport::frame_header& h) {
    if constexpr (update::streams_pushes<shard_type>) {
      if (h.chunk_offset == 0)
        s.streaming =
            opts_.serving.apply_in_chunks && s.registered && s.generation == session_.generation() && !s.shared_memory;
      if (!s.streaming) return;
      if (h.chunk_offset % sizeof(float) != 0 || h.payload_length % sizeof(float) != 0) {
        s.streaming = false;
        return;
      }
      auto it = shards_.find(key(h.variable, h.shard));
      s.streaming = it != shards_.end() && it->second->push_chunk(s.replica, h.chunk_offset / sizeof(float),
                                                                  h.payload_length / sizeof(float), s.incoming.data());
    }
  }

  // @returns what the push did and the shard's step after it.
  std::pair<update::push_outcome, std::uint64_t> push(peer_state& s, const transport::frame_header& h) {
    auto& shard = *shards_.at(key(h.variable, h.shard));
    const auto deadline = update::clock_type::now() + opts_.serving.step_timeout;
    update::push_outcome outcome;
    if constexpr (update::streams_pushes<shard_type>) {
      outcome = std::exchange(s.streaming, false) ? shard.push_streamed(s.replica, h.step, s.incoming.data(), deadline)
                                                  : shard.push(s.replica, h.step, s.incoming.data(), deadline);
    } else {
      outcome = shard.push(s.replica, h.step, s.incoming.data(), deadline);
    }
    ++pushes_received(key(h.variable, h.shard), s.replica);
    return {outcome, shard.step()};
  }

  void throw_if_rejected(peer_state& s) {
    if (!s.rejected) return;
    auto r = std::move(*s.rejected);
    s.rejected.reset();
    throw error(r.first, r.second);
  }

  // A sparse_pull's keys as rows of its shard. @throws dsgd::error naming a bad request or row
  std::vector<std::uint64_t> sparse_pull_rows(peer_state& s, const transport::frame_header& h) {
    throw_if_rejected(s);
    return local_rows(protocol::message::sparse_pull, sparse_shard(s, protocol::message::sparse_pull, h), s.keys_in,
                      self_);
  }

  std::pair<update::push_outcome, std::uint64_t> sparse_push(peer_state& s, const transport::frame_header& h) {
    throw_if_rejected(s);
    const auto& l = sparse_shard(s, protocol::message::sparse_push, h);
    const std::size_t n = s.sparse_keys;
    std::vector<std::uint64_t> keys(n);
    if (n) std::memcpy(keys.data(), s.sparse_in.data(), n * sizeof(std::uint64_t));
    auto rows = local_rows(protocol::message::sparse_push, l, keys, self_);
    const float* grads = s.sparse_in.data() + n * (sizeof(std::uint64_t) / sizeof(float));
    auto& shard = *shards_.at(key(h.variable, h.shard));
    auto outcome = shard.push_rows(s.replica, h.step, rows, l.row_elements(), grads,
                                   update::clock_type::now() + opts_.serving.step_timeout);
    ++pushes_received(key(h.variable, h.shard), s.replica);
    return {outcome, shard.step()};
  }

  // A compressed push's bytes, at most what the shard's agreed codec can send (else bad_frame).
  std::span<std::byte> compressed_destination(peer_state& s, const transport::frame_header& h, error_code& ec) {
    const auto k = key(h.variable, h.shard);
    auto l = layouts_.find(k);
    auto sh = shards_.find(k);
    if (l == layouts_.end() || sh == shards_.end()) return fail(ec);
    if (h.chunk_offset == 0 && !detail::size_compressed(s.compressed, opts_.compression.of(l->second.name),
                                                        sh->second->size(), h.total_length))
      return fail(ec);
    auto whole = std::as_writable_bytes(std::span(s.compressed))
                     .first(std::min<std::size_t>(s.compressed.size() * sizeof(std::uint32_t),
                                                  static_cast<std::size_t>(h.total_length)));
    return chunk_of(whole, h, ec);
  }

  std::pair<update::push_outcome, std::uint64_t> compressed_push(peer_state& s, const transport::frame_header& h) {
    const auto k = key(h.variable, h.shard);
    const auto& l = layouts_.at(k);
    auto& shard = *shards_.at(k);
    auto payload = std::as_bytes(std::span(s.compressed)).first(static_cast<std::size_t>(h.total_length));
    auto outcome = detail::push_compressed<D::is_host>(
        shard, opts_.compression.of(l.name), payload, s.incoming, s.replica, h.step,
        update::clock_type::now() + opts_.serving.step_timeout, detail::pushed_shard(l, self_));
    ++pushes_received(k, s.replica);
    return {outcome, shard.step()};
  }

  // --- checkpoints --------------------------------------------------------------------------

  // Writes this task's data file of checkpoint h.step: every shard's values, slots, counters
  // and pushes received per replica, read together (the counts are those the values hold).
  void save(const peer_state& s, const transport::frame_header& h) {
    auto dir = checkpoint_directory(s.control, "save");
    std::vector<std::pair<protocol::shard_layout, typename shard_type::saved_state>> held;
    std::vector<std::vector<std::uint64_t>> pushes;
    for (auto& [k, shard] : shards_) {
      held.emplace_back(layouts_.at(k), shard->save());
      pushes_received(k, 0);  // sized for every replica
      pushes.push_back(received_.at(k));
    }
    write_shard_checkpoint(dir, h.step, ps_index_, ps_tasks_, held, pushes);
  }

  // Overwrites (or creates) every shard this task holds from checkpoint h.step and closes the
  // session; over existing shards it starts a new generation, whose requests of workers
  // registered before it are aborted, while @p s, which asked for it, belongs to the new one.
  void restore(peer_state& s, const transport::frame_header& h) {
    auto dir = checkpoint_directory(s.control, "restore");
    checkpoint::checkpoint_reader reader(dir, h.step);  // verifies every file and checksum
    typename O::template state<D> probe(device_, 0);
    auto [states, pushes, missing] = read_shards<typename shard_type::saved_state>(reader, layouts_, probe, replicas_);
    if (!missing.empty())
      log(self_ + ": checkpoint " + std::to_string(h.step) + " is of format version " +
          std::to_string(reader.format_version()) + " and holds no " + missing + ": they start afresh");
    // Over existing shards a restore re-creates the session; a fresh ps task has no readers yet.
    const bool recreated = !shards_.empty();
    for (auto& [k, state] : states) {
      auto it = shards_.find(k);
      if (it == shards_.end()) {
        it = shards_.emplace(k, opts_.rule.template make_shard<D, O>(device_, state.values, opts_.optimizer, replicas_))
                 .first;
        members_.admit(*it->second);
      }
      it->second->restore(state);
    }
    received_ = std::move(pushes);
    log(self_ + " restored checkpoint " + std::to_string(h.step) + " from " + dir.string() + " (" +
        std::to_string(states.size()) + " shards)" + (recreated ? "; workers register again" : "") +
        (reader.format_version() < 3 ? "; it holds no push counts (format version < 3): they start at 0" : ""));
    session_.restored(h.step, recreated);  // closed until the chief opens the next
    s.generation = session_.generation();
  }

  dsgd::error aborted(const peer_state& s) const { return session_.aborted(self_, s.identity); }

  std::string unfinished() const {
    std::string out;
    for (std::size_t r = 0; r < replicas_; ++r)
      if (!finished_.contains(r)) out += (out.empty() ? "replica " : ", replica ") + std::to_string(r);
    return out;
  }

  std::string why_waiting(const parked_request& r) const {
    if (r.kind == protocol::message::wait_ready && ready()) return session_.not_opened(self_);
    if (r.kind == protocol::message::wait_ready)
      return self_ + ": variables not initialised before the deadline (" + std::to_string(shards_.size()) + " of " +
             (placed_ ? std::to_string(expected_shards_) : std::string("?")) +
             " shards created; is the chief running?)";
    auto it = shards_.find(key(r.request.variable, r.request.shard));
    return self_ + ": " +
           (it == shards_.end() ? std::string("no such shard")
                                : it->second->wait_reason(peers_.at(r.from).replica, r.request.step)) +
           absent_.describe();
  }

  std::string self_;  // "ps:0"
  std::size_t ps_index_;
  std::size_t ps_tasks_;
  std::size_t replicas_;
  absent_replicas absent_;  // why replicas that are not there are not
  membership members_;      // an elastic job's members (serving_options::min_replicas)
  options opts_;
  D device_;
  std::map<peer_id, peer_state> peers_;
  std::list<parked_request> parked_;
  std::map<std::uint64_t, std::unique_ptr<shard_type>> shards_;
  std::map<std::uint64_t, protocol::shard_layout> layouts_;
  std::map<std::uint64_t, std::vector<std::uint64_t>> received_;  // shard -> pushes per replica
  pull_encodings pull_encodings_;                                 // compressed pulls' replies, encoded once per version
  std::set<std::size_t> finished_;
  std::string placement_;
  std::uint64_t fingerprint_ = 0;
  std::size_t expected_shards_ = 0;
  bool placed_ = false;      // a registration has set placement_, fingerprint_ and expected_shards_
  ps_session session_;       // generation, last restore, the chief's open session
  bool chief_seen_ = false;  // a chief has registered
};

}  // namespace detail
}  // namespace dsgd::server
