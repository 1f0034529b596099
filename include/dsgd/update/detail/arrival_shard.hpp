// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The apply-on-arrival core of the async and bounded-staleness shards: every push, dense,
/// streamed in chunks or by rows, is applied at once under the shard's lock. The rules differ
/// only in when a worker may pull (and what bookkeeping a push adds), which they supply.
// IWYU pragma: private, include <dsgd/update/async.hpp>
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/update/chunked_apply.hpp>
#include <dsgd/update/detail/shard_storage.hpp>

#include <thrust/memory.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <utility>

namespace dsgd::update::detail {

/// A shard that applies each push as it arrives. @p Derived supplies, besides shard_storage's
/// `ready_locked` and `reason_locked`, `Derived::name` (the rule's name, for messages) and
/// `on_arrival_locked(worker)`, called with the lock held after each applied push (SSP
/// advances the worker's clock there; async does nothing).
template <class Derived, Device D, class O>
class arrival_shard : public shard_storage<Derived, D, O> {
  using base = shard_storage<Derived, D, O>;
  friend base;

 public:
  arrival_shard(D device, std::span<const float> initial, O optimizer, std::size_t workers)
      : base(std::move(device), initial, std::move(optimizer), workers) {}

  /// Applies @p grad (device memory) from @p worker at once; the step counts applied gradients.
  push_outcome push(std::size_t worker, std::uint64_t, const float* grad) { return apply_push(worker, grad, false); }

  /// push() of a gradient whose chunks went through push_chunk() as they arrived: publishes
  /// them with the rest, or applies @p grad whole when the stream was refused or ended.
  push_outcome push_streamed(std::size_t worker, std::uint64_t, const float* grad) {
    return apply_push(worker, grad, true);
  }

  /// A sparse push: the optimizer (update::sparse_apply) on rows @p rows only, local to the
  /// shard and @p dim floats wide, with the gradient rows of duplicate keys summed; @p rows
  /// and @p grads (rows.size() x dim) are host memory. Counts as one gradient.
  /// @throws dsgd::error for a row past the shard or an optimizer without a sparse apply
  push_outcome push_rows(std::size_t worker, std::uint64_t, std::span<const std::uint64_t> rows, std::size_t dim,
                         const float* grads) {
    this->check_rows(rows, dim, Derived::name, "::push_rows");
    auto c = coalesce_rows<D>(rows, dim, grads);
    std::lock_guard lock(this->mutex_);
    this->check_worker(worker, Derived::name, "::push_rows");
    if constexpr (sparse_apply<O>::available) {
      if (can_apply_sparse(this->optimizer_)) {
        sparse_apply<O>::apply(this->optimizer_, this->device_, this->slots_, this->writable_values(), raw_data(c.rows),
                               c.count, dim, raw_data(c.grads), 1.f);
        this->device_.synchronize();
        arrived_locked(worker);
        return push_outcome::applied;
      }
    }
    throw error(errc::invalid_argument,
                "sparse push: this optimizer has no sparse apply (update::sparse_apply maps the element rule of "
                "an optimizer without step counters, such as optim::sgd and optim::momentum); push the dense "
                "gradient, or use sync_average, which applies the dense mean");
  }

  /// @p worker has no more data: it no longer holds others back.
  void finish(std::size_t worker) {
    std::lock_guard lock(this->mutex_);
    this->check_worker(worker, Derived::name, "::finish");
    this->finished_[worker] = true;
    this->cv_.notify_all();
  }

  // --- chunked apply -------------------------------------------------------------------------
  // A push that arrives in chunks is applied as they come, out of place: the new values and
  // slots go to next_values_ and next_slots_ while values_ and slots_ stay what pulls, pins and
  // saves read. Its last chunk publishes the new version with a swap, under the lock, so no
  // reader ever sees a push half applied. Whatever changes the values meanwhile (another push,
  // a restore) bumps version_, which ends the stream: that push is then applied whole, from the
  // gradient the ps kept. One stream per shard at a time; a push whose stream ended, was refused,
  // or never started loses nothing but the overlap.

  /// Applies elements [first, first + count) of a push from @p worker that is still arriving
  /// (in chunks, in order, from element 0; @p grad is the whole gradient buffer, filled up to
  /// first + count; device memory), out of place: pulls see none of it until push_streamed()
  /// publishes the whole.
  /// @returns false when this push will be applied whole instead: the optimizer has no
  ///          chunked_apply, another push is being streamed, or the shard changed meanwhile
  bool push_chunk(std::size_t worker, std::size_t first, std::size_t count, const float* grad) {
    std::lock_guard lock(this->mutex_);
    this->check_worker(worker, "push_chunk");
    if constexpr (!chunked_apply<O>::available) {
      return false;
    } else {
      if (!can_apply_chunked(this->optimizer_)) return false;
      const std::size_t n = this->values_->size();
      if (first == 0) {
        if (stream_.live && stream_.worker != worker && stream_.version == this->version_) return false;  // taken
        stream_ = {worker, this->version_, 0, true};
        if (!next_values_ || next_values_.use_count() > 1) next_values_ = std::make_shared<buffer_type>(n);
        if (!next_slots_) next_slots_.emplace(optim::make_state(this->optimizer_, this->device_, n));
      } else if (!stream_live_for(worker) || stream_.done != first) {
        if (stream_.worker == worker) stream_.live = false;
        return false;
      }
      if (first > n || count > n - first) {
        stream_.live = false;
        return false;
      }
      apply_chunk(grad, first, count);
      stream_.done = first + count;
      return true;
    }
  }

  /// @returns how many pushes were applied chunk by chunk as they arrived (chunked_apply).
  std::uint64_t streamed() const {
    std::lock_guard lock(this->mutex_);
    return streamed_;
  }

 private:
  using buffer_type = typename base::buffer_type;

  push_outcome apply_push(std::size_t worker, const float* grad, bool streamed) {
    std::lock_guard lock(this->mutex_);
    this->check_worker(worker, Derived::name, "::push");
    apply_push_locked(worker, grad, streamed);
    arrived_locked(worker);
    return push_outcome::applied;
  }

  // Caller holds the lock: one more gradient applied.
  void arrived_locked(std::size_t worker) {
    ++this->step_;
    static_cast<Derived&>(*this).on_arrival_locked(worker);
  }

  // Caller holds the lock. Applies @p worker's complete push @p grad. When @p streamed (its
  // chunks went through push_chunk) and its stream is still live, publishes the stream with the
  // rest; otherwise applies @p grad whole, and ends any stream the worker left behind (a
  // connection lost mid-push) so that it is never published with another push.
  void apply_push_locked(std::size_t worker, const float* grad, bool streamed) {
    if constexpr (chunked_apply<O>::available) {
      if (streamed && stream_live_for(worker)) {
        const std::size_t n = this->values_->size();
        if (stream_.done < n) apply_chunk(grad, stream_.done, n - stream_.done);
        std::swap(this->values_, next_values_);  // the old version is the next stream's buffer, unless pinned
        std::swap(this->slots_, *next_slots_);
        ++this->version_;
        stream_.live = false;
        ++streamed_;
        return;
      }
    }
    if (stream_.worker == worker) stream_.live = false;
    this->apply(grad, 1.f);
  }

  // Caller holds the lock: elements [first, first + count) of the stream's next version.
  void apply_chunk(const float* grad, std::size_t first, std::size_t count) {
    chunked_apply<O>::apply(this->optimizer_, this->device_, this->slots_, *next_slots_,
                            thrust::raw_pointer_cast(this->values_->data()),
                            thrust::raw_pointer_cast(next_values_->data()), grad, first, count, 1.f);
    this->device_.synchronize();
  }

  bool stream_live_for(std::size_t worker) const {
    return stream_.live && stream_.worker == worker && stream_.version == this->version_;
  }

  struct stream_state {
    std::size_t worker = 0;
    std::uint64_t version = 0;  // version_ the stream reads from
    std::size_t done = 0;       // elements [0, done) of the next version are written
    bool live = false;
  };
  stream_state stream_;
  std::shared_ptr<buffer_type> next_values_;                 // the version a stream writes
  std::optional<typename O::template state<D>> next_slots_;  // and its slots
  std::uint64_t streamed_ = 0;
};

}  // namespace dsgd::update::detail
