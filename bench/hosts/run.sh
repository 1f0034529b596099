#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# The main job (2 ps + 2 workers, the Fashion-MNIST MLP, sync) on one host and across four
# network-namespace hosts (scripts/netns_hosts.sh; one dsgd-launch per host), unshaped and with
# each host's link shaped, in one run: examples/s per setting (median of the
# repetitions, settings interleaved so that a noisy neighbour hits them alike) and each as a
# fraction of the one-host figure. Needs root and iproute2 for the namespace settings.
# A setting is a rate (10gbit: a token bucket), a delay (0.1ms: each packet leaving a host held
# that long, by netem or, without it, the harness's userspace forwarder; 0ms measures the
# forwarder alone), or both joined by "+".
#   bench/hosts/run.sh [--reps N] [--epochs N] [--rates "10gbit 1gbit 0ms 10gbit+0.1ms"]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build="$root/build-bench"
reps=3 epochs=2 rates="10gbit 1gbit"
while (($#)); do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    *) echo "usage: bench/hosts/run.sh [--reps N] [--epochs N] [--rates \"R1 R2\"]" >&2; exit 2 ;;
  esac
done
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_BENCH=ON \
  -DDSGD_BUILD_TESTS=OFF -DDSGD_BUILD_EXAMPLES=ON >/dev/null
cmake --build "$build" --target dsgd-train dsgd-launch >/dev/null
example=$build/tools/dsgd-train launch=$build/tools/dsgd-launch harness=$root/scripts/netns_hosts.sh
out=$(mktemp -d)
trap 'rm -rf "$out"; "$harness" down bh >/dev/null 2>&1 || true' EXIT
args=(--rule sync --epochs "$epochs" --target 0)
# The namespace "hosts" share this machine's cores: every setting runs one compute thread per
# task, as the one-host launcher picks for 4 tasks on 2 cores (a launcher per namespace would
# otherwise give its single task every core, and the four would oversubscribe them).
export OMP_NUM_THREADS=1

# examples/s of a chief's log: global steps x 2 workers x batch 64 / seconds.
rate_of() { sed -n 's/.* \([0-9]*\) global steps in \([0-9.]*\) s.*/\1 \2/p' "$1" | awk '{printf "%.0f\n", $1 * 128 / $2}'; }

one_host() {
  DSGD_CLUSTER_TOKEN=bench "$launch" --ps 2 --workers 2 --timeout 900 -- "$example" "${args[@]}" >"$1" 2>&1
}
hosts() {  # setting ("" for none), log
  local shape=() part
  for part in ${1//+/ }; do
    case $part in
      *bit) shape+=(--rate "$part") ;;
      *s) shape+=(--delay "$part") ;;
      *) echo "run.sh: setting $1: $part is neither a rate (10gbit) nor a delay (0.1ms)" >&2; exit 2 ;;
    esac
  done
  "$harness" up bh 4 "${shape[@]}"
  local pids=()
  for k in 1 2 3 4; do
    "$harness" exec bh "$k" env -u TF_CONFIG DSGD_CLUSTER_TOKEN=bench "$launch" --nnodes 4 --node-rank $((k - 1)) \
      --hosts h1,h2,h3,h4 --port-base 2222 --ps 2 --workers 2 --timeout 900 -- "$example" "${args[@]}" >"$2.h$k" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  cp "$2.h3" "$2"  # h3 runs worker:0, the chief
  "$harness" down bh
}

settings=("one host" "4 hosts")
for r in $rates; do settings+=("4 hosts at $r"); done
for ((rep = 0; rep <= reps; ++rep)); do
  if ((rep == 0)); then echo "setting,rep,examples_per_s"; continue; fi
  for s in "${settings[@]}"; do
    log="$out/$rep-${s// /_}"
    case $s in
      "one host") one_host "$log" ;;
      "4 hosts") hosts "" "$log" ;;
      *) hosts "${s##* at }" "$log" ;;
    esac
    echo "$s,$rep,$(rate_of "$log")"
  done
done | tee "$out/rows.csv"
echo
python3 - "$out/rows.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
med = {}
for r in rows:
    med.setdefault(r["setting"], []).append(float(r["examples_per_s"]))
base = statistics.median(med["one host"])
print("| setting | examples/s (median) | / one host |\n|---|---:|---:|")
for s, v in med.items():
    m = statistics.median(v)
    print(f"| {s} | {m:,.0f} | {m / base:.2f}x |")
PY
