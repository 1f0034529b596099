// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// What every update rule's shard holds: the values, the optimizer and its slots, a lock.
// IWYU pragma: private, include <dsgd/update/sync_average.hpp>
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/update/concepts.hpp>

#include <thrust/copy.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dsgd::update::detail {

/// The storage and the pull protocol shared by every rule's shard. @p Derived supplies, called
/// with the lock held, `ready_locked(worker, step)` (may this worker read at this step now?)
/// and `reason_locked(worker, step)` (what it is waiting for, for the deadline's message).
template <class Derived, Device D, class O>
  requires Optimizer<O, D>
class shard_storage {
 public:
  shard_storage(D device, std::span<const float> initial, O optimizer, std::size_t workers)
      : device_(std::move(device)),
        values_(initial.begin(), initial.end()),
        optimizer_(std::move(optimizer)),
        slots_(device_, initial.size()),
        workers_(workers),
        finished_(workers, false) {
    if (workers == 0) throw error(errc::invalid_argument, "update rule: a shard needs at least one worker");
  }

  std::size_t size() const noexcept { return values_.size(); }
  std::size_t workers() const noexcept { return workers_; }

  /// Waits until the rule lets @p worker read at @p step, copies a consistent snapshot of the
  /// shard into @p out (raw pointer into device memory) and returns the shard's step.
  /// @throws dsgd::error errc::timed_out past @p deadline, naming what it waited for
  std::uint64_t pull(std::size_t worker, std::uint64_t step, float* out,
                     clock_type::time_point deadline) {
    std::unique_lock lock(mutex_);
    check_worker(worker, "pull");
    if (!cv_.wait_until(lock, deadline, [&] { return self().ready_locked(worker, step); }))
      throw error(errc::timed_out, self().reason_locked(worker, step));
    copy_out(out);
    return step_;
  }

  /// pull() without waiting: std::nullopt (and nothing copied) when @p worker may not read yet.
  std::optional<std::uint64_t> try_pull(std::size_t worker, std::uint64_t step, float* out) {
    std::lock_guard lock(mutex_);
    check_worker(worker, "pull");
    if (!self().ready_locked(worker, step)) return std::nullopt;
    copy_out(out);
    return step_;
  }

  /// @returns what a pull by @p worker at @p step is waiting for ("" when it need not wait).
  std::string wait_reason(std::size_t worker, std::uint64_t step) const {
    std::lock_guard lock(mutex_);
    return self().ready_locked(worker, step) ? std::string() : self().reason_locked(worker, step);
  }

  /// @returns the shard's step (sync: steps applied; async and SSP: gradients applied).
  std::uint64_t step() const {
    std::lock_guard lock(mutex_);
    return step_;
  }
  /// @returns how many pushes were dropped as stale or duplicate.
  std::uint64_t dropped() const {
    std::lock_guard lock(mutex_);
    return dropped_;
  }

  /// Overwrites the values and the step (a restore from a checkpoint); slots are reset.
  void assign(std::span<const float> values, std::uint64_t step) {
    std::lock_guard lock(mutex_);
    if (values.size() != values_.size())
      throw error(errc::shape_mismatch, "shard::assign: " + std::to_string(values.size()) +
                                            " values for a shard of " + std::to_string(values_.size()));
    thrust::copy(values.begin(), values.end(), values_.begin());
    slots_ = typename O::template state<D>(device_, values_.size());
    step_ = step;
    cv_.notify_all();
  }

 protected:
  // Callers hold mutex_.
  void apply(const float* grad, float scale) {
    optimizer_.apply(device_, slots_, thrust::raw_pointer_cast(values_.data()), grad,
                     values_.size(), scale);
    device_.synchronize();
  }
  void copy_out(float* out) const {
    thrust::copy(device_.policy(), values_.begin(), values_.end(), out);
    device_.synchronize();
  }
  void check_worker(std::size_t worker, const char* what) const {
    if (worker >= workers_)
      throw error(errc::invalid_argument, std::string(what) + ": worker " + std::to_string(worker) +
                                              " is out of range (the shard has " +
                                              std::to_string(workers_) + " workers)");
  }
  std::size_t active_workers() const noexcept {
    std::size_t n = 0;
    for (bool f : finished_) n += !f;
    return n;
  }
  const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }

  D device_;
  typename D::template vector<float> values_;
  O optimizer_;
  typename O::template state<D> slots_;
  std::size_t workers_;
  std::vector<bool> finished_;
  std::uint64_t step_ = 0;
  std::uint64_t dropped_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
};

}  // namespace dsgd::update::detail
