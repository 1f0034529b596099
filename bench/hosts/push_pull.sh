#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Push + pull between two hosts: dsgd_bench_push_pull with its servers (every ps task and the
# raw-socket echo server) in network-namespace host h1 and its clients in host h2
# (scripts/netns_hosts.sh), unshaped and with both links shaped, so each dsgd figure is a ratio
# to raw sockets over the same link in the same run. A setting is a rate (10gbit: a token bucket),
# a delay (0.1ms: each packet leaving a host held that long, by netem or, without it, the
# harness's userspace forwarder; 0ms measures the forwarder alone), or both joined by "+". Between the hosts no
# shared memory is used; the variants are bench/push_pull's (dsgd_tcp_crc is what a user gets
# between hosts: payload CRCs on). Needs root and iproute2 (exit 77, skipped, without them).
#   bench/hosts/push_pull.sh [--rates "10gbit 0ms 10gbit+0.1ms"] [dsgd_bench_push_pull flags, e.g. --reps=9]
# Prints each setting's CSV rows and tables (bench/push_pull/table.py); the rows stay in
# build-bench/hosts_push_pull_<setting>.csv.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build="$root/build-bench"
rates="10gbit"
flags=()
while (($#)); do
  case $1 in
    --rates) rates=$2; shift 2 ;;
    *) flags+=("$1"); shift ;;
  esac
done
((${#flags[@]})) || flags=(--sizes=1048576,8388608 --reps=7 --latency-iters=1000)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_BENCH=ON \
  -DDSGD_BUILD_TESTS=OFF -DDSGD_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" --target dsgd_bench_push_pull >/dev/null
harness=$root/scripts/netns_hosts.sh
trap '"$harness" down bp >/dev/null 2>&1 || true' EXIT
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
for setting in unshaped $rates; do
  shape=()
  if [[ $setting != unshaped ]]; then
    for part in ${setting//+/ }; do
      case $part in
        *bit) shape+=(--rate "$part") ;;
        *s) shape+=(--delay "$part") ;;
        *) echo "push_pull.sh: setting $setting: $part is neither a rate (10gbit) nor a delay (0.1ms)" >&2; exit 2 ;;
      esac
    done
  fi
  "$harness" up bp 2 "${shape[@]}"
  csv=$build/hosts_push_pull_$setting.csv
  echo "== two hosts, $setting"
  "$harness" exec bp 2 "$build/bench/dsgd_bench_push_pull" "${flags[@]}" --ps-netns=bp-h1 \
    --ps-address="$("$harness" address bp 1)" >"$csv"
  python3 "$root/bench/push_pull/table.py" "$csv"
  [[ ! -f /tmp/dsgd-netns-bp/forwarder-1.pid ]] || echo "(delay by the userspace forwarder, scripts/netns_link.cpp)"
  "$harness" down bp
done
