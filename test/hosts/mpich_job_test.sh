#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# The main job under MPICH: `mpiexec.mpich -n 4` (Hydra, Debian's mpich) starts four copies of
# dsgd-train, which take their roles from PMI_RANK and PMI_SIZE (ranks 0-1 the ps tasks, 2-3 the
# workers, rank r on port BASE + r of its host in DSGD_HOSTS, here localhost four times) and
# train to the target. Each rank must say that its role came from MPICH with the hosts of
# DSGD_HOSTS, and the chief must end at or above the target (dsgd-train exits 1 below it).
# The run is short on purpose (CMake passes --epochs 1 --target 0.80): what this test adds is
# the launcher; the Open MPI test (mpi_job_test.sh) already trains the full 10 epochs to 0.88.
#   mpich_job_test.sh DSGD_TRAIN [dsgd-train options...]
# Exits 77 (skipped) when MPICH's mpiexec.mpich is not installed (Debian's mpich).
set -euo pipefail
example=$1
shift
command -v mpiexec.mpich >/dev/null || {
  echo "mpich_job_test: skipped: MPICH's mpiexec.mpich is not installed (Debian's mpich)"
  exit 77
}
# The version text read whole first: grep -q stopping early would fail the pipe (pipefail).
version=$(timeout 30 mpiexec.mpich --version 2>&1 || true)
grep -q "HYDRA" <<<"$version" || {
  echo "mpich_job_test: skipped: mpiexec.mpich is not MPICH's Hydra"
  exit 77
}
# Four consecutive free ports, checked by binding each; the base moves on if one is taken.
base=$("$(dirname "$0")/../../scripts/free_ports.py" 4)
# Roles from MPICH alone: a TF_CONFIG, Open MPI's or Slurm's variables inherited from the caller
# would come first (TF_CONFIG, Open MPI) or confuse the check.
unset TF_CONFIG OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE SLURM_PROCID SLURM_NTASKS SLURM_NPROCS
DSGD_CLUSTER_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
export DSGD_CLUSTER_TOKEN
export DSGD_HOSTS=localhost,localhost,localhost,localhost
export OMP_WAIT_POLICY=passive
# -launcher fork: every rank on this host, started without ssh; -hosts localhost: no host file.
# -genvlist passes the named variables to every rank (by name: the token stays off the command
# line), as a run across hosts would; forked here, the ranks inherit this environment anyway.
set +e
start=$(date +%s)
out=$(timeout 240 mpiexec.mpich -launcher fork -hosts localhost -n 4 \
  -genvlist DSGD_CLUSTER_TOKEN,DSGD_HOSTS,OMP_WAIT_POLICY \
  "$example" --num-ps 2 --base-port "$base" "$@" 2>&1)
status=$?
set -e
printf '%s\n' "$out"
echo "mpich_job_test: mpiexec.mpich ran $(($(date +%s) - start)) s"
[[ $status -eq 0 ]] || { echo "mpich_job_test: mpiexec.mpich exited with status $status"; exit 1; }
failed=0
for rank in 0 1 2 3; do
  if [[ $rank -lt 2 ]]; then task="ps:$rank"; else task="worker:$((rank - 2))"; fi
  want="$task: role from MPICH (PMI_RANK=$rank, size 4, num_ps 2, hosts from DSGD_HOSTS), at localhost:$((base + rank))"
  grep -qF -- "$want" <<<"$out" || { echo "mpich_job_test: no line '$want'"; failed=1; }
done
grep -q "final test accuracy " <<<"$out" || { echo "mpich_job_test: the chief printed no final test accuracy"; failed=1; }
if [[ -z ${OMP_NUM_THREADS:-} ]]; then
  shares=$(grep -c "4 tasks of the cluster share this host's" <<<"$out" || true)
  [[ $shares -eq 4 ]] || { echo "mpich_job_test: $shares of 4 ranks said they took their share of the cores"; failed=1; }
fi
[[ $failed -eq 0 ]] || exit 1
echo "mpich_job_test: passed"
