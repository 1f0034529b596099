// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// An elastic job's membership (--workers MIN:MAX): the worker slots that SIGUSR1 fills and
// SIGUSR2 empties, and how many workers run.
#pragma once

#include "options.hpp"
#include "task.hpp"

#include <string>
#include <vector>

namespace dsgd_launch {

/// "2 workers running (--workers 2:3)".
inline std::string workers_running(const std::vector<task>& tasks, const options& o) {
  int n = 0;
  for (const auto& t : tasks) n += is_worker(t) && t.running;
  return std::to_string(n) + (n == 1 ? " worker" : " workers") + " running (--workers " +
         std::to_string(o.min_workers) + ":" + std::to_string(o.workers) + ")";
}

/// The slot a joining worker takes: the lowest never started, else the lowest one a worker left
/// (a slot whose worker finished stays finished: the ps no longer waits for it); none when MAX
/// workers run.
inline task* slot_to_join(std::vector<task>& tasks, const options& o) {
  for (const bool fresh : {true, false}) {
    for (auto& t : tasks) {
      if (elastic_worker(t, o) && !t.running && !t.restart_at && (fresh ? !t.started : t.left)) return &t;
    }
  }
  return nullptr;
}

/// The worker that leaves: the highest running one that is not the chief and not already
/// leaving; none when only MIN workers run.
inline task* worker_to_leave(std::vector<task>& tasks, const options& o) {
  task* last = nullptr;
  int running = 0;
  for (auto& t : tasks) {
    running += is_worker(t) && t.running;
    if (elastic_worker(t, o) && t.running && !t.leaving) last = &t;
  }
  return running <= o.min_workers ? nullptr : last;
}

}  // namespace dsgd_launch
