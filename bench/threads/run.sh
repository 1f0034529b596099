#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# The thread budget (docs/benchmarks.md, "The main job's default threads"): the README's main
# job (dsgd-train, the MLP, sync, 2 ps + 2 workers under dsgd-launch) with its default
# settings, where the launcher gives every task cores / tasks OpenMP and BLAS threads, against
# every hand setting of OMP_NUM_THREADS and OPENBLAS_NUM_THREADS from 1 to the core count,
# interleaved in each repetition. table.py prints each setting's median examples/s (with the
# chief's evaluations taken out) and its ratio to the best.
#
#   bench/threads/run.sh [--reps N] [--epochs E] [--out DIR]
#
#   --reps N     repetitions (default 3)
#   --epochs E   epochs of each run (default 10, the main job's)
#   --out DIR    logs, CSV files and table.md (default BUILD/threads)
#
# BUILD=DIR uses an existing build directory; by default build-compare is configured Release.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
reps=3
epochs=10
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "run.sh: unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done

"$root/scripts/setup.sh"
build=${BUILD:-"$root/build-compare"}
if [ -z "${BUILD:-}" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target dsgd-train dsgd-launch >/dev/null
out=${out:-"$build/threads"}
mkdir -p "$out"
rm -f "$out"/*.csv "$out"/*.log
unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS MKL_NUM_THREADS
export OMP_WAIT_POLICY=passive  # as scripts/main.sh runs the job
cores=$(nproc)

# job NAME [VAR=VALUE...]: the main job with the environment's additions; the chief's
# evaluations go to NAME.csv.
job() {
  name=$1
  shift
  env "$@" "$build/tools/dsgd-launch" --ps 2 --workers 2 --timeout 900 -- "$build/tools/dsgd-train" \
    --rule sync --epochs "$epochs" --csv "$out/$name.csv" >"$out/$name.log" 2>&1 ||
    echo "   (exit status $?; see $out/$name.log)"
  grep -m1 "tasks share this host" "$out/$name.log" | sed "s/^/   $name: /" || true
  tail -1 "$out/$name.csv" 2>/dev/null | sed "s/^/   $name: last evaluation: /"
}

settings="default"
t=1
while [ "$t" -le "$cores" ]; do
  settings="$settings $t"
  t=$((t * 2))
done
rep=1
while [ "$rep" -le "$reps" ]; do
  echo "== repetition $rep of $reps"
  # Each repetition starts one setting later, so that no setting always runs first.
  n=$(echo $settings | wc -w)
  first=$(((rep - 1) % n))
  order="" i=0
  for setting in $settings $settings; do
    [ "$i" -ge "$first" ] && [ "$i" -lt $((first + n)) ] && order="$order $setting"
    i=$((i + 1))
  done
  for setting in $order; do
    if [ "$setting" = default ]; then
      job "default_r$rep"
    else
      job "hand_${setting}_r$rep" OMP_NUM_THREADS="$setting" OPENBLAS_NUM_THREADS="$setting"
    fi
  done
  rep=$((rep + 1))
done

python3 "$here/table.py" "$out" | tee "$out/table.md"
