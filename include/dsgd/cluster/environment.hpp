// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// A process's role from its launcher's environment: TF_CONFIG, Open MPI or MPICH (`mpirun`,
/// `mpiexec`) or Slurm (`srun`). dsgd never runs its own cluster manager; it reads what the
/// launcher set.
///
/// Open MPI and Slurm give a rank r in [0, n) and a size n, but no roles. dsgd maps them with a
/// rank_layout: ranks [0, num_ps) are ps tasks 0..num_ps-1, ranks [num_ps, n) are worker tasks
/// 0..n-num_ps-1 (so worker 0, the chief, is rank num_ps). Rank r listens on port
/// base_port + r of its host, so several ranks on one machine never collide. The host of each
/// rank is rank_layout::hosts when given; under Slurm without it, the step's node list and task
/// counts (SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE, else SLURM_JOB_NODELIST and
/// SLURM_TASKS_PER_NODE) expanded as `scontrol show hostnames` does (cluster/slurm.hpp), ranks
/// in Slurm's default block order; otherwise every rank is on "localhost".
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/cluster/slurm.hpp>
#include <dsgd/cluster/tf_config.hpp>
#include <dsgd/error.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::cluster {

/// Where a role came from.
enum class role_source { tf_config, open_mpi, mpich, slurm };

/// @returns "TF_CONFIG", "Open MPI", "MPICH" or "Slurm".
inline std::string_view to_string(role_source s) noexcept {
  switch (s) {
    case role_source::tf_config:
      return "TF_CONFIG";
    case role_source::open_mpi:
      return "Open MPI";
    case role_source::mpich:
      return "MPICH";
    case role_source::slurm:
      return "Slurm";
  }
  return "unknown";
}

/// How ranks of an MPI or Slurm job become ps and worker tasks (see the file comment).
struct rank_layout {
  int num_ps = 1;                  ///< ranks [0, num_ps) are ps tasks; 0 means no ps job
  std::vector<std::string> hosts;  ///< none: all "localhost"; one: all on it; else one per rank
  std::uint16_t base_port = 2222;  ///< rank r listens on base_port + r
};

/// This process's place in the cluster, and where that came from.
struct role {
  cluster_spec cluster;                         ///< every task's address
  task_id task;                                 ///< this process
  role_source source = role_source::tf_config;  ///< which launcher's variables gave it
  std::string origin;                           ///< the variables used, for logs ("SLURM_PROCID=3, ...")

  /// @returns whether this process is the chief (see cluster::is_chief()).
  bool is_chief() const { return cluster::is_chief(cluster, task); }
};

/// Builds the cluster of an n-rank job laid out by `layout`.
/// @throws dsgd::error(errc::bad_cluster_spec) when the layout leaves no worker (num_ps >= n),
///         num_ps is negative, the host list has neither 0, 1 nor n entries, or a port would pass
///         65535; cluster_spec's own validation applies to the hosts.
inline cluster_spec cluster_from_ranks(int size, const rank_layout& layout) {
  const auto bad = [](const std::string& what) { return error(errc::bad_cluster_spec, "rank layout: " + what); };
  if (size < 1) throw bad("the job has " + std::to_string(size) + " ranks; it needs at least one");
  if (layout.num_ps < 0) throw bad("num_ps is " + std::to_string(layout.num_ps) + "; it must be non-negative");
  if (layout.num_ps >= size) {
    throw bad("num_ps is " + std::to_string(layout.num_ps) + " but the job has only " + std::to_string(size) +
              " rank(s); at least one rank must be a worker");
  }
  const std::size_t n = static_cast<std::size_t>(size);
  if (layout.hosts.size() > 1 && layout.hosts.size() != n) {
    throw bad("hosts has " + std::to_string(layout.hosts.size()) + " entries; expected none, one, or one per rank (" +
              std::to_string(size) + ")");
  }
  if (layout.base_port == 0 || static_cast<long>(layout.base_port) + size - 1 > 65535) {
    throw bad("base_port " + std::to_string(layout.base_port) + " with " + std::to_string(size) +
              " ranks gives ports outside 1-65535");
  }
  std::map<std::string, std::vector<std::string>> jobs;
  for (std::size_t r = 0; r < n; ++r) {
    const std::string& host = layout.hosts.empty()       ? std::string("localhost")
                              : layout.hosts.size() == 1 ? layout.hosts[0]
                                                         : layout.hosts[r];
    const bool v6 = host.find(':') != std::string::npos;
    const std::string address = (v6 ? "[" + host + "]" : host) + ":" + std::to_string(layout.base_port + r);
    jobs[static_cast<int>(r) < layout.num_ps ? "ps" : "worker"].push_back(address);
  }
  return cluster_spec(jobs);
}

/// @returns the task of rank `rank` under `layout`: ps:rank below num_ps, else worker:(rank - num_ps).
/// @throws dsgd::error(errc::bad_cluster_spec) when rank is outside [0, size).
inline task_id task_for_rank(int rank, int size, const rank_layout& layout) {
  if (rank < 0 || rank >= size) {
    throw error(errc::bad_cluster_spec,
                "rank layout: rank " + std::to_string(rank) + " is outside [0, " + std::to_string(size) + ")");
  }
  return rank < layout.num_ps ? task_id{"ps", rank} : task_id{"worker", rank - layout.num_ps};
}

namespace detail {

/// Reads a rank/size pair of variables. Returns nullopt and appends to `missing` when either is
/// unset; throws when both are set but do not hold valid non-negative integers.
inline std::optional<std::pair<int, int>> read_rank_pair(const env_lookup& env, const std::string& rank_var,
                                                         const std::vector<std::string>& size_vars,
                                                         std::string_view launcher, std::string& missing) {
  const auto rank_text = env(rank_var);
  std::optional<std::string> size_text;
  std::string size_var = size_vars.front();
  for (const auto& v : size_vars) {
    if ((size_text = env(v))) {
      size_var = v;
      break;
    }
  }
  if (!rank_text || !size_text) {
    if (!missing.empty()) missing += "; ";
    missing += std::string(launcher) + ": ";
    if (!rank_text && !size_text) missing += rank_var + " and " + size_var + " are not set";
    else if (!rank_text) missing += size_var + " is set but " + rank_var + " is not";
    else missing += rank_var + " is set but " + size_var + " is not";
    return std::nullopt;
  }
  const auto number = [&](const std::string& var, const std::string& text) {
    device::detail::parse_failure failure;
    if (auto v = device::detail::parse_index(text, 0, "number", failure)) return *v;
    throw error(errc::bad_cluster_spec, var + "=\"" + text + "\" is not a non-negative integer: " + failure.reason +
                                            " (at column " + std::to_string(failure.column) + ")");
  };
  const int rank = number(rank_var, *rank_text);
  const int size = number(size_var, *size_text);
  if (rank >= size) {
    throw error(errc::bad_cluster_spec,
                rank_var + "=" + std::to_string(rank) + " is not below " + size_var + "=" + std::to_string(size));
  }
  return std::pair{rank, size};
}

inline std::optional<role> role_from_pair(const env_lookup& env, const rank_layout& layout, role_source source,
                                          const std::string& rank_var, const std::vector<std::string>& size_vars,
                                          std::string& missing) {
  const auto pair = read_rank_pair(env, rank_var, size_vars, to_string(source), missing);
  if (!pair) return std::nullopt;
  const auto [rank, size] = *pair;
  role out{cluster_from_ranks(size, layout), task_for_rank(rank, size, layout), source, {}};
  out.origin = rank_var + "=" + std::to_string(rank) + ", size " + std::to_string(size) + ", num_ps " +
               std::to_string(layout.num_ps);
  return out;
}

// Slurm's rank and size, the hosts from the step's node list when the layout names none.
inline std::optional<role> role_from_slurm(const env_lookup& env, rank_layout layout, std::string& missing) {
  if (layout.hosts.empty()) {
    for (const auto& [nodes_var, tasks_var] : {std::pair{"SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE"},
                                               std::pair{"SLURM_JOB_NODELIST", "SLURM_TASKS_PER_NODE"}}) {
      const auto nodes = env(nodes_var);
      const auto tasks = env(tasks_var);
      if (!nodes || !tasks) continue;
      layout.hosts = hosts_of_ranks(*nodes, *tasks);
      auto r =
          role_from_pair(env, layout, role_source::slurm, "SLURM_PROCID", {"SLURM_NTASKS", "SLURM_NPROCS"}, missing);
      if (r) r->origin += std::string(", hosts from ") + nodes_var + "=" + *nodes + " and " + tasks_var + "=" + *tasks;
      return r;
    }
  }
  return role_from_pair(env, layout, role_source::slurm, "SLURM_PROCID", {"SLURM_NTASKS", "SLURM_NPROCS"}, missing);
}

}  // namespace detail

/// The role from Open MPI's OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE.
/// @returns nullopt when either is unset.
/// @throws dsgd::error(errc::bad_cluster_spec) when they are set but invalid, or the layout is.
inline std::optional<role> role_from_open_mpi(const rank_layout& layout,
                                              const env_lookup& env = process_environment()) {
  std::string missing;
  return detail::role_from_pair(env, layout, role_source::open_mpi, "OMPI_COMM_WORLD_RANK", {"OMPI_COMM_WORLD_SIZE"},
                                missing);
}

/// The role from Slurm's SLURM_PROCID and SLURM_NTASKS (or the older SLURM_NPROCS).
/// @returns nullopt when either is unset.
/// @throws dsgd::error(errc::bad_cluster_spec) when they are set but invalid, or the layout is.
inline std::optional<role> role_from_slurm(const rank_layout& layout, const env_lookup& env = process_environment()) {
  std::string missing;
  return detail::role_from_slurm(env, layout, missing);
}

/// The role from MPICH's (Hydra's) PMI_RANK and PMI_SIZE.
/// @returns nullopt when either is unset.
/// @throws dsgd::error(errc::bad_cluster_spec) when they are set but invalid, or the layout is.
inline std::optional<role> role_from_mpich(const rank_layout& layout, const env_lookup& env = process_environment()) {
  std::string missing;
  return detail::role_from_pair(env, layout, role_source::mpich, "PMI_RANK", {"PMI_SIZE"}, missing);
}

/// Finds this process's role: TF_CONFIG first, then Open MPI, then MPICH, then Slurm.
///
/// Open MPI and MPICH come before Slurm on purpose: `mpirun` inside an `sbatch` allocation starts its
/// processes with the SLURM_PROCID of the step that launched them (the same for every rank on a
/// node), while OMPI_COMM_WORLD_RANK is set per process by Open MPI itself. A process started by
/// `srun` alone has only the Slurm variables. `layout` is used only for Open MPI and Slurm.
/// @throws dsgd::error(errc::not_found) when no source is set, naming every variable that is
///         missing; dsgd::error(errc::bad_cluster_spec) when a source is set but invalid.
inline role resolve_from_environment(const rank_layout& layout = {}, const env_lookup& env = process_environment()) {
  if (auto config = tf_config::from_environment(env)) {
    return role{std::move(config->cluster), std::move(config->task), role_source::tf_config, "TF_CONFIG"};
  }
  std::string missing = "TF_CONFIG: not set";
  if (auto r = detail::role_from_pair(env, layout, role_source::open_mpi, "OMPI_COMM_WORLD_RANK",
                                      {"OMPI_COMM_WORLD_SIZE"}, missing)) {
    return *r;
  }
  if (auto r = detail::role_from_pair(env, layout, role_source::mpich, "PMI_RANK", {"PMI_SIZE"}, missing)) {
    return *r;
  }
  if (auto r = detail::role_from_slurm(env, layout, missing)) return *r;
  throw error(errc::not_found, "no cluster role in the environment (" + missing +
                                   "); set TF_CONFIG, or launch with mpirun, mpiexec or srun");
}

}  // namespace dsgd::cluster
