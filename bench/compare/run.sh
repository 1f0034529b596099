#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# dsgd against PyTorch and TensorFlow on the same work (docs/compare.md): the Fashion-MNIST MLP
# of dsgd-train, 2 workers, batch 64 each, momentum SGD with dsgd-train's schedule,
# every process one thread. Every system is started by dsgd-launch and runs --reps times,
# interleaved; summarize.py then prints per system the median examples/s, time to 0.88 test
# accuracy and final accuracy, and the dsgd/peer ratios; plot.py draws docs/img/compare.png.
#
#   bench/compare/run.sh [--reps N] [--epochs E] [--hidden W,W] [--vary-seed] [--out DIR] [--png FILE]
#                        [--only NAME...]
#
#   --reps N     runs per system (default 3)
#   --epochs E   epochs of the schedule per run (default 8)
#   --hidden W,W the MLP's hidden widths, for dsgd and every peer alike (default 256,128;
#                1024,1024 is the 1.86M-parameter model)
#   --vary-seed  rep r of every system starts from seed r - 1 (initial draws and data order; the
#                default is seed 0 for every rep), for the spread of the final accuracies
#   --out DIR    logs, per-run CSV files, runs.csv and summary.md (default build-compare/compare)
#   --png FILE   the plot (default DIR/compare.png; docs use docs/img/compare.png)
#   --only NAME  run only these systems (dsgd_sync dsgd_async dsgd_local torch_ddp torch_rpc_sync
#                torch_rpc_async tf_ps_sync tf_ps_async), then summarize all found in DIR
#
# On a fresh Debian machine it first installs the build's packages (scripts/setup.sh). The peers
# (torch, tensorflow-cpu, matplotlib) are installed with pip into bench/compare/.venv on first
# use (bench/python_env.sh); torch's default Linux wheel brings its CUDA libraries along (about
# 3 GB).
# BUILD=dir uses an existing build directory instead of configuring build-compare.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
reps=3
epochs=8
hidden=256,128
vary_seed=0
out=""
png=""
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --hidden) hidden=$2; shift 2 ;;
    --vary-seed) vary_seed=1; shift ;;
    --out) out=$2; shift 2 ;;
    --png) png=$2; shift 2 ;;
    --only) only="$only $2"; shift 2 ;;
    *) echo "run.sh: unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done

"$root/scripts/setup.sh"  # the build's Debian packages, as the README's commands install them
build=${BUILD:-"$root/build-compare"}
if [ -z "${BUILD:-}" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target dsgd-train dsgd-launch
out=${out:-"$build/compare"}
png=${png:-"$out/compare.png"}
mkdir -p "$out"

. "$root/bench/python_env.sh"
py=$(bench_python torch tensorflow matplotlib numpy)
"$py" - >"$out/versions.txt" <<'PY'
import platform, numpy, torch, tensorflow as tf
print(f"python {platform.python_version()}, numpy {numpy.__version__}, torch {torch.__version__}, "
      f"tensorflow {tf.__version__}")
PY
cat "$out/versions.txt"

# One thread per process for every system: the tasks share the machine's cores.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_WAIT_POLICY=passive
export TF_CPP_MIN_LOG_LEVEL=2 PYTHONWARNINGS=ignore
launch="$build/tools/dsgd-launch"
cluster="$build/tools/dsgd-train"
peers="$here/peers.py"
# Async applies every batch as a step: twice the updates of sync per epoch with 2 workers, so
# a smaller rate decayed more gently (as bench/straggler does for dsgd-train).
async="--rule async --lr 0.01 --decay 0.8"

# run NAME REP PS ARGS...: one cluster run with 2 workers; the chief's evaluations go to NAME_rREP.csv.
run() {
  name=$1 rep=$2 ps=$3
  shift 3
  file="$out/${name}_r$rep"
  echo "== $name (rep $rep): dsgd-launch --ps $ps --workers 2 -- $*"
  "$launch" --ps "$ps" --workers 2 --timeout 1800 -- "$@" --epochs "$epochs" --hidden "$hidden" \
    --seed $((vary_seed * (rep - 1))) --csv "$file.csv" \
    >"$file.log" 2>&1 || echo "   (exit status $?; see $file.log)"
  grep -E "^\[worker:0\] epoch" "$file.log" | tail -1 | sed 's/^/   /'
}

wanted() { [ -z "$only" ] || case " $only " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

rep=1
while [ "$rep" -le "$reps" ]; do
  wanted dsgd_sync && run dsgd_sync "$rep" 1 "$cluster" --rule sync
  wanted torch_ddp && run torch_ddp "$rep" 0 "$py" "$peers" ddp
  wanted torch_rpc_sync && run torch_rpc_sync "$rep" 1 "$py" "$peers" rpc --rule sync
  wanted tf_ps_sync && run tf_ps_sync "$rep" 1 "$py" "$peers" tf --rule sync
  wanted dsgd_async && run dsgd_async "$rep" 1 "$cluster" $async
  wanted dsgd_local && run dsgd_local "$rep" 1 "$cluster" --rule local --local-steps 8
  wanted torch_rpc_async && run torch_rpc_async "$rep" 1 "$py" "$peers" rpc $async
  wanted tf_ps_async && run tf_ps_async "$rep" 1 "$py" "$peers" tf $async
  rep=$((rep + 1))
done

# What computed dsgd's matrix products (the chief prints it): the BLAS and the kernels it chose.
for log in "$out"/dsgd_*_r1.log; do
  [ -f "$log" ] && sed -n 's/^\[worker:0\] matrix products: /dsgd matrix products: /p' "$log" | head -1
done | head -1 >>"$out/versions.txt"
"$py" "$here/summarize.py" --dir "$out" --target 0.88
"$py" "$here/plot.py" --dir "$out" --png "$png" --target 0.88
