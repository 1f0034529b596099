#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# The main job under a real Slurm: starts a one-node cluster from Debian's packages (munged,
# slurmctld, slurmd, all in a private directory, on free loopback ports, the node named
# localhost), submits examples/slurm/train.sbatch with sbatch --wait, and checks that the job
# and its step exit 0 and the chief reached the target accuracy.
#   slurm_job_test.sh DSGD_TRAIN SBATCH_SCRIPT [EPOCHS] [TARGET]
# Exits 77 (skipped) without root or without slurmctld, slurmd, munged and sbatch.
set -euo pipefail
program=$1 script=$2 epochs=${3:-10} target=${4:-0.88}
PATH=$PATH:/usr/sbin:/sbin
for tool in slurmctld slurmd munged sbatch srun scontrol; do
  command -v "$tool" >/dev/null || { echo "slurm_job_test: skipped: $tool is not installed (slurmctld, slurmd, munge)"; exit 77; }
done
[[ $(id -u) -eq 0 ]] || { echo "slurm_job_test: skipped: needs root to run slurmd"; exit 77; }

dir=$(mktemp -d /tmp/dsgd-slurm.XXXXXX)
pids=()
cleanup() {
  scancel --quiet -u root 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
free_ports() {
  python3 -c 'import socket
s=[socket.socket() for _ in range(3)]
[x.bind(("127.0.0.1",0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))'
}
read -r ctld_port slurmd_port base_port < <(free_ports)

# munge with its own key and socket, so the machine's own munge (if any) is untouched.
dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge.key"
mkdir -p "$dir/munge"
munged --key-file="$dir/munge.key" --socket="$dir/munge/munge.sock" --pid-file="$dir/munge/munged.pid" \
  --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" --force
pids+=("$(cat "$dir/munge/munged.pid")")

mkdir -p "$dir/state" "$dir/spool" "$dir/log"
cat >"$dir/slurm.conf" <<CONF
ClusterName=dsgdtest
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=main Nodes=localhost Default=YES MaxTime=60 State=UP OverSubscribe=YES
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld -D -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N localhost -f "$SLURM_CONF" >"$dir/log/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 60); do
  state=$(sinfo -h -N -o '%t' 2>/dev/null | head -1 || true)
  [[ $state == idle* ]] && break
  sleep 1
done
if [[ ${state:-} != idle* ]]; then
  echo "slurm_job_test: the node did not come up (state \"${state:-none}\")"
  tail -20 "$dir"/log/*
  exit 1
fi
echo "slurm_job_test: one-node Slurm up (slurmctld :$ctld_port, slurmd :$slurmd_port)"

status=0
# The roles must come from Slurm's variables alone (TF_CONFIG, MPI's would win).
unset TF_CONFIG OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE
DSGD_PROGRAM=$program DSGD_BASE_PORT=$base_port DSGD_EPOCHS=$epochs DSGD_TARGET=$target \
  timeout 1100 sbatch --wait --export=ALL --output="$dir/job.out" --chdir="$dir" "$script" || status=$?
echo "slurm_job_test: sbatch --wait exited with status $status"
grep -E "epoch|final test accuracy|error|failed" "$dir/job.out" | tail -8 || true
if ((status != 0)); then
  tail -30 "$dir/job.out"
  tail -20 "$dir"/log/slurmctld.log "$dir"/log/slurmd.log
  exit 1
fi
grep -q "final test accuracy" "$dir/job.out" || { echo "slurm_job_test: the chief printed no final accuracy"; exit 1; }
exit 0
