// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// What every update rule's shard holds: the values, the optimizer and its slots, a lock; the
/// pull protocol (dense, pinned and by rows) and checkpoints (save, restore, assign).
// IWYU pragma: private, include <dsgd/update/sync_average.hpp>
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/update/concepts.hpp>
#include <dsgd/update/detail/rows.hpp>

#include <thrust/copy.h>
#include <thrust/memory.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace dsgd::update::detail {

/// The storage and the pull protocol shared by every rule's shard. @p Derived supplies, called
/// with the lock held, `ready_locked(worker, step)` (may this worker read at this step now?)
/// and `reason_locked(worker, step)` (what it is waiting for, for the deadline's message).
template <class Derived, Device D, class O>
requires Optimizer<O, D>
class shard_storage {
 public:
  /// The values of a shard as device vector; shared so that a pin keeps one version alive.
  using buffer_type = typename D::template vector<float>;

  /// One version of the shard's values, unchanged for as long as the pin lives: a push applied
  /// meanwhile writes to a fresh copy (copy on write), never to these values. A ps sends pull
  /// replies straight from a pin, with no snapshot copy.
  struct pinned_values {
    std::shared_ptr<const buffer_type> values;  ///< in the device's memory
    std::uint64_t step = 0;                     ///< the shard's step of this version
  };

  shard_storage(D device, std::span<const float> initial, O optimizer, std::size_t workers)
      : device_(std::move(device)),
        values_(std::make_shared<buffer_type>(initial.begin(), initial.end())),
        optimizer_(std::move(optimizer)),
        slots_(optim::make_state(optimizer_, device_, initial.size())),
        workers_(workers),
        finished_(workers, false) {
    if (workers == 0) throw error(errc::invalid_argument, "update rule: a shard needs at least one worker");
  }

  /// @returns the number of elements the shard holds.
  std::size_t size() const noexcept { return values_->size(); }
  std::size_t workers() const noexcept { return workers_; }

  /// Waits until the rule lets @p worker read at @p step, copies a consistent snapshot of the
  /// shard into @p out (raw pointer into device memory) and returns the shard's step.
  /// @throws dsgd::error errc::timed_out past @p deadline, naming what it waited for
  std::uint64_t pull(std::size_t worker, std::uint64_t step, float* out, clock_type::time_point deadline) {
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

  /// pull() without waiting and without a copy: the current values, pinned, or std::nullopt
  /// when @p worker may not read yet. Cheap while no push lands during the pin's life; a push
  /// that does copies the shard once, however many pins hold the old version.
  std::optional<pinned_values> try_pin(std::size_t worker, std::uint64_t step) {
    std::lock_guard lock(mutex_);
    check_worker(worker, "pull");
    if (!self().ready_locked(worker, step)) return std::nullopt;
    return pinned_values{values_, step_};
  }

  /// Sparse pull(): waits as pull() does, then copies rows @p rows (local to the shard, each
  /// @p dim floats wide, in the given order, duplicates allowed; host memory) into @p out
  /// (host memory, rows.size() x dim floats). @returns the shard's step.
  /// @throws dsgd::error errc::invalid_argument for a row past the shard, errc::shape_mismatch
  ///         for a @p dim that does not divide it, errc::timed_out past @p deadline
  std::uint64_t pull_rows(std::size_t worker, std::uint64_t step, std::span<const std::uint64_t> rows, std::size_t dim,
                          float* out, clock_type::time_point deadline) {
    check_rows(rows, dim, "pull_rows");
    std::unique_lock lock(mutex_);
    check_worker(worker, "pull_rows");
    if (!cv_.wait_until(lock, deadline, [&] { return self().ready_locked(worker, step); }))
      throw error(errc::timed_out, self().reason_locked(worker, step));
    copy_rows_out(rows, dim, out);
    return step_;
  }

  /// pull_rows() without waiting: std::nullopt (and nothing copied) when @p worker may not
  /// read yet.
  std::optional<std::uint64_t> try_pull_rows(std::size_t worker, std::uint64_t step,
                                             std::span<const std::uint64_t> rows, std::size_t dim, float* out) {
    check_rows(rows, dim, "pull_rows");
    std::lock_guard lock(mutex_);
    check_worker(worker, "pull_rows");
    if (!self().ready_locked(worker, step)) return std::nullopt;
    copy_rows_out(rows, dim, out);
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
  /// Overwrites the values and the step (a restore from a checkpoint); the optimizer's slots
  /// and the rule's bookkeeping of the step in progress start afresh.
  void assign(std::span<const float> values, std::uint64_t step) {
    saved_state s;
    s.step = step;
    s.values.assign(values.begin(), values.end());
    restore(s);
  }

  /// What a checkpoint holds of a shard (update::shard_state).
  using saved_state = shard_state;

  /// @returns a consistent copy of the shard's values, step, slots and counters.
  saved_state save() {
    std::lock_guard lock(mutex_);
    saved_state out;
    out.step = step_;
    out.values.resize(values_->size());
    copy_out(out.values.data());
    if constexpr (checkpointable_state<typename O::template state<D>>) {
      slots_.visit([&](const char* name, auto& slot) {
        if constexpr (std::is_same_v<std::decay_t<decltype(slot)>, std::uint64_t>) {
          out.counters.emplace_back(name, slot);
        } else {
          out.slots.emplace_back(name, std::vector<float>(slot.size()));
          thrust::copy(slot.begin(), slot.end(), out.slots.back().second.begin());
        }
      });
    }
    return out;
  }

  /// Overwrites the shard with @p s (a restore from a checkpoint): values and step, the slots
  /// and counters @p s names (any it lacks start afresh), and the rule's bookkeeping of the
  /// step in progress starts afresh (gradients accumulated towards it are discarded).
  /// @throws dsgd::error errc::shape_mismatch naming the values or slot of the wrong size
  void restore(const saved_state& s) {
    std::lock_guard lock(mutex_);
    const auto n = values_->size();
    if (s.values.size() != n)
      throw error(errc::shape_mismatch,
                  "shard restore: " + std::to_string(s.values.size()) + " values for a shard of " + std::to_string(n));
    auto slots = optim::make_state(optimizer_, device_, n);
    if constexpr (checkpointable_state<typename O::template state<D>>) {
      slots.visit([&](const char* name, auto& slot) {
        if constexpr (std::is_same_v<std::decay_t<decltype(slot)>, std::uint64_t>) {
          for (const auto& [k, v] : s.counters)
            if (k == name) slot = v;
        } else {
          for (const auto& [k, v] : s.slots) {
            if (k != name) continue;
            if (v.size() != n)
              throw error(errc::shape_mismatch, std::string("shard restore: slot ") + name + " holds " +
                                                    std::to_string(v.size()) + " values for a shard of " +
                                                    std::to_string(n));
            thrust::copy(v.begin(), v.end(), slot.begin());
          }
        }
      });
    }
    if (values_.use_count() > 1) values_ = std::make_shared<buffer_type>(n);
    thrust::copy(s.values.begin(), s.values.end(), values_->begin());
    slots_ = std::move(slots);
    ++version_;  // a push being applied in chunks started from the old values: it is applied whole
    step_ = s.step;
    static_cast<Derived&>(*this).reset_locked();
    cv_.notify_all();
  }

 protected:
  // Callers hold mutex_. The values to update in place: a private copy when a pin still holds
  // the current ones. Pins are made under mutex_, so a count of 1 cannot grow meanwhile; a pin
  // released concurrently at worst costs a copy that was not needed.
  float* writable_values() {
    if (values_.use_count() > 1) values_ = std::make_shared<buffer_type>(*values_);
    ++version_;  // every caller is about to change the values, the slots or both
    return thrust::raw_pointer_cast(values_->data());
  }
  // Callers hold mutex_.
  void apply(const float* grad, float scale) {
    optimizer_.apply(device_, slots_, writable_values(), grad, values_->size(), scale);
    device_.synchronize();
  }

  // Throws for a row width that does not divide the shard or a row past its end.
  void check_rows(std::span<const std::uint64_t> rows, std::size_t dim, std::string_view what,
                  std::string_view suffix = {}) const {
    detail::check_rows(rows, dim, values_->size(), what, suffix);
  }
  // Callers hold mutex_.
  void copy_rows_out(std::span<const std::uint64_t> rows, std::size_t dim, float* out) const {
    detail::copy_rows_out(device_, thrust::raw_pointer_cast(values_->data()), rows, dim, out);
  }
  void copy_out(float* out) const {
    thrust::copy(device_.policy(), values_->begin(), values_->end(), out);
    device_.synchronize();
  }
  // @p what and @p suffix name the call ("async" "::push"), joined only for the message.
  void check_worker(std::size_t worker, std::string_view what, std::string_view suffix = {}) const {
    if (worker >= workers_)
      throw error(errc::invalid_argument, std::string(what) + std::string(suffix) + ": worker " +
                                              std::to_string(worker) + " is out of range (the shard has " +
                                              std::to_string(workers_) + " workers)");
  }
  std::size_t active_workers() const noexcept {
    std::size_t n = 0;
    for (bool f : finished_) n += !f;
    return n;
  }
  const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
  // Callers hold mutex_. A rule with bookkeeping of the step in progress hides this to clear it
  // when the shard is restored.
  void reset_locked() {}

  D device_;
  std::shared_ptr<buffer_type> values_;  // replaced, never written, while a pin holds it
  O optimizer_;
  typename O::template state<D> slots_;
  std::size_t workers_;
  std::vector<bool> finished_;
  std::uint64_t step_ = 0;
  std::uint64_t dropped_ = 0;
  mutable std::mutex mutex_;
  std::uint64_t version_ = 0;  // bumped by every change of values_ or slots_ (ends a chunked stream)
  std::condition_variable cv_;
};

}  // namespace dsgd::update::detail
