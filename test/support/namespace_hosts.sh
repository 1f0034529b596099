# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Sourced by the drivers in test/hosts/ that run a job across namespace hosts (the harness,
# scripts/netns_hosts.sh), after setting $harness to it and $name to the run's name:
#  - hosts_up COUNT brings up COUNT hosts, h1 to hCOUNT, or exits with the harness's status
#    (77, skipped, without root or iproute2); it makes $logs, a directory for the hosts' output,
#    and $pids, and on exit kills what is left of $pids, takes the hosts down and removes $logs;
#  - launch_main_job LAUNCH TIMEOUT PROGRAM [options...] starts the main job (2 ps + 2 workers),
#    one dsgd-launch on each of the four hosts;
#  - wait_main_job PREFIX waits for those four launchers and says how each ended.
# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154  # $harness and $name are the driver's; it reads $failed

hosts_up() {
  local rc=0
  "$harness" up "$name" "$1" || rc=$?
  ((rc == 0)) || exit "$rc"
  logs=$(mktemp -d)
  pids=()
  trap stop_hosts EXIT
}

stop_hosts() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$harness" down "$name"
  rm -rf "$logs"
}

# The main job's tasks: task k on host k+1 (the launchers' k mod 4 rule).
main_job_tasks=("ps 0" "ps 1" "worker 0" "worker 1")

# Each host runs its own dsgd-launch (--nnodes 4 --node-rank K --hosts h1,h2,h3,h4), which starts
# that host's share of the job with the cluster every launcher derives alike, all with one
# cluster token; host k's output goes to $logs/hk, its launcher's pid to $pids.
# OMP_NUM_THREADS=1: the namespace hosts share this machine's cores.
launch_main_job() {
  local launch=$1 timeout=$2 program=$3 token k
  shift 3
  token=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
  for k in 1 2 3 4; do
    "$harness" exec "$name" "$k" env -u TF_CONFIG OMP_NUM_THREADS=1 DSGD_CLUSTER_TOKEN="$token" "$launch" \
      --nnodes 4 --node-rank $((k - 1)) --hosts h1,h2,h3,h4 --port-base 2222 --ps 2 --workers 2 \
      --timeout "$timeout" -- "$program" "$@" >"$logs/h$k" 2>&1 &
    pids+=($!)
  done
}

# Prints "PREFIX: TASK on hK (ADDRESS) exited with status S" for each host, with the last lines
# of a failed one's output, and sets failed=1 when one did not exit 0.
wait_main_job() {
  local k status
  for k in 1 2 3 4; do
    status=0
    wait "${pids[k - 1]}" || status=$?
    echo "$1: ${main_job_tasks[k - 1]/ /:} on h$k ($("$harness" address "$name" "$k")) exited with status $status"
    if ((status != 0)); then
      failed=1
      sed "s/^/  [h$k] /" "$logs/h$k" | tail -20
    fi
  done
  pids=()
}
