// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// update::async: asynchronous SGD, each gradient applied as it arrives.
#pragma once

#include <dsgd/update/detail/shard_storage.hpp>

#include <memory>

namespace dsgd::update {

/// Asynchronous SGD (Hogwild-style on the ps, but shard-consistent): each push is applied at
/// once under the shard's lock, so a pull never sees a shard half-updated. The step counts
/// applied gradients. Update for a gradient g from any worker: w <- opt(w, g).
struct async {
  /// Each push is applied on its own (update::applies_each_push_v).
  static constexpr bool applies_each_push = true;
  /// Async never waits: any step will do.
  static constexpr std::uint64_t next_pull(std::uint64_t, std::uint64_t) noexcept { return 0; }

  template <Device D, class O>
  class shard : public detail::shard_storage<shard<D, O>, D, O> {
    using base = detail::shard_storage<shard<D, O>, D, O>;
    friend base;

   public:
    shard(D device, std::span<const float> initial, O optimizer, std::size_t workers)
        : base(device, initial, std::move(optimizer), workers) {}

    push_outcome push(std::size_t worker, std::uint64_t, const float* grad, clock_type::time_point) {
      return apply_push(worker, grad, false);
    }

    using base::push_chunk;

    /// push() of a gradient whose chunks went through push_chunk() as they arrived: publishes
    /// them with the rest, or applies @p grad whole when the stream was refused or ended.
    push_outcome push_streamed(std::size_t worker, std::uint64_t, const float* grad, clock_type::time_point) {
      return apply_push(worker, grad, true);
    }

    /// A sparse push: the optimizer (update::sparse_apply) on rows @p rows only, local to the
    /// shard and @p dim floats wide, with the gradient rows of duplicate keys summed; @p rows
    /// and @p grads (rows.size() x dim) are host memory. Counts as one gradient.
    /// @throws dsgd::error for a row past the shard or an optimizer without a sparse apply
    push_outcome push_rows(std::size_t worker, std::uint64_t, std::span<const std::uint64_t> rows, std::size_t dim,
                           const float* grads, clock_type::time_point) {
      this->check_rows(rows, dim, "async::push_rows");
      auto c = detail::coalesce_rows<D>(rows, dim, grads);
      std::lock_guard lock(this->mutex_);
      this->check_worker(worker, "async::push_rows");
      this->apply_rows(c, dim, 1.f);
      ++this->step_;
      return push_outcome::applied;
    }

    void finish(std::size_t worker) {
      std::lock_guard lock(this->mutex_);
      this->check_worker(worker, "async::finish");
      this->finished_[worker] = true;
    }

   private:
    push_outcome apply_push(std::size_t worker, const float* grad, bool streamed) {
      std::lock_guard lock(this->mutex_);
      this->check_worker(worker, "async::push");
      this->apply_push_locked(worker, grad, streamed);
      ++this->step_;
      return push_outcome::applied;
    }
    bool ready_locked(std::size_t, std::uint64_t) const { return true; }
    std::string reason_locked(std::size_t, std::uint64_t) const { return {}; }
  };

  /// @returns a new shard of this rule holding @p initial, for @p workers workers.
  template <Device D, class O>
  std::unique_ptr<shard<D, O>> make_shard(D device, std::span<const float> initial, O optimizer,
                                          std::size_t workers) const {
    return std::make_unique<shard<D, O>>(std::move(device), initial, std::move(optimizer), workers);
  }
};

}  // namespace dsgd::update
