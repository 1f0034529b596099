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
#   main_job_test.sh DSGD_TRAIN DSGD_LAUNCH HARNESS [dsgd-train options...]
# Exits 77 (skipped) without root or iproute2, 0 when every task exits 0 (the chief only when it
# reached the --target accuracy), 1 otherwise.
set -euo pipefail
example=$1 launch=$2 harness=$3
shift 3
name=mj$(($$ % 100000))
. "$(dirname "$0")/../support/namespace_hosts.sh"
hosts_up 4

launch_main_job "$launch" 1000 "$example" "$@"
failed=0
wait_main_job main_job_test
grep -h "final test accuracy\|epoch\|starting" "$logs/h3" | tail -5
if grep -qi "shared memory" "$logs"/*; then
  echo "main_job_test: a task reported shared memory between namespaces:" && grep -hi "shared memory" "$logs"/*
  failed=1
fi
exit "$failed"
