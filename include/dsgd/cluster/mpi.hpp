// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// cluster::role_from_mpi: a rank's role where the program links MPI, with every rank's host
/// exchanged through MPI itself (one MPI_Allgather, as Gloo and Horovod bootstrap), so no host
/// list is needed. Needs <mpi.h>: link the target dsgd::mpi (built when CMake finds MPI); the
/// umbrella header does not include this one. dsgd uses MPI only here, to learn the cluster;
/// the training traffic goes over its own transport.
#pragma once

#include <dsgd/cluster/environment.hpp>
#include <dsgd/error.hpp>

#include <mpi.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace dsgd::cluster {

namespace detail {

inline void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw error(errc::bad_cluster_spec,
              std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

}  // namespace detail

/// Longest host name gather_hosts() carries.
inline constexpr std::size_t max_mpi_host_bytes = 255;

/// Every rank's host, in rank order: each rank contributes @p mine (its host name when empty)
/// and receives all of them. Collective over @p comm: every rank of it must call.
/// @throws dsgd::error(errc::bad_cluster_spec) when MPI is not initialised, a call fails, or a
///         host name is empty or longer than max_mpi_host_bytes
inline std::vector<std::string> gather_hosts(MPI_Comm comm = MPI_COMM_WORLD, std::string mine = {}) {
  int initialized = 0;
  detail::check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) throw error(errc::bad_cluster_spec, "gather_hosts: MPI is not initialised (call MPI_Init first)");
  if (mine.empty()) {
    std::array<char, max_mpi_host_bytes + 1> name{};
    if (::gethostname(name.data(), name.size() - 1) != 0)
      throw error(errc::bad_cluster_spec, std::string("gather_hosts: gethostname failed: ") + std::strerror(errno));
    mine = name.data();
  }
  if (mine.empty() || mine.size() > max_mpi_host_bytes)
    throw error(errc::bad_cluster_spec, "gather_hosts: host \"" + mine + "\" must have 1 to " +
                                            std::to_string(max_mpi_host_bytes) + " characters");
  int size = 0;
  detail::check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  std::array<char, max_mpi_host_bytes + 1> sent{};
  std::memcpy(sent.data(), mine.data(), mine.size());
  std::vector<char> all(static_cast<std::size_t>(size) * sent.size());
  detail::check_mpi(MPI_Allgather(sent.data(), static_cast<int>(sent.size()), MPI_CHAR, all.data(),
                                  static_cast<int>(sent.size()), MPI_CHAR, comm),
                    "MPI_Allgather");
  std::vector<std::string> hosts;
  for (int r = 0; r < size; ++r) hosts.emplace_back(all.data() + static_cast<std::size_t>(r) * sent.size());
  return hosts;
}

/// This rank's role: rank and size from @p comm, the tasks from @p layout (ranks [0, num_ps) are
/// ps tasks; rank r listens on base_port + r), the hosts from layout.hosts when given, else
/// gathered from every rank (gather_hosts(); this rank's @p my_host, or its host name). Collective.
/// @throws dsgd::error(errc::bad_cluster_spec) as gather_hosts() and cluster_from_ranks() do
inline role role_from_mpi(const rank_layout& layout = {}, MPI_Comm comm = MPI_COMM_WORLD, std::string my_host = {}) {
  rank_layout l = layout;
  std::string origin = "MPI_Comm_rank";
  if (l.hosts.empty()) {
    l.hosts = gather_hosts(comm, std::move(my_host));
    origin += ", hosts gathered by MPI_Allgather";
  }
  int rank = 0, size = 0;
  detail::check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  detail::check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  role r{cluster_from_ranks(size, l), task_for_rank(rank, size, l), role_source::open_mpi, {}};
  r.origin =
      origin + " " + std::to_string(rank) + " of " + std::to_string(size) + ", num_ps " + std::to_string(l.num_ps);
  return r;
}

}  // namespace dsgd::cluster
