#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Entry point of a dsgd pod in a StatefulSet (deploy/kubernetes/statefulset.yaml): derives
# TF_CONFIG from the pod's name and the job's sizes, then runs the program.
#   tf_config_from_pod.sh PROGRAM [ARGS...]   # exports TF_CONFIG, then runs PROGRAM
#   tf_config_from_pod.sh --print             # prints TF_CONFIG and exits
#
# Reads (the manifest sets them):
#   POD_NAME            the pod's name, "<DSGD_NAME>-<job>-<ordinal>" (fieldRef metadata.name)
#   POD_NAMESPACE       its namespace (fieldRef metadata.namespace)
#   DSGD_NAME           the job's name; StatefulSet and headless Service "<DSGD_NAME>-<job>"
#   DSGD_JOB            this StatefulSet's job: ps or worker
#   DSGD_PS_REPLICAS, DSGD_WORKER_REPLICAS   the tasks of each job in the cluster spec: the
#                       replicas of both StatefulSets; with DSGD_MIN_REPLICAS, the worker slots
#                       (MAX), the worker StatefulSet scaled anywhere from MIN to MAX
#   DSGD_MIN_REPLICAS   an elastic job (docs/reliability.md, "Elastic workers"): the least
#                       workers a sync step needs; passed on to the program, which gives it to its
#                       ps (dsgd-train: serving_options::min_replicas)
#   DSGD_PORT           the port every task listens on (default 2222)
#   DSGD_CLUSTER_DOMAIN the cluster's DNS domain (default cluster.local)
#   DSGD_HOLD_AFTER_EXIT  1: after PROGRAM exits 0, sleep instead of exiting, since Kubernetes
#                       restarts every StatefulSet pod that exits and would train again
# Task i of job J is "<DSGD_NAME>-J-i.<DSGD_NAME>-J.<namespace>.svc.<domain>:<port>", the DNS
# name the headless Service gives the pod, so every pod derives the same cluster.
set -eu

fail() {
  echo "tf_config_from_pod.sh: $*" >&2
  exit 2
}

: "${POD_NAME:?POD_NAME is not set (fieldRef metadata.name)}"
: "${POD_NAMESPACE:?POD_NAMESPACE is not set (fieldRef metadata.namespace)}"
: "${DSGD_NAME:?DSGD_NAME is not set}"
: "${DSGD_JOB:?DSGD_JOB is not set (ps or worker)}"
: "${DSGD_PS_REPLICAS:?DSGD_PS_REPLICAS is not set}"
: "${DSGD_WORKER_REPLICAS:?DSGD_WORKER_REPLICAS is not set}"
port=${DSGD_PORT:-2222}
domain=${DSGD_CLUSTER_DOMAIN:-cluster.local}

case $DSGD_JOB in ps | worker) ;; *) fail "DSGD_JOB=$DSGD_JOB: expected ps or worker" ;; esac
for n in "$DSGD_PS_REPLICAS" "$DSGD_WORKER_REPLICAS" "$port"; do
  case $n in '' | *[!0-9]*) fail "\"$n\" is not a non-negative integer (DSGD_PS_REPLICAS, DSGD_WORKER_REPLICAS, DSGD_PORT)" ;; esac
done
prefix="$DSGD_NAME-$DSGD_JOB-"
case $POD_NAME in "$prefix"*) ;; *) fail "POD_NAME=$POD_NAME does not start with $prefix" ;; esac
index=${POD_NAME#"$prefix"}
case $index in '' | *[!0-9]*) fail "POD_NAME=$POD_NAME: no ordinal after $prefix" ;; esac
if [ "$DSGD_JOB" = worker ]; then slots=$DSGD_WORKER_REPLICAS; else slots=$DSGD_PS_REPLICAS; fi
# A pod beyond the spec's tasks (a StatefulSet scaled past MAX) is refused by name, not left to
# fail its registration.
[ "$index" -lt "$slots" ] || fail "POD_NAME=$POD_NAME: ordinal $index is beyond the $slots $DSGD_JOB tasks of the cluster spec (DSGD_$(echo "$DSGD_JOB" | tr a-z A-Z)_REPLICAS, the job's MAX): scale the StatefulSet to at most $slots"
if [ -n "${DSGD_MIN_REPLICAS:-}" ]; then
  case $DSGD_MIN_REPLICAS in '' | *[!0-9]*) fail "DSGD_MIN_REPLICAS=$DSGD_MIN_REPLICAS: expected a whole number" ;; esac
  [ "$DSGD_MIN_REPLICAS" -ge 1 ] && [ "$DSGD_MIN_REPLICAS" -le "$DSGD_WORKER_REPLICAS" ] ||
    fail "DSGD_MIN_REPLICAS=$DSGD_MIN_REPLICAS: expected 1 to DSGD_WORKER_REPLICAS=$DSGD_WORKER_REPLICAS (MIN to MAX)"
  export DSGD_MIN_REPLICAS
fi

addresses() {  # job replicas -> "a","b",...
  i=0 out=""
  while [ "$i" -lt "$2" ]; do
    out="$out${out:+,}\"$DSGD_NAME-$1-$i.$DSGD_NAME-$1.$POD_NAMESPACE.svc.$domain:$port\""
    i=$((i + 1))
  done
  printf '%s' "$out"
}

cluster="\"worker\":[$(addresses worker "$DSGD_WORKER_REPLICAS")]"
if [ "$DSGD_PS_REPLICAS" -gt 0 ]; then cluster="\"ps\":[$(addresses ps "$DSGD_PS_REPLICAS")],$cluster"; fi
TF_CONFIG="{\"cluster\":{$cluster},\"task\":{\"type\":\"$DSGD_JOB\",\"index\":$index},\"environment\":\"cloud\"}"
export TF_CONFIG

if [ "${1:-}" = --print ]; then
  printf '%s\n' "$TF_CONFIG"
  exit 0
fi
[ $# -gt 0 ] || fail "no program given"
if [ "${DSGD_HOLD_AFTER_EXIT:-0}" = 1 ]; then
  "$@" || exit $?
  echo "tf_config_from_pod.sh: $POD_NAME finished; holding (delete the StatefulSets to end the job)"
  exec sleep infinity
fi
exec "$@"
