// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// What a task's exit means while the cluster runs: done, a worker leaving an elastic job, a
// failure restarted in place after a backoff (--max-restarts), or a failure that stops the job.
#pragma once

#include "options.hpp"
#include "task.hpp"

#include <sys/wait.h>

#include <algorithm>

namespace dsgd_launch {

enum class exit_verdict {
  success,    // exited with status 0
  departure,  // an elastic worker scaled down, or failed past --max-restarts: the job goes on
  restart,    // failed with restarts left: started again in place after restart_delay()
  failure,    // failed past --max-restarts: the cluster stops with failure_code()
};

/// The verdict on `t`, which has exited with `t.status`.
inline exit_verdict judge_exit(const task& t, const options& o) {
  if (WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0) return exit_verdict::success;
  // A departure: the ps tasks average the steps over the workers still there.
  if (elastic_worker(t, o) && (t.leaving || t.restarts >= o.max_restarts)) return exit_verdict::departure;
  if (t.restarts < o.max_restarts) return exit_verdict::restart;
  return exit_verdict::failure;
}

/// Seconds before restart `n` (from 1): 1, 2, 4, 8, 16, then 30, so that a task that fails at
/// once does not spin.
inline double restart_delay(int n) { return std::min(30.0, static_cast<double>(1LL << std::min(n - 1, 5))); }

/// The launcher's exit status for a failed task: the task's own, or 128 + the signal that killed it.
inline int failure_code(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

}  // namespace dsgd_launch
