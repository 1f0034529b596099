#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# The main job under Open MPI: `mpirun -np 4` starts four copies of dsgd-train, which take their
# roles from OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE (ranks 0-1 the ps tasks, 2-3 the
# workers, rank r on port BASE + r of localhost) and train to the target. Unless the caller set
# OMP_NUM_THREADS, no rank is given one: the four share this host's cores, so each must take its
# share by itself (cluster::share_cores) and say so.
#   mpi_job_test.sh DSGD_TRAIN [dsgd-train options...]
# Exits 77 (skipped) when Open MPI's mpirun is not installed.
set -euo pipefail
example=$1
shift
command -v mpirun >/dev/null || { echo "mpi_job_test: skipped: Open MPI's mpirun is not installed (openmpi-bin)"; exit 77; }
# The version text read whole first: `grep -q` may stop reading early, and with pipefail the
# SIGPIPE that ends mpirun would read as "not Open MPI" and skip the test.
version=$(mpirun --version 2>&1 || true)
[[ $version == *"Open MPI"* ]] || { echo "mpi_job_test: skipped: mpirun is not Open MPI's"; exit 77; }
# Four consecutive free ports, checked by binding each; the base moves on if one is taken.
base=$("$(dirname "$0")/../../scripts/free_ports.py" 4)
export DSGD_CLUSTER_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
# --oversubscribe: four ranks on fewer cores; --bind-to none: the ranks share the cores as the
# scheduler likes (mpirun would pin each to one core); root runs need --allow-run-as-root.
set +e
out=$(timeout 1100 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 4 \
  -x DSGD_CLUSTER_TOKEN -x OMP_WAIT_POLICY=passive \
  "$example" --num-ps 2 --base-port "$base" "$@" 2>&1)
status=$?
set -e
printf '%s\n' "$out"
[[ $status -eq 0 ]] || { echo "mpi_job_test: mpirun exited with status $status"; exit 1; }
if [[ -z ${OMP_NUM_THREADS:-} ]]; then
  shares=$(grep -c "4 tasks of the cluster share this host's" <<<"$out" || true)
  [[ $shares -eq 4 ]] || { echo "mpi_job_test: $shares of 4 ranks said they took their share of the cores"; exit 1; }
fi
echo "mpi_job_test: passed"
