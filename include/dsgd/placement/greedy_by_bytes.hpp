// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// placement::greedy_by_bytes: each variable goes to the ps task holding the fewest bytes.
#pragma once

#include <dsgd/placement/concepts.hpp>

#include <algorithm>

namespace dsgd::placement {

/// Variables, in creation order, each go to the least-loaded ps task by bytes; ties go to the
/// lowest task index (TensorFlow's GreedyLoadBalancingStrategy with a byte-size load function).
/// Deterministic: it depends only on the variables' order and sizes.
struct greedy_by_bytes {
  plan place(const std::vector<variable_info>& variables, std::size_t ps_tasks) const {
    detail::check_ps_tasks(ps_tasks, "placement::greedy_by_bytes");
    std::vector<std::size_t> bytes(ps_tasks, 0);
    std::vector<shard> shards;
    for (std::size_t i = 0; i < variables.size(); ++i) {
      auto least = static_cast<std::size_t>(std::min_element(bytes.begin(), bytes.end()) - bytes.begin());
      bytes[least] += variables[i].bytes();
      shards.push_back({i, least, 0, variables[i].shape.elements()});
    }
    return plan(variables, ps_tasks, std::move(shards));
  }
};

static_assert(Placement<greedy_by_bytes>);

}  // namespace dsgd::placement
