// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/cluster/mpi.hpp>, run under `mpirun -np 3`: every rank derives its role with
// the hosts exchanged through MPI (role_from_mpi), then the ranks compare what they derived over
// MPI: one cluster, each task once, this rank's own host at its address. Rank 0 prints the
// tally ("N passed, M failed"); every rank exits 1 on any failure.
#include <dsgd/cluster/mpi.hpp>

#include <mpi.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

namespace {

int failures = 0, checks = 0;

void check(bool ok, const std::string& what) {
  ++checks;
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  }
}

// Every rank's string, gathered to all (lengths first, then the bytes).
std::vector<std::string> all_of(const std::string& mine) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < size; ++r) offsets[r] = total, total += lengths[r];
  std::string all(static_cast<std::size_t>(total), '\0');
  MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) out.push_back(all.substr(static_cast<std::size_t>(offsets[r]), lengths[r]));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    // Each rank names its host itself ("host-<rank>"), so the test sees whose name lands where.
    const auto me =
        dsgd::cluster::role_from_mpi({.num_ps = 1, .base_port = 4000}, MPI_COMM_WORLD, "host-" + std::to_string(rank));
    const auto clusters = all_of(me.cluster.to_json().dump());
    const auto tasks = all_of(me.task.to_string());
    check(std::set<std::string>(clusters.begin(), clusters.end()).size() == 1, "the ranks derived different clusters");
    check(std::set<std::string>(tasks.begin(), tasks.end()).size() == static_cast<std::size_t>(size),
          "two ranks derived the same task");
    check(me.task.to_string() == (rank == 0 ? std::string("ps:0") : "worker:" + std::to_string(rank - 1)),
          "rank " + std::to_string(rank) + " is " + me.task.to_string());
    const auto mine = me.cluster.address(me.task.job, me.task.index);
    check(mine.host == "host-" + std::to_string(rank) && mine.port == 4000 + rank,
          "rank " + std::to_string(rank) + " is at " + mine.to_string());
    check(me.is_chief() == (rank == 1), "the chief is worker:0, rank 1");
    // Without a name of its own each rank contributes its real host name.
    const auto hosts = dsgd::cluster::gather_hosts();
    check(hosts.size() == static_cast<std::size_t>(size) && !hosts[static_cast<std::size_t>(rank)].empty(),
          "gather_hosts gave " + std::to_string(hosts.size()) + " hosts");
  } catch (const std::exception& e) {
    check(false, std::string("rank ") + std::to_string(rank) + ": " + e.what());
  }
  int total_failures = 0, total_checks = 0;
  MPI_Reduce(&failures, &total_failures, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&checks, &total_checks, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%d passed, %d failed\n", total_checks - total_failures, total_failures);
  MPI_Bcast(&total_failures, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return total_failures == 0 ? 0 : 1;
}
