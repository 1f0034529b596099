#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Local SGD against twice one process alone (docs/benchmarks.md, "Local SGD against one process
# alone"): examples/03_cluster's MLP on 1 ps + 2 worker processes with `--rule local
# --local-steps K` for several K, next to sync, and two baselines measured in the same
# repetition:
#
#   solo       dsgd_bench_step_profile --solo: forward, backward and the momentum update in one
#              process, nothing else (the rate issue 15 asks two workers to double)
#   alone      03_cluster itself on 1 ps + 1 worker, averaging once a pass over the data: the
#              same training loop (batch sampling, schedule, evaluations) in one process, the ps
#              idle but for one exchange an epoch
#   sync       1 ps + 2 workers, --rule sync (one exchange a step)
#   local_K    1 ps + 2 workers, --rule local --local-steps K
#
# Both model sizes (784-256-128-10, 10 epochs; 784-1024-1024-10, 4 epochs), systems interleaved
# within each repetition. table.py prints per model and system the medians over the repetitions:
# examples/s over the whole run and with the chief's evaluations taken out, their ratio to twice
# each baseline, the final test accuracy and the first epoch at 0.88.
#
#   bench/local_sgd/run.sh [--reps N] [--ks "8 16 32"] [--models "small big"] [--out DIR]
#
#   --reps N      repetitions (default 3)
#   --ks LIST     local steps between averages (default "8 16 32")
#   --models LIST small, big or both (default "small big")
#   --out DIR     logs, CSV files and table.md (default BUILD/local_sgd)
#
# BUILD=DIR uses an existing build directory configured with -DDSGD_BUILD_BENCH=ON (Google
# Benchmark installed); by default build-compare is configured Release with the benchmarks.
# Every process runs one OpenMP/OpenBLAS thread: the tasks share the machine's cores.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
reps=3
ks="8 16 32"
models="small big"
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --ks) ks=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "run.sh: unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done
for m in $models; do
  case "$m" in
    small | big) ;;
    *) echo "run.sh: --models: unknown model $m (expected small or big)" >&2; exit 2 ;;
  esac
done

build=${BUILD:-"$root/build-compare"}
if [ -z "${BUILD:-}" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_TESTS=OFF \
    -DDSGD_BUILD_BENCH=ON >/dev/null
fi
cmake --build "$build" --target 03_cluster dsgd-launch dsgd_bench_step_profile >/dev/null
out=${out:-"$build/local_sgd"}
mkdir -p "$out"
rm -f "$out"/*.csv "$out"/*.log

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=passive
launch="$build/tools/dsgd-launch"
program="$build/examples/03_cluster"
profile="$build/bench/dsgd_bench_step_profile"

# cluster NAME WORKERS EPOCHS ARGS...: one 03_cluster run; the chief's evaluations go to NAME.csv.
cluster() {
  name=$1 workers=$2 epochs=$3
  shift 3
  # A run that ends below its target still leaves its CSV; every run is bounded by --timeout.
  "$launch" --ps 1 --workers "$workers" --timeout 900 -- "$program" --epochs "$epochs" \
    --csv "$out/$name.csv" "$@" >"$out/$name.log" 2>&1 || echo "   (exit status $?; see $out/$name.log)"
  grep -E "final test accuracy" "$out/$name.log" | sed "s/^/   $name: /"
}

rep=1
while [ "$rep" -le "$reps" ]; do
  echo "== repetition $rep of $reps"
  for m in $models; do
    if [ "$m" = big ]; then
      hidden="--hidden 1024,1024" epochs=4 solo_steps=150
    else
      hidden="" epochs=10 solo_steps=400
    fi
    # shellcheck disable=SC2086 # $hidden is empty or two words
    "$profile" --solo --steps "$solo_steps" $hidden >"$out/${m}_solo_r$rep.log" 2>&1
    grep '^profile,' "$out/${m}_solo_r$rep.log" | sed "s/^/   ${m}_solo: /"
    # One worker's pass over the whole training set is 938 batches of 64: one average a pass.
    # shellcheck disable=SC2086
    cluster "${m}_alone_r$rep" 1 "$epochs" $hidden --rule local --local-steps 938
    # shellcheck disable=SC2086
    cluster "${m}_sync_r$rep" 2 "$epochs" $hidden --rule sync
    for k in $ks; do
      # shellcheck disable=SC2086
      cluster "${m}_local_${k}_r$rep" 2 "$epochs" $hidden --rule local --local-steps "$k"
    done
  done
  rep=$((rep + 1))
done

python3 "$here/table.py" "$out" | tee "$out/table.md"
