#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# The main job (2 ps + 2 workers, the Fashion-MNIST MLP, sync) across four hosts: each task in a
# network namespace of its own (scripts/netns_hosts.sh), joined by veth pairs to a bridge, so the
# tasks reach each other only across the links, with no shared memory and with payload CRCs, as
# between machines. Each host runs its own dsgd-launch (--nnodes 4 --node-rank K --hosts
# h1,h2,h3,h4), which starts that host's share of the job with the cluster every launcher derives
# alike; the names resolve through the /etc/hosts the harness gives each namespace, so binding
# and dialling go through the resolver too.
#   main_job_test.sh 03_CLUSTER DSGD_LAUNCH HARNESS [03_cluster options...]
# Exits 77 (skipped) without root or iproute2, 0 when every task exits 0 (the chief only when it
# reached the --target accuracy), 1 otherwise.
set -euo pipefail
example=$1 launch=$2 harness=$3
shift 3
name=mj$(($$ % 100000))
rc=0
"$harness" up "$name" 4 || rc=$?
((rc == 0)) || exit "$rc"
logs=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$harness" down "$name"
  rm -rf "$logs"
}
trap cleanup EXIT

tasks=("ps 0" "ps 1" "worker 0" "worker 1")  # task k on host k+1: the launchers' k mod 4 rule
token=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
for k in 1 2 3 4; do
  # OMP_NUM_THREADS=1: the namespace hosts share this machine's cores.
  "$harness" exec "$name" "$k" env -u TF_CONFIG OMP_NUM_THREADS=1 DSGD_CLUSTER_TOKEN="$token" "$launch" --nnodes 4 --node-rank $((k - 1)) \
    --hosts h1,h2,h3,h4 --port-base 2222 --ps 2 --workers 2 --timeout 1000 -- "$example" "$@" >"$logs/h$k" 2>&1 &
  pids+=($!)
done
failed=0
for k in 1 2 3 4; do
  status=0
  wait "${pids[k - 1]}" || status=$?
  echo "main_job_test: ${tasks[k - 1]/ /:} on h$k ($("$harness" address "$name" "$k")) exited with status $status"
  if ((status != 0)); then
    failed=1
    sed "s/^/  [h$k] /" "$logs/h$k" | tail -20
  fi
done
pids=()
grep -h "final test accuracy\|epoch\|starting" "$logs/h3" | tail -5
if grep -qi "shared memory" "$logs"/*; then
  echo "main_job_test: a task reported shared memory between namespaces:" && grep -hi "shared memory" "$logs"/*
  failed=1
fi
exit "$failed"
