// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// cluster::replicas: which tasks of a cluster train, and in which order.
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/error.hpp>

#include <cstddef>

namespace dsgd::cluster {

/// The training replicas of a cluster: a separate "chief" job (TF2 style) is replica 0 and the
/// workers follow; without one, worker i is replica i and worker 0 is the chief (TF1 style).
struct replicas {
  /// @returns how many replicas (chief + workers) train.
  static std::size_t count(const cluster_spec& spec) {
    std::size_t n = spec.has_job("worker") ? spec.num_tasks("worker") : 0;
    return n + (spec.has_job("chief") ? spec.num_tasks("chief") : 0);
  }
  /// @returns the replica index of @p task; throws for a task that does not train.
  static std::size_t index_of(const cluster_spec& spec, const task_id& task) {
    std::size_t chiefs = spec.has_job("chief") ? spec.num_tasks("chief") : 0;
    if (task.job == "chief") return static_cast<std::size_t>(task.index);
    if (task.job == "worker") return chiefs + static_cast<std::size_t>(task.index);
    throw error(errc::invalid_argument, "task " + task.to_string() +
                                            " is not a training replica "
                                            "(only \"chief\" and \"worker\" tasks train)");
  }
  /// @returns whether @p task is the chief.
  static bool is_chief(const cluster_spec& spec, const task_id& task) {
    return spec.has_job("chief") ? task.job == "chief" && task.index == 0 : task.job == "worker" && task.index == 0;
  }
};

}  // namespace dsgd::cluster
