// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// update::bounded_staleness: stale synchronous parallel (SSP) SGD, its bound S a run-time value.
#pragma once

#include <dsgd/update/detail/arrival_shard.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace dsgd::update {

/// Stale synchronous parallel: gradients are applied on arrival, as in async, but a worker at
/// clock c (it has pushed c gradients) may pull only while the slowest unfinished worker is at
/// clock c - S or later. S = 0 is lockstep without averaging; S -> infinity is async.
/// Past the deadline a waiting pull throws errc::timed_out naming the slowest workers.
/// The bound counts only members: a worker that departed (its ps connection lost, or a slot
/// of an elastic job nobody holds) holds nobody back; one that joins or rejoins enters at the
/// slowest member's clock if it is behind it (update::tracks_departures).
///
/// The rule is a compile-time choice, its bound a number chosen at run time
/// (`bounded_staleness{.staleness = 3}`, `dsgd-train --rule ssp --staleness 3`); every task of
/// a job must hold the same S: a worker's registration carries describe(), and a ps holding
/// another S refuses it, naming both.
struct bounded_staleness {
  std::size_t staleness = 2;  ///< S: how many clocks a worker may run ahead of the slowest member

  /// Each push is applied on its own (update::applies_each_push_v).
  static constexpr bool applies_each_push = true;

  /// A worker pulls at its own clock: the number of gradients it has pushed.
  static constexpr std::uint64_t next_pull(std::uint64_t, std::uint64_t pushes) noexcept { return pushes; }

  /// @returns "bounded_staleness(2)": what a worker's registration carries and a ps compares.
  std::string describe() const { return "bounded_staleness(" + std::to_string(staleness) + ")"; }

  /// One variable shard under SSP (see UpdateRule): pushes apply at once, as under async
  /// (detail::arrival_shard), and advance the pushing worker's clock; a pull waits for the
  /// slowest unfinished worker.
  template <Device D, class O>
  class shard : public detail::arrival_shard<shard<D, O>, D, O> {
    friend detail::shard_storage<shard, D, O>;
    friend detail::arrival_shard<shard, D, O>;

   public:
    /// The rule's name, in messages.
    static constexpr const char* name = "bounded_staleness";

    /// A shard for @p workers workers, each of which may run @p staleness clocks ahead of the
    /// slowest member.
    shard(D device, std::span<const float> initial, O optimizer, std::size_t workers, std::size_t staleness = 2)
        : detail::arrival_shard<shard, D, O>(std::move(device), initial, std::move(optimizer), workers),
          staleness_(staleness),
          clocks_(workers, 0) {}

    /// @returns the clock of @p worker.
    std::uint64_t clock_of(std::size_t worker) const {
      std::lock_guard lock(this->mutex_);
      return clocks_.at(worker);
    }

    /// @p worker is no member now (gone, or a slot not held): the bound no longer waits for it.
    void depart(std::size_t worker) {
      std::lock_guard lock(this->mutex_);
      this->check_worker(worker, name, "::depart");
      absent_[worker] = true;
      this->cv_.notify_all();
    }
    /// @p worker is a member (it registered): from the slowest member's clock if it is behind,
    /// so that a joiner does not hold the others back while it catches up.
    void rejoin(std::size_t worker) {
      std::lock_guard lock(this->mutex_);
      this->check_worker(worker, name, "::rejoin");
      if (!absent_[worker]) return;
      if (const auto m = slowest(); m != std::numeric_limits<std::uint64_t>::max())
        clocks_[worker] = std::max(clocks_[worker], m);
      absent_[worker] = false;
      this->cv_.notify_all();
    }

   private:
    // Caller holds the lock: one more gradient of @p worker applied.
    void on_arrival_locked(std::size_t worker) {
      ++clocks_[worker];
      this->cv_.notify_all();
    }
    // Caller holds the lock: after a restore every worker counts its clock from 0 again.
    void reset_locked() { std::fill(clocks_.begin(), clocks_.end(), std::uint64_t{0}); }

    // For SSP the step a worker pulls at is its own clock (the gradients it has pushed).
    bool ready_locked(std::size_t, std::uint64_t clock) const {
      return clock <= staleness_ || slowest() >= clock - staleness_;
    }
    std::string reason_locked(std::size_t worker, std::uint64_t clock) const {
      return "bounded_staleness(" + std::to_string(staleness_) + "): worker " + std::to_string(worker) + " at clock " +
             std::to_string(clock) + " waited past its deadline for " + laggards(clock);
    }
    std::uint64_t slowest() const {
      std::uint64_t m = std::numeric_limits<std::uint64_t>::max();
      for (std::size_t w = 0; w < clocks_.size(); ++w)
        if (!this->finished_[w] && !absent_[w]) m = std::min(m, clocks_[w]);
      return m;
    }
    std::string laggards(std::uint64_t clock) const {
      std::string out;
      for (std::size_t w = 0; w < clocks_.size(); ++w)
        if (!this->finished_[w] && !absent_[w] && clocks_[w] + staleness_ < clock)
          out += (out.empty() ? "" : ", ") + ("worker:" + std::to_string(w)) + " (clock " + std::to_string(clocks_[w]) +
                 ")";
      return out;
    }
    std::size_t staleness_;
    std::vector<std::uint64_t> clocks_;
    std::vector<bool> absent_ = std::vector<bool>(clocks_.size(), false);  // departed, or a slot not held
  };

  /// @returns a new shard of this rule holding @p initial, for @p workers workers.
  template <Device D, class O>
  std::unique_ptr<shard<D, O>> make_shard(D device, std::span<const float> initial, O optimizer,
                                          std::size_t workers) const {
    return std::make_unique<shard<D, O>>(std::move(device), initial, std::move(optimizer), workers, staleness);
  }
};

}  // namespace dsgd::update
