// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Who the members of an elastic job are on one ps task (serving_options::min_replicas > 0):
/// the cluster spec's replicas are slots, a slot is a member from its registration until its
/// connection is lost (it left) or it finished; the ps logs each change with the count. The
/// rule of a step over members is the shard's (update::sync_average::shard::elastic,
/// bounded_staleness's depart and rejoin); this file keeps the set and tells the shards.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/update/concepts.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::server::detail {

/// A shard that can make its membership elastic (update::sync_average's shard).
template <class S>
concept elastic_shard = requires(S& s) {
  s.elastic(std::size_t{1});
};

/// The members of a job's replicas, per slot; inert unless elastic (but for left()'s log line).
class membership {
 public:
  /// @p slots replicas (the cluster spec's chief and workers, MAX), of which at least
  /// @p min_replicas must be members for a sync step to close (0: not elastic); @p self names
  /// the ps task in the log lines, written through @p log; after each change @p changed (if
  /// set) gets the members and the global step the change was made at. Both are held by value
  /// (no pointer to the owner, which may move).
  /// @throws dsgd::error(errc::invalid_argument) for a minimum above the slots
  membership(std::size_t slots, std::size_t min_replicas, std::string self, std::function<void(std::string_view)> log,
             std::function<void(std::size_t, std::uint64_t)> changed = {})
      : state_(slots, slot::absent),
        min_(min_replicas),
        self_(std::move(self)),
        log_(std::move(log)),
        changed_(std::move(changed)) {
    if (min_ > slots)
      throw error(errc::invalid_argument, "serving_options.min_replicas: " + std::to_string(min_) +
                                              " is more than the " + std::to_string(slots) +
                                              " worker slots of the cluster spec (the job's worker range MAX)");
  }

  /// @returns whether the job is elastic.
  bool elastic() const noexcept { return min_ > 0; }
  /// @returns the least members a sync step needs (0: not elastic).
  std::size_t minimum() const noexcept { return min_; }
  /// @returns how many slots (MAX).
  std::size_t slots() const noexcept { return state_.size(); }
  /// @returns whether slot @p r is a member now (registered, connected, not finished).
  bool member(std::size_t r) const { return r < state_.size() && state_[r] == slot::member; }
  /// @returns how many members there are now.
  std::size_t members() const {
    std::size_t n = 0;
    for (auto s : state_) n += s == slot::member;
    return n;
  }

  /// Slot @p r (task @p task) registered at global step @p step: "ps:0: worker:3 joined; 3
  /// workers".
  void joined(std::size_t r, const std::string& task, std::uint64_t step) {
    if (!elastic() || r >= state_.size() || state_[r] == slot::member) return;
    state_[r] = slot::member;
    say(task + " joined", step);
  }
  /// Slot @p r (task @p task) is gone (@p why: "connection lost"): "worker:1 left (connection
  /// lost); 2 workers". A fixed set of workers waits for it (a restarting launcher brings it
  /// back), and the line says so: "ps:0: worker:1 (replica 1) departed at step 40: ...".
  void left(std::size_t r, const std::string& task, const std::string& why, std::uint64_t step) {
    if (!elastic()) {
      if (log_)
        log_(self_ + ": " + task + " (replica " + std::to_string(r) + ") departed at step " + std::to_string(step) +
             ": its connection closed before it finished (" + why +
             "); steps that need it wait for it to register again, until their deadline");
      return;
    }
    if (!member(r)) return;
    state_[r] = slot::absent;
    say(task + " left (" + why + ")", step);
  }
  /// Slot @p r finished its data: no member now, and nothing waits for it.
  void finished(std::size_t r, const std::string& task, std::uint64_t step) {
    if (!elastic() || !member(r)) return;
    state_[r] = slot::finished;
    say(task + " finished", step);
  }

  /// Makes a new @p shard's membership this one (the shard tracks departures): elastic, and
  /// every slot that is not a member now departed.
  template <class Shard>
  void admit(Shard& shard) const {
    if (!elastic()) return;
    if constexpr (elastic_shard<Shard>) shard.elastic(min_);
    if constexpr (update::tracks_departures<Shard>) {
      for (std::size_t r = 0; r < state_.size(); ++r) {
        if (member(r)) shard.rejoin(r);
        else shard.depart(r);
      }
    }
  }

  /// @returns "worker:5 claims replica 5, but the job has 3 worker slots (...)" for a
  /// registration beyond the slots.
  std::string beyond_slots(const std::string& task, std::size_t r) const {
    return task + " claims replica " + std::to_string(r) + " of " + std::to_string(state_.size()) +
           (elastic() ? ": the job's worker range allows at most " + std::to_string(state_.size()) +
                            " replicas (its MAX, the worker slots of the cluster spec); a joiner beyond MAX is refused"
                      : std::string());
  }

 private:
  enum class slot { absent, member, finished };
  void say(const std::string& what, std::uint64_t step) const {
    const auto n = members();
    log_(self_ + ": " + what + "; " + std::to_string(n) + (n == 1 ? " worker" : " workers") + " (at least " +
         std::to_string(min_) + ", at most " + std::to_string(state_.size()) + ")");
    if (changed_) changed_(n, step);
  }

  std::vector<slot> state_;
  std::size_t min_;
  std::string self_;
  std::function<void(std::string_view)> log_;
  std::function<void(std::size_t, std::uint64_t)> changed_;
};

}  // namespace dsgd::server::detail
