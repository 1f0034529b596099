// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// update::async: asynchronous SGD, each gradient applied as it arrives.
#pragma once

#include <dsgd/update/detail/arrival_shard.hpp>

#include <memory>
#include <string>

namespace dsgd::update {

/// Asynchronous SGD (Hogwild-style on the ps, but shard-consistent): each push is applied at
/// once under the shard's lock, so a pull never sees a shard half-updated. The step counts
/// applied gradients. Update for a gradient g from any worker: w <- opt(w, g).
/// It is bounded_staleness with S = infinity: the same apply-on-arrival shard
/// (detail::arrival_shard), with a pull that never waits and no clocks to keep.
struct async {
  /// Each push is applied on its own (update::applies_each_push_v).
  static constexpr bool applies_each_push = true;
  /// Async never waits: any step will do.
  static constexpr std::uint64_t next_pull(std::uint64_t, std::uint64_t) noexcept { return 0; }

  /// One variable shard under async (see UpdateRule): push, push_streamed, push_chunk and
  /// push_rows apply at once; a pull never waits.
  template <Device D, class O>
  class shard : public detail::arrival_shard<shard<D, O>, D, O> {
    friend detail::shard_storage<shard, D, O>;
    friend detail::arrival_shard<shard, D, O>;

   public:
    /// The rule's name, in messages.
    static constexpr const char* name = "async";

    /// Makes the shard from @p initial values for @p workers workers (detail::arrival_shard).
    using detail::arrival_shard<shard, D, O>::arrival_shard;

   private:
    void on_arrival_locked(std::size_t) {}
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
