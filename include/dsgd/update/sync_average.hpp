// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// update::sync_average: synchronous SGD with SyncReplicasOptimizer semantics.
#pragma once

#include <dsgd/update/chunked_apply.hpp>
#include <dsgd/update/detail/rows.hpp>
#include <dsgd/update/detail/shard_storage.hpp>

#include <thrust/fill.h>
#include <thrust/functional.h>
#include <thrust/memory.h>
#include <thrust/transform.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dsgd::update {

/// Synchronous data-parallel SGD: per step, the mean of the first `replicas_to_aggregate`
/// fresh gradients is applied once and the global step advances.
///
/// - A gradient is tagged with the step it was computed at; one older than the shard's step is
///   dropped and counted (a backup worker that came late), as is a second push by the same
///   worker in one step.
/// - With `total_num_replicas > replicas_to_aggregate` the slowest workers are backups: their
///   gradients arrive after the step was applied and are dropped.
/// - `pull(worker, s, ...)` waits until the step is at least s; past the deadline it throws
///   errc::timed_out naming the workers that have not pushed for the current step.
/// - A finished worker (uneven data) no longer counts: the step completes with the rest.
/// - Elastic membership (shard::elastic, docs/reliability.md "Elastic workers"): the workers
///   are slots; a step closes once every member present has pushed for it, with at least
///   `min_members` members (finished ones included) present.
///
/// Update, for gradients g_1..g_R of step t:  w_{t+1} = opt(w_t, (1/R) sum_i g_i).
struct sync_average {
  std::size_t replicas_to_aggregate = 0;  ///< R; 0 means "all workers"

  /// The step a worker asks for after pushing a gradient computed at @p pushed_at: the next one.
  static constexpr std::uint64_t next_pull(std::uint64_t pushed_at, std::uint64_t /*pushes*/) noexcept {
    return pushed_at + 1;
  }

  /// One variable shard under sync_average (see UpdateRule): pushes of a step add up, and the
  /// mean is applied once the step has its replicas.
  template <Device D, class O>
  class shard : public detail::shard_storage<shard<D, O>, D, O> {
    using base = detail::shard_storage<shard<D, O>, D, O>;
    friend base;

   public:
    shard(D device, std::span<const float> initial, O optimizer, std::size_t workers,
          std::size_t replicas_to_aggregate = 0)
        : base(device, initial, std::move(optimizer), workers),
          accumulator_(initial.size(), 0.f),
          pushed_(workers, false),
          replicas_(replicas_to_aggregate == 0 ? workers : replicas_to_aggregate) {
      if (replicas_ > workers)
        throw error(errc::invalid_argument, "sync_average: replicas_to_aggregate (" + std::to_string(replicas_) +
                                                ") exceeds the number of workers (" + std::to_string(workers) + ")");
    }

    push_outcome push(std::size_t worker, std::uint64_t step, const float* grad) {
      std::lock_guard lock(this->mutex_);
      if (!admit(worker, step, "sync_average::push")) return push_outcome::dropped;
      float* acc = thrust::raw_pointer_cast(accumulator_.data());
      thrust::transform(this->device_.policy(), acc, acc + accumulator_.size(), grad, acc, thrust::plus<float>());
      dense_in_step_ = true;
      pushed_[worker] = true;
      ++count_;
      return maybe_apply() ? push_outcome::applied : push_outcome::accumulated;
    }

    /// push() of a gradient that @p add (callable as `add(float* acc)`) adds into the step's
    /// accumulator itself, once the push is admitted: a compressed push decodes straight into
    /// it (update::accumulates_decoded). @p add must not throw.
    template <class F>
    push_outcome push_decoded(std::size_t worker, std::uint64_t step, F&& add) {
      std::lock_guard lock(this->mutex_);
      if (!admit(worker, step, "sync_average::push")) return push_outcome::dropped;
      add(thrust::raw_pointer_cast(accumulator_.data()));
      dense_in_step_ = true;
      pushed_[worker] = true;
      ++count_;
      return maybe_apply() ? push_outcome::applied : push_outcome::accumulated;
    }

    /// A sparse push: rows @p rows (local to the shard, @p dim floats wide; host memory, as is
    /// @p grads, rows.size() x dim) are added into the step's accumulator, duplicates adding
    /// up, and the push counts as @p worker's gradient for @p step like push(): the mean is over
    /// every replica's push, dense or sparse.
    ///
    /// A step whose pushes were all sparse is applied to the rows they touched only, when the
    /// optimizer has a sparse apply (update::sparse_apply: sgd, momentum): its cost is the rows
    /// touched, not the shard, and the rows no push named keep their values and slots, as
    /// TensorFlow's sparse apply of IndexedSlices leaves them (momentum does not move them, weight
    /// decay does not shrink them); that is also what async and bounded_staleness do with a
    /// sparse push. A step with a dense push among its pushes, or an optimizer without a sparse
    /// apply, applies the mean densely once.
    /// @throws dsgd::error for a row past the shard or a push from the future
    push_outcome push_rows(std::size_t worker, std::uint64_t step, std::span<const std::uint64_t> rows, std::size_t dim,
                           const float* grads) {
      this->check_rows(rows, dim, "sync_average::push_rows");
      auto c = detail::coalesce_rows<D>(rows, dim, grads);
      std::lock_guard lock(this->mutex_);
      if (!admit(worker, step, "sync_average::push_rows")) return push_outcome::dropped;
      detail::scatter_add_rows(this->device_, thrust::raw_pointer_cast(accumulator_.data()), c, dim);
      touched_.insert(touched_.end(), rows.begin(), rows.end());
      touched_dim_ = touched_dim_ == 0 || touched_dim_ == dim ? dim : mixed_dims;
      pushed_[worker] = true;
      ++count_;
      return maybe_apply() ? push_outcome::applied : push_outcome::accumulated;
    }

    void finish(std::size_t worker) { mark_and_settle(worker, "sync_average::finish", this->finished_); }

    /// Makes the shard's membership elastic (before its first push): every worker is a slot,
    /// absent until rejoin() (a registration) and again after depart(). A step then closes once
    /// every present member has pushed for it (with replicas_to_aggregate R, once min(R,
    /// present) have), and only while at least @p min_members members are there (a finished
    /// one counts, a departed one does not): below that it waits, and its deadline's message
    /// says how many are there. A departed member's complete push of the open step still
    /// counts; a push that never fully arrived was never added.
    /// @throws dsgd::error for @p min_members of 0 or above the workers
    void elastic(std::size_t min_members) {
      std::lock_guard lock(this->mutex_);
      if (min_members == 0 || min_members > this->workers_)
        throw error(errc::invalid_argument, "sync_average::elastic: min_members " + std::to_string(min_members) +
                                                " must be from 1 to the " + std::to_string(this->workers_) +
                                                " worker slots");
      min_members_ = min_members;
      std::fill(departed_.begin(), departed_.end(), true);
    }

    /// @p worker is gone without finishing (its ps connection was lost); rejoin() when it
    /// registers again. With backups, up to `workers - replicas_to_aggregate` such workers are
    /// the backups: a step then needs gradients only from the live unfinished workers, so a
    /// dead worker no longer stalls the steps once another has finished its data. Beyond
    /// that, or without backups, nothing changes: the step waits, and its deadline names them.
    void depart(std::size_t worker) { mark_and_settle(worker, "sync_average::depart", departed_); }

    /// @p worker is back (it registered again): it counts as live.
    void rejoin(std::size_t worker) {
      std::lock_guard lock(this->mutex_);
      this->check_worker(worker, "sync_average::rejoin");
      departed_[worker] = false;
    }

   private:
    // finish() and depart(): once @p worker no longer holds the step back, it may be complete.
    void mark_and_settle(std::size_t worker, const char* who, std::vector<bool>& flags) {
      std::lock_guard lock(this->mutex_);
      this->check_worker(worker, who);
      flags[worker] = true;
      maybe_apply();
      this->cv_.notify_all();
    }

    // Caller holds the lock. false (and counted as dropped) for a stale or second push.
    bool admit(std::size_t worker, std::uint64_t step, const char* what) {
      this->check_worker(worker, what);
      if (step > this->step_)
        throw error(errc::invalid_argument, std::string(what) + ": worker " + std::to_string(worker) +
                                                " pushed for step " + std::to_string(step) +
                                                " but the shard is at step " + std::to_string(this->step_));
      if (step < this->step_ || pushed_[worker]) {
        ++this->dropped_;
        return false;
      }
      return true;
    }

    // Caller holds the lock: a restore discards the step in progress.
    void reset_locked() {
      thrust::fill(this->device_.policy(), accumulator_.begin(), accumulator_.end(), 0.f);
      this->device_.synchronize();
      std::fill(pushed_.begin(), pushed_.end(), false);
      count_ = 0;
      forget_rows();
    }

    bool ready_locked(std::size_t, std::uint64_t step) const { return this->step_ >= step; }
    std::string reason_locked(std::size_t worker, std::uint64_t step) const {
      return "sync_average: worker " + std::to_string(worker) + " waited past its deadline for step " +
             std::to_string(step) + " (shard at step " + std::to_string(this->step_) + "; no gradient yet from " +
             missing() + ")";
    }

    // Caller holds the lock: whether an elastic step may close (every present member pushed,
    // or min(R, present) with backups; at least min_members_ there, the finished included).
    bool elastic_complete() const {
      std::size_t live = 0, live_pushed = 0, finished = 0;
      for (std::size_t w = 0; w < departed_.size(); ++w) {
        finished += this->finished_[w];
        if (departed_[w] || this->finished_[w]) continue;
        ++live;
        live_pushed += pushed_[w];
      }
      if (live + finished < min_members_) return false;
      return aggregate_ == 0 ? live_pushed == live : count_ >= std::min(aggregate_, live);
    }

    // Caller holds the lock. Applies the mean once enough fresh gradients are in.
    bool maybe_apply() {
      if (min_members_ > 0) {
        if (count_ == 0 || !elastic_complete()) return false;
        return apply_step();
      }
      std::size_t active = this->active_workers(), gone = 0;
      for (std::size_t w = 0; w < departed_.size(); ++w) gone += departed_[w] && !this->finished_[w];
      if (gone <= this->workers_ - replicas_) active -= gone;  // the departed are the backups
      std::size_t needed = std::min(replicas_, active);
      if (count_ == 0 || count_ < needed) return false;
      return apply_step();
    }

    // Caller holds the lock: the mean of the step's pushes applied, the next step open.
    bool apply_step() {
      const float scale = 1.f / static_cast<float>(count_);
      float* acc = thrust::raw_pointer_cast(accumulator_.data());
      if constexpr (sparse_apply<O>::available) {
        if (!dense_in_step_ && touched_dim_ != mixed_dims && can_apply_sparse(this->optimizer_)) {
          apply_touched_rows(acc, scale);
        } else {
          apply_dense(acc, scale);
        }
      } else {
        apply_dense(acc, scale);
      }
      forget_rows();
      std::fill(pushed_.begin(), pushed_.end(), false);
      count_ = 0;
      ++this->step_;
      this->cv_.notify_all();
      return true;
    }

    void apply_dense(float* acc, float scale) {
      this->apply(acc, scale);
      thrust::fill(this->device_.policy(), accumulator_.begin(), accumulator_.end(), 0.f);
      this->device_.synchronize();
    }

    // A step of sparse pushes only: the optimizer on the rows they touched (no row at all when
    // every push was empty), and those rows of the accumulator back to zero.
    void apply_touched_rows(float* acc, float scale) {
      if (touched_.empty()) return;
      std::sort(touched_.begin(), touched_.end());
      touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
      const std::size_t dim = touched_dim_, count = touched_.size();
      typename D::template vector<std::uint64_t> rows(touched_.begin(), touched_.end());
      typename D::template vector<float> grads(count * dim);
      detail::for_each_row_element(this->device_, count, dim,
                                   detail::take_rows_kernel{detail::raw_data(grads), acc, detail::raw_data(rows), dim});
      sparse_apply<O>::apply(this->optimizer_, this->device_, this->slots_, this->writable_values(),
                             detail::raw_data(rows), count, dim, detail::raw_data(grads), scale);
      this->device_.synchronize();
    }

    void forget_rows() {
      touched_.clear();
      touched_dim_ = 0;
      dense_in_step_ = false;
    }

    std::string missing() const {
      std::string out;
      std::size_t present = 0;
      for (std::size_t w = 0; w < pushed_.size(); ++w) {
        const bool member = min_members_ == 0 || !departed_[w] || this->finished_[w];
        present += member;
        if (member && !pushed_[w] && !this->finished_[w])
          out += (out.empty() ? "worker:" : ", worker:") + std::to_string(w);
      }
      if (out.empty()) out = "nobody";
      if (min_members_ > 0 && present < min_members_)
        out += "; " + std::to_string(present) + " of at least " + std::to_string(min_members_) +
               " members present (the job's worker range MIN)";
      return out;
    }

    typename D::template vector<float> accumulator_;
    std::vector<bool> pushed_;
    std::vector<bool> departed_ = std::vector<bool>(this->workers_, false);
    std::size_t replicas_;
    std::size_t aggregate_ = replicas_ == this->workers_ ? 0 : replicas_;  // R as given; 0: every member
    std::size_t min_members_ = 0;                                          // 0: not elastic
    std::size_t count_ = 0;
    // The step's sparse pushes: the rows they named (host memory, duplicates until applied) and
    // their width, mixed_dims when two pushes disagreed; whether a dense push came too.
    static constexpr std::size_t mixed_dims = static_cast<std::size_t>(-1);
    std::vector<std::uint64_t> touched_;
    std::size_t touched_dim_ = 0;
    bool dense_in_step_ = false;
  };

  /// @returns a new shard of this rule holding @p initial, for @p workers workers.
  template <Device D, class O>
  std::unique_ptr<shard<D, O>> make_shard(D device, std::span<const float> initial, O optimizer,
                                          std::size_t workers) const {
    return std::make_unique<shard<D, O>>(std::move(device), initial, std::move(optimizer), workers,
                                         replicas_to_aggregate);
  }
};

}  // namespace dsgd::update
