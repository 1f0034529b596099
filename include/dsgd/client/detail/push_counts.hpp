// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The worker's side of exactly-once pushes: per shard of its plan, how many pushes of its
/// replica that shard has received, as the ps tasks said at registration and as pushes were
/// answered since.
// IWYU pragma: private, include <dsgd/client/ps_client.hpp>
#pragma once

#include <dsgd/placement/plan.hpp>
#include <dsgd/transport/frame.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dsgd::client::detail {

/// One replica's pushes received, per shard of its plan. Not thread-safe, like the client.
class push_counts {
 public:
  /// Sized for @p plan; a plan of another size starts afresh (all zero).
  void track(const placement::plan& plan) {
    if (received_.size() != plan.shards().size()) received_.assign(plan.shards().size(), 0);
  }

  /// Takes the counts the ps tasks answered at registration: @p by_task[i] holds ps task i's,
  /// little-endian, in the order of its layouts (plan order, filtered by task).
  void assign(const placement::plan& plan, const std::vector<std::vector<std::uint64_t>>& by_task) {
    received_.assign(plan.shards().size(), 0);
    std::vector<std::size_t> next(by_task.size(), 0);
    for (std::size_t s = 0; s < plan.shards().size(); ++s) {
      const auto i = plan.shards()[s].ps_task;
      received_[s] =
          transport::detail::load_le<std::uint64_t>(reinterpret_cast<const std::byte*>(&by_task[i][next[i]++]));
    }
  }

  /// @returns the count every shard has reached (0 before any registration).
  std::uint64_t lowest() const noexcept {
    return received_.empty() ? 0 : *std::min_element(received_.begin(), received_.end());
  }
  /// @returns the lowest count among plan shards @p shards.
  std::uint64_t lowest(const std::vector<std::size_t>& shards) const {
    std::uint64_t out = ~std::uint64_t{0};
    for (auto s : shards) out = std::min(out, received_[s]);
    return out;
  }
  /// @returns whether plan shard @p s lacks the push after @p lowest (a shard ahead already has it:
  /// it arrived before the previous process of this replica died).
  bool lacks(std::size_t s, std::uint64_t lowest) const { return received_[s] == lowest; }

  /// Counts one push answered by plan shards @p shards. With @p skip_received, a shard ahead by
  /// more than one (a checkpoint's counts: its ps tasks saved at different moments) keeps its
  /// count until the others catch up.
  void count(const std::vector<std::size_t>& shards, bool skip_received, std::uint64_t lowest) {
    for (auto s : shards) received_[s] = skip_received ? std::max(received_[s], lowest + 1) : received_[s] + 1;
  }

 private:
  std::vector<std::uint64_t> received_;
};

}  // namespace dsgd::client::detail
