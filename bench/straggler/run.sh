#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# The straggler scenario of docs/convergence.md: the Fashion-MNIST MLP of dsgd-train
# on 1 ps + 3 worker processes (dsgd-launch), worker:2 three times slower than its compute,
# under sync, sync with one backup worker, async and bounded_staleness with S = 2 (SSP). Each run's
# chief writes one CSV line per epoch; plot.py then prints the table (steps/s, time to the
# target accuracy, final accuracy) and draws test accuracy against wall time.
#
#   bench/straggler/run.sh [--epochs N] [--out DIR] [--png FILE] [--verify] [--only NAME...]
#
#   --epochs N   epochs of the schedule per run (default 12)
#   --out DIR    logs, CSV files and summary.csv (default build-straggler/straggler)
#   --png FILE   the plot (default DIR/straggler.png; docs use docs/img/straggler.png)
#   --verify     also run async and SSP without a straggler on 2 workers (1 and 2 ps)
#   --only NAME  run only these scenarios (sync, backup, async, ssp), then plot all found
#
# BUILD=dir uses an existing build directory instead of configuring build-straggler.
# Every process runs one OpenMP/OpenBLAS thread: the tasks share the machine's cores.
# matplotlib comes from bench/compare/.venv (bench/python_env.sh makes it when missing).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
epochs=12
out=""
png=""
verify=0
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --epochs) epochs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --png) png=$2; shift 2 ;;
    --verify) verify=1; shift ;;
    --only) only="$only $2"; shift 2 ;;
    *) echo "run.sh: unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done

build=${BUILD:-"$root/build-straggler"}
if [ -z "${BUILD:-}" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target dsgd-train dsgd-launch
out=${out:-"$build/straggler"}
png=${png:-"$out/straggler.png"}
mkdir -p "$out"

. "$root/bench/python_env.sh"
py=$(bench_python matplotlib)

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=passive
launch="$build/tools/dsgd-launch"
program="$build/tools/dsgd-train"

# run NAME PS WORKERS ARGS...: one cluster run; the chief's evaluations go to NAME.csv.
run() {
  name=$1 ps=$2 workers=$3
  shift 3
  echo "== $name: dsgd-launch --ps $ps --workers $workers -- dsgd-train $*"
  # A run that ends below the target still leaves its CSV (dsgd-train exits 1 then).
  "$launch" --ps "$ps" --workers "$workers" --timeout 1800 -- "$program" --epochs "$epochs" \
    --csv "$out/$name.csv" "$@" >"$out/$name.log" 2>&1 || echo "   (exit status $?; see $out/$name.log)"
  grep -E "final test accuracy|straggler|done:" "$out/$name.log" | sed 's/^/   /'
}

wanted() { [ -z "$only" ] || case " $only " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

slow="--slowdown worker:2=3"
# Async and SSP apply every worker's batch as its own step: 3x the updates of sync per epoch,
# so a smaller rate, decayed more gently per epoch.
wanted sync && run sync 1 3 --rule sync $slow
wanted backup && run backup 1 3 --rule sync --backup 1 $slow
wanted async && run async 1 3 --rule async --lr 0.01 --decay 0.8 $slow
wanted ssp && run ssp 1 3 --rule ssp --lr 0.01 --decay 0.8 $slow
if [ "$verify" = 1 ]; then
  run verify_async_1ps 1 2 --rule async --lr 0.01 --decay 0.8
  run verify_ssp_2ps 2 2 --rule ssp --lr 0.01 --decay 0.8
fi

"$py" "$root/bench/straggler/plot.py" --dir "$out" --png "$png" --target 0.88
