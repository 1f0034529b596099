// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// checkpoint::incremental_schedule: the chief's plan of full and incremental checkpoints of a
/// job with embedding tables (a delta every N seconds, a full one every K deltas), and
/// checkpoint_if_due(), which writes and commits what is due through a ps client.
///
/// @code
///   dsgd::checkpoint::saver saver{dir, /*keep=*/3};
///   dsgd::checkpoint::incremental_schedule schedule{{.delta_interval = 30s, .deltas_per_full = 20}};
///   for (std::uint64_t step = first; training; ++step) {
///     train_one_step();
///     dsgd::checkpoint::checkpoint_if_due(schedule, client, saver, plan, step);  // the chief
///   }
/// @endcode
///
/// An incremental checkpoint holds each ps task's data file (the dense variables, which are
/// small next to the tables, in full) and, of the tables, only the rows changed since the
/// previous checkpoint and the keys removed since; saver::commit() names what its tables are a
/// delta of, and a restore reads the chain from the full base (docs/checkpoints.md).
#pragma once

#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/error.hpp>
#include <dsgd/placement/plan.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>

namespace dsgd::checkpoint {

/// When the chief writes a full checkpoint and when a delta (an incremental one): a full one
/// first, then a delta of the last committed checkpoint every `delta_interval`, and a full one
/// again once `deltas_per_full` deltas follow the last full one (a restore reads at most that
/// many deltas), after a failure, or never with deltas_per_full 0 (every checkpoint full).
class incremental_schedule {
 public:
  using clock = std::chrono::steady_clock;

  struct options {
    clock::duration delta_interval = std::chrono::seconds(60);  ///< between two checkpoints (> 0)
    std::size_t deltas_per_full = 10;                           ///< 0: every checkpoint is full
  };

  enum class kind { none, full, delta };
  /// What is due: nothing, a full checkpoint, or a delta of checkpoint `tables_delta_of`.
  struct decision {
    kind what = kind::none;
    std::uint64_t tables_delta_of = 0;
  };

  /// @throws dsgd::error (errc::invalid_argument) for a delta_interval that is not positive
  incremental_schedule() : incremental_schedule(options{}) {}
  explicit incremental_schedule(options o) : options_(o) {
    if (options_.delta_interval <= clock::duration::zero())
      throw error(errc::invalid_argument, "checkpoint::incremental_schedule: delta_interval must be positive");
  }

  /// @returns what to write at @p step at time @p now: nothing while less than delta_interval
  /// passed since the last commit (or @p step is not after it); else a full checkpoint when
  /// none was committed or restored yet, after failed(), or when deltas_per_full deltas follow
  /// the last full one; else a delta of the last committed checkpoint.
  decision due(std::uint64_t step, clock::time_point now) const {
    if (last_ && (step <= last_->step || now - last_->at < options_.delta_interval)) return {};
    if (!last_ || full_next_ || options_.deltas_per_full == 0 || deltas_ >= options_.deltas_per_full)
      return {kind::full, 0};
    return {kind::delta, last_->step};
  }

  /// Checkpoint @p step of kind @p what was committed at @p now.
  void committed(std::uint64_t step, kind what, clock::time_point now) {
    last_ = {step, now};
    deltas_ = what == kind::delta ? deltas_ + 1 : 0;
    full_next_ = false;
  }
  /// The cluster restored checkpoint @p step at @p now (its ps tasks can build deltas on it); a
  /// restore of an incremental checkpoint keeps the count of deltas since the full base at
  /// @p deltas_since_full.
  void restored(std::uint64_t step, clock::time_point now, std::size_t deltas_since_full = 0) {
    last_ = {step, now};
    deltas_ = deltas_since_full;
    full_next_ = false;
  }
  /// A save or commit failed: the next checkpoint is a full one.
  void failed() noexcept { full_next_ = true; }

  /// @returns the last committed or restored checkpoint, if any.
  std::optional<std::uint64_t> last() const noexcept {
    return last_ ? std::optional<std::uint64_t>(last_->step) : std::nullopt;
  }
  /// @returns the deltas committed since the last full checkpoint.
  std::size_t deltas_since_full() const noexcept { return deltas_; }

 private:
  struct point {
    std::uint64_t step;
    clock::time_point at;
  };
  options options_;
  std::optional<point> last_;
  std::size_t deltas_ = 0;
  bool full_next_ = false;
};

/// The chief: writes what @p schedule says is due at @p step (nothing, a full checkpoint with
/// @p client's save(), or a delta with save_incremental()), commits it with @p saver and
/// @p plan, and tells the schedule. A failure is marked (the next is full) and rethrown.
/// @tparam Client a client::basic_ps_client (its save and save_incremental)
/// @returns what it wrote
template <class Client>
incremental_schedule::decision checkpoint_if_due(
    incremental_schedule& schedule, Client& client, const saver& saver, const placement::plan& plan, std::uint64_t step,
    incremental_schedule::clock::time_point now = incremental_schedule::clock::now()) {
  const auto d = schedule.due(step, now);
  if (d.what == incremental_schedule::kind::none) return d;
  try {
    const auto dir = std::filesystem::absolute(saver.directory());  // as every ps task reaches it
    if (d.what == incremental_schedule::kind::full) client.save(dir, step);
    else client.save_incremental(dir, step, d.tables_delta_of);
    saver.commit(step, plan);
  } catch (...) {
    schedule.failed();
    throw;
  }
  schedule.committed(step, d.what, now);
  return d;
}

}  // namespace dsgd::checkpoint
