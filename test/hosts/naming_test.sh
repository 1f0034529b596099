#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Binding and naming as clusters need, across two namespace hosts (scripts/netns_hosts.sh):
#  1. the ps's cluster-spec name, "late", resolves nowhere when the job starts (a pod's DNS name
#     before the pod exists); the ps listens on any address (--listen '*'), and the worker keeps
#     retrying the name until the harness adds it to the worker host's /etc/hosts 3 s later;
#     then the job trains and both exit 0;
#  2. a name that never resolves: the worker (without recovery) gives up at its startup deadline
#     with an error naming the task, the name and the resolver's answer.
# The namespaces' resolver is loopback (nothing listens), so no DNS query leaves them.
#   naming_test.sh DSGD_TRAIN HARNESS
# Exits 77 (skipped) without root or iproute2.
set -euo pipefail
example=$1 harness=$2
name=nm$(($$ % 100000))
. "$(dirname "$0")/../support/namespace_hosts.sh"
hosts_up 2
failed=0
run() {  # host, job, index, cluster, options...
  local host=$1 job=$2 index=$3 cluster=$4
  shift 4
  "$harness" exec "$name" "$host" env DSGD_CLUSTER_TOKEN=naming OMP_NUM_THREADS=1 \
    TF_CONFIG="{\"cluster\": $cluster, \"task\": {\"type\": \"$job\", \"index\": $index}}" \
    timeout 300 "$example" --model softmax --rule sync --epochs 1 "$@"
}

# 1. A name that resolves only later.
cluster='{"ps": ["late:2222"], "worker": ["h2:2223"]}'
run 1 ps 0 "$cluster" --listen '*' >"$logs/ps" 2>&1 &
ps=$!
start=$(date +%s)
run 2 worker 0 "$cluster" --startup-timeout 60 >"$logs/worker" 2>&1 &
worker=$!
sleep 3
echo "$("$harness" address "$name" 1) late" >>"/etc/netns/$name-h2/hosts"  # in place: the namespace sees it
status=0
wait "$worker" || status=$?
wait "$ps" || status=$((status + $?))
took=$(($(date +%s) - start))
if ((status != 0)); then
  echo "naming_test: the job with a late name failed"; tail -5 "$logs/worker" "$logs/ps"; failed=1
elif ((took < 3)); then
  echo "naming_test: the worker finished in ${took} s, before the name existed"; failed=1
else
  echo "naming_test: a name that resolved 3 s late: the worker retried and the job finished (${took} s)"
  grep -h "final test accuracy" "$logs/worker"
fi

# 2. A name that never resolves.
cluster='{"ps": ["never-there:2222"], "worker": ["h2:2223"]}'
status=0
# Without recovery (--recovery-timeout 0), so the startup deadline is the whole wait: with it,
# the session would be re-created for the recovery deadline as well (300 s by default;
# recovery_deadline_test checks that bound), since a ps may also come up late.
run 2 worker 0 "$cluster" --startup-timeout 3 --recovery-timeout 0 >"$logs/never" 2>&1 || status=$?
if ((status == 0)); then
  echo "naming_test: a worker whose ps never resolves exited 0"; failed=1
elif ! grep -q "could not reach ps:0 (never-there:2222) within 3000 ms (last error: Host not found" "$logs/never"; then
  echo "naming_test: the error does not name the task, the name and the resolver's answer:"; cat "$logs/never"; failed=1
else
  echo "naming_test: $(grep -o 'could not reach.*' "$logs/never" | head -1)"
fi
exit "$failed"
