// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// One task of the job as the launcher tracks it: its role and address, its process and output,
// its restarts, and where it stands in an elastic job; with the role questions the launcher
// asks about it.
#pragma once

#include "options.hpp"
#include "output.hpp"

#include <dsgd/cluster/cluster_spec.hpp>

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

namespace dsgd_launch {

using clock_type = std::chrono::steady_clock;

struct task {
  dsgd::cluster::task_id id;
  std::string address;
  task_output output;  // its prefix is "[worker:1] "
  pid_t pid = -1;
  bool running = false;
  int status = 0;                                    // waitpid status once !running
  int restarts = 0;                                  // times restarted after a failure (--max-restarts)
  std::optional<clock_type::time_point> restart_at;  // a restart is due then
  bool started = false;  // ever started (an elastic job's slots beyond MIN wait for a SIGUSR1)
  bool leaving = false;  // stopped by SIGUSR2: its exit is a departure, not a failure
  bool left = false;     // its worker left the job (a joiner may take the slot; not one that finished)

  bool is_ps() const { return id.job == "ps"; }
};

inline bool is_worker(const task& t) { return t.id.job == "worker"; }

/// The chief: the "chief" task with --chief, else worker 0.
inline bool is_chief(const task& t, const options& o) {
  return o.chief ? t.id.job == "chief" : is_worker(t) && t.id.index == 0;
}

/// A worker of an elastic job that may join and leave: not the chief, which shuts the job down.
inline bool elastic_worker(const task& t, const options& o) {
  return o.min_workers > 0 && is_worker(t) && !is_chief(t, o);
}

}  // namespace dsgd_launch
