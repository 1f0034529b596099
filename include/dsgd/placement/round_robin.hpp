// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// placement::round_robin: variable i goes to ps task i mod S, the replica_device_setter default.
#pragma once

#include <dsgd/placement/concepts.hpp>

namespace dsgd::placement {

/// Variable i (in creation order) is held whole by ps task `i mod ps_tasks`, as TensorFlow's
/// replica_device_setter does without a ps_strategy.
struct round_robin {
  /// @returns the ps task that owns variable @p index.
  static constexpr std::size_t owner(std::size_t index, std::size_t ps_tasks) noexcept { return index % ps_tasks; }

  plan place(const std::vector<variable_info>& variables, std::size_t ps_tasks) const {
    detail::check_ps_tasks(ps_tasks, "placement::round_robin");
    std::vector<shard> shards;
    for (std::size_t i = 0; i < variables.size(); ++i)
      shards.push_back({i, owner(i, ps_tasks), 0, variables[i].shape.elements()});
    return plan(variables, ps_tasks, std::move(shards));
  }
};

static_assert(Placement<round_robin>);

}  // namespace dsgd::placement
