// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// server::detail::peer_registry: who a ps task is talking to. Its connections (table_peer),
/// the replica each registered as, the replicas that finished or are absent (refused at
/// authentication, departed), an elastic job's members, the chief, and the session (generation,
/// last restore, the stamp the chief opened).
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/detail/absent_replicas.hpp>
#include <dsgd/server/detail/membership.hpp>
#include <dsgd/server/detail/ps_session.hpp>
#include <dsgd/server/detail/table_peer.hpp>
#include <dsgd/server/ps_options.hpp>
#include <dsgd/server/reply_sink.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsgd::server::detail {

/// The peers of ps task @p self and what it knows of the @p replicas training replicas.
class peer_registry {
 public:
  /// Peers of ps task @p self serving @p replicas replicas, an elastic job's membership as
  /// @p serving says, logging through @p log.
  peer_registry(std::string self, std::size_t replicas, const serving_options& serving,
                const std::function<void(std::string_view)>& log)
      : self_(std::move(self)),
        replicas_(replicas),
        absent_(replicas),
        members_(replicas, serving.min_replicas, self_, log, serving.on_membership) {}

  // --- connections ------------------------------------------------------------------------

  /// A new connection @p p of @p identity ("worker:1"); @p shared_memory: its payloads come
  /// through a shared-memory ring.
  void connect(peer_id p, std::string identity, bool shared_memory) {
    auto& s = peers_[p];
    s.identity = std::move(identity);
    s.shared_memory = shared_memory;
  }
  /// @returns the peer @p p, or nullptr when it is not connected.
  table_peer* find(peer_id p) {
    auto it = peers_.find(p);
    return it == peers_.end() ? nullptr : &it->second;
  }
  const table_peer* find(peer_id p) const {
    auto it = peers_.find(p);
    return it == peers_.end() ? nullptr : &it->second;
  }
  /// @returns the connected peer @p p.
  const table_peer& at(peer_id p) const { return peers_.at(p); }
  /// Takes peer @p p out (empty when it is not connected): its buffers live as long as the
  /// node the caller keeps.
  auto take(peer_id p) {
    auto it = peers_.find(p);
    return it == peers_.end() ? decltype(peers_.extract(it)){} : peers_.extract(it);
  }
  /// @returns whether replica @p replica is registered on a connection @p is_open(peer) calls
  /// open.
  template <class IsOpen>
  bool connected(std::size_t replica, IsOpen is_open) const {
    return std::ranges::any_of(peers_, [&](const auto& peer) {
      return peer.second.registered && peer.second.replica == replica && is_open(peer.first);
    });
  }
  /// @returns true while a registered chief is connected.
  bool chief_connected() const {
    return std::ranges::any_of(peers_, [](const auto& peer) { return peer.second.chief; });
  }
  /// @returns true once a chief has registered.
  bool chief_registered() const noexcept { return chief_seen_; }

  // --- registration -----------------------------------------------------------------------

  /// Checks that the registration @p r of peer @p s claims what its handshake proved and a
  /// replica the job has. @throws dsgd::error naming what is wrong
  void check(const table_peer& s, const protocol::register_request& r) const {
    if (r.task != s.identity)
      throw error(errc::handshake_failed,
                  "register_worker claims " + r.task + " but the handshake proved " + s.identity);
    if (r.replica >= replicas_) throw error(errc::invalid_argument, members_.beyond_slots(r.task, r.replica));
  }
  /// @returns the other connections (than @p p) replica @p replica registered on.
  std::vector<peer_id> older_connections(peer_id p, std::size_t replica) const {
    std::vector<peer_id> out;
    for (const auto& [q, other] : peers_)
      if (q != p && other.registered && other.replica == replica) out.push_back(q);
    return out;
  }
  /// Registers @p s as @p r at global step @p step, in the current session's generation.
  void registered(table_peer& s, const protocol::register_request& r, std::uint64_t step) {
    s.replica = r.replica;
    s.registered = true;
    s.chief = r.chief;
    s.generation = session_.generation();
    absent_.registered(r.replica);
    members_.joined(r.replica, r.task, step);
    if (r.chief) chief_seen_ = true;
  }

  // --- replicas that finished, departed or were refused -----------------------------------

  /// Replica @p s finished its data at global step @p step.
  void finished(const table_peer& s, std::uint64_t step) {
    finished_.insert(s.replica);
    members_.finished(s.replica, s.identity, step);
  }
  /// @returns whether replica @p replica finished.
  bool finished(std::size_t replica) const { return finished_.contains(replica); }
  /// @returns whether every replica finished (elastic: no member is left unfinished).
  bool all_finished() const { return members_.elastic() ? members_.members() == 0 : finished_.size() >= replicas_; }
  /// @returns "replica 0, replica 2": the replicas that have not finished.
  std::string unfinished() const {
    std::string out;
    for (std::size_t r = 0; r < replicas_; ++r)
      if (!finished_.contains(r)) out += (out.empty() ? "replica " : ", replica ") + std::to_string(r);
    return out;
  }
  /// The registered peer @p gone left at global step @p step without finishing.
  void departed(const table_peer& gone, std::uint64_t step) {
    absent_.departed(gone.replica, gone.identity);
    members_.left(gone.replica, gone.identity, "connection lost", step);
  }
  /// @returns whether refusing replica @p replica is news worth a log line.
  bool refused(std::size_t replica, std::string task, std::string why) {
    return replica < replicas_ && !finished_.contains(replica) &&
           absent_.refused(replica, std::move(task), std::move(why));
  }
  /// What the ps knows of the absent replicas.
  const absent_replicas& absent() const noexcept { return absent_; }
  /// An elastic job's members.
  const membership& members() const noexcept { return members_; }
  /// @returns how many replicas the job has.
  std::size_t replicas() const noexcept { return replicas_; }

  // --- the session ------------------------------------------------------------------------

  /// The session: generation, last restore, the chief's stamp.
  ps_session& session() noexcept { return session_; }
  const ps_session& session() const noexcept { return session_; }
  /// @returns whether @p s registered in the current generation.
  bool current(const table_peer& s) const noexcept { return s.generation == session_.generation(); }
  /// @returns the error for a request of @p s, registered before the last restore.
  dsgd::error aborted(const table_peer& s) const { return session_.aborted(self_, s.identity); }

 private:
  std::string self_;  // "ps:0"
  std::size_t replicas_;
  std::map<peer_id, table_peer> peers_;
  std::set<std::size_t> finished_;
  absent_replicas absent_;   // why replicas that are not there are not
  membership members_;       // an elastic job's members (serving_options::min_replicas)
  ps_session session_;       // generation, last restore, the chief's open session
  bool chief_seen_ = false;  // a chief has registered
};

}  // namespace dsgd::server::detail
