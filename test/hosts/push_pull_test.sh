#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# dsgd_bench_push_pull's smoke run between two namespace hosts (scripts/netns_hosts.sh): its
# servers in h1, its clients in h2, so bench/hosts/push_pull.sh cannot rot. The benchmark checks
# every pulled value and echoed byte (exit 1 on a wrong one), never the speed.
#   push_pull_test.sh DSGD_BENCH_PUSH_PULL HARNESS
# Exits 77 (skipped) without root or iproute2.
set -euo pipefail
bench=$1 harness=$2
name=pp$(($$ % 100000))
. "$(dirname "$0")/../support/namespace_hosts.sh"
hosts_up 2
out=$("$harness" exec "$name" 2 timeout 120 "$bench" --smoke --ps-netns="$name-h1" \
  --ps-address="$("$harness" address "$name" 1)")
echo "$out"
# Every variant answered across the link: one row per variant and repetition.
rows=$(grep -c '^push_pull,dsgd_tcp_crc,' <<<"$out")
((rows == 2)) || { echo "push_pull_test.sh: expected 2 dsgd_tcp_crc rows, got $rows" >&2; exit 1; }
