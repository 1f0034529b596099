// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Compute threads for tasks that share a host's cores: the library's side of dsgd-launch's
/// thread budget (docs/launching.md, "Compute threads"), for tasks started otherwise (mpirun,
/// srun, by hand). OpenMP threads of several tasks on the same cores only preempt each other, so
/// unless the user set OMP_NUM_THREADS, each task of a host takes its share of the cores.
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/cluster/tf_config.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace dsgd::cluster {

namespace detail {
// The loopback names (localhost, 127.0.0.0/8, ::1) are one host: this one.
inline bool is_loopback(std::string_view host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}
inline bool same_host(std::string_view a, std::string_view b) { return a == b || (is_loopback(a) && is_loopback(b)); }
}  // namespace detail

/// @returns how many tasks of @p spec listen on the host of task @p task, itself included: those
/// whose address names the same host (the loopback names count as one).
/// @throws dsgd::error as cluster_spec::address() when @p task is not in @p spec
inline std::size_t tasks_on_host(const cluster_spec& spec, const task_id& task) {
  const auto& mine = spec.address(task).host;
  std::size_t n = 0;
  for (const auto& job : spec.jobs())
    for (const auto& a : spec.tasks(job)) n += detail::same_host(a.host, mine);
  return n;
}

/// What share_cores() gave this process.
struct core_share {
  std::size_t tasks = 1;  ///< tasks of the cluster on this host
  unsigned cores = 1;     ///< the host's cores (std::thread::hardware_concurrency)
  int threads = 1;        ///< OpenMP threads this task now runs its kernels on
};

/// Unless OMP_NUM_THREADS is set (in @p env), gives this process cores / (tasks of @p spec on
/// task @p task's host) OpenMP threads, at least 1, and says so through @p log. It is
/// omp_set_num_threads, which sets the calling thread's count (OpenMP's rule): the thread that
/// computes, or that runs a ps's single serving thread, calls it (trainer::from_environment does,
/// from the thread that makes the trainer); other threads keep OMP_NUM_THREADS's default. BLAS
/// libraries read their thread count when they load: a program that links one sets it too
/// (dsgd::model::set_blas_threads(share->threads)).
/// @returns the share, or std::nullopt when OMP_NUM_THREADS is set, the task is alone on its
///          host, or the build has no OpenMP
/// @throws dsgd::error as tasks_on_host()
inline std::optional<core_share> share_cores(const cluster_spec& spec, const task_id& task,
                                             const std::function<void(std::string_view)>& log,
                                             const env_lookup& env = process_environment()) {
  if (env("OMP_NUM_THREADS")) return std::nullopt;
  core_share share;
  share.tasks = tasks_on_host(spec, task);
  share.cores = std::max(1u, std::thread::hardware_concurrency());
  if (share.tasks <= 1) return std::nullopt;
  share.threads = static_cast<int>(std::max<std::size_t>(1, share.cores / share.tasks));
#ifdef _OPENMP
  omp_set_num_threads(share.threads);
  if (log)
    log(task.to_string() + ": " + std::to_string(share.tasks) + " tasks of the cluster share this host's " +
        std::to_string(share.cores) + " cores: " + std::to_string(share.threads) + " compute thread" +
        (share.threads == 1 ? "" : "s") + " per task (set OMP_NUM_THREADS to choose)");
  return share;
#else
  return std::nullopt;
#endif
}

}  // namespace dsgd::cluster
