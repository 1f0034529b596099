#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Scaling with the number of workers (docs/benchmarks.md, "Scaling"): the Fashion-MNIST MLP of
# dsgd-train on 1 ps and N = 1, 2, 4 worker processes (dsgd-launch, one OpenMP thread
# each), sync and async, --reps runs of each interleaved. Prints per rule and N the median
# examples/s (all workers together, from the chief's last epoch line, start-up excluded,
# evaluation included) and the scaling efficiency as Horovod and BytePS define it:
# examples/s with N workers / (N x examples/s with 1 worker).
#   bench/scaling/run.sh [--reps R] [--epochs E] [--workers "1 2 4"]
# BUILD=dir uses an existing build (with targets dsgd-train and dsgd-launch); default
# build-compare, configured Release here if needed. The runs go to BUILD/scaling/scaling.csv
# and the plot to BUILD/scaling/scaling.png (PNG=file elsewhere; matplotlib from
# bench/compare/.venv, bench/python_env.sh).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
reps=3
epochs=2
workers="1 2 4"
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    *) echo "usage: bench/scaling/run.sh [--reps R] [--epochs E] [--workers \"1 2 4\"]" >&2; exit 2 ;;
  esac
done
build=${BUILD:-$root/build-compare}
if [ ! -x "$build/tools/dsgd-train" ] || [ ! -x "$build/tools/dsgd-launch" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target dsgd-train dsgd-launch >/dev/null
out="$build/scaling"
mkdir -p "$out"
rows="$out/scaling.csv"
echo "rule,workers,rep,examples_per_s" >"$rows"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=passive
rep=0
while [ $rep -lt "$reps" ]; do
  for rule in sync async; do
    for n in $workers; do
      log="$out/$rule-$n-$rep.log"
      lr=""
      [ "$rule" = async ] && lr="--lr 0.01 --decay 0.8"
      # shellcheck disable=SC2086
      "$build/tools/dsgd-launch" --ps 1 --workers "$n" -- "$build/tools/dsgd-train" --rule "$rule" \
        --epochs "$epochs" --target 0 $lr >"$log" 2>&1 || { echo "run failed: $log" >&2; exit 1; }
      eps=$(grep '^\[worker:0\] epoch' "$log" | tail -1 | sed 's/.* \([0-9.]*\) examples\/s.*/\1/')
      echo "$rule,$n,$rep,$eps" | tee -a "$rows"
    done
  done
  rep=$((rep + 1))
done
. "$root/bench/python_env.sh"
py=$(bench_python matplotlib)
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
"$py" "$root/bench/scaling/plot.py" --csv "$rows" --png "${PNG:-$out/scaling.png}" --cores "$cores"
python3 - "$rows" <<'PY'
import csv, statistics, sys
runs = {}
for r in csv.DictReader(open(sys.argv[1])):
    runs.setdefault((r["rule"], int(r["workers"])), []).append(float(r["examples_per_s"]))
print("\n| rule | workers | examples/s (median) | scaling efficiency |")
print("|---|---:|---:|---:|")
for rule in ("sync", "async"):
    one = statistics.median(runs[(rule, 1)]) if (rule, 1) in runs else None
    for (r, n), v in sorted(runs.items()):
        if r != rule:
            continue
        m = statistics.median(v)
        eff = f"{m / (n * one):.2f}" if one else "-"
        print(f"| {rule} | {n} | {m:.0f} | {eff} |")
PY
