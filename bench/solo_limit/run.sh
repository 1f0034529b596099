#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Two workers against twice one process alone (docs/benchmarks.md, "Two workers against twice
# one process alone"): dsgd-train's MLP trained by 2 worker processes under every
# system, each as a fraction of twice the rate of one process measured in the same repetition.
# Systems, interleaved within each repetition:
#
#   solo       dsgd_bench_step_profile --solo: forward, backward and the momentum update in one
#              process, nothing else (the rate issue 15 asks two workers to double)
#   alone      dsgd-train itself on 1 ps + 1 worker, averaging once a pass over the data: the
#              same training loop (batch sampling, schedule, evaluations) in one process, the ps
#              idle but for one exchange an epoch
#   sync       1 ps + 2 workers, --rule sync (one exchange a step)
#   async      1 ps + 2 workers, --rule async --lr 0.01 --decay 0.8 (bench/compare/run.sh's)
#   local_K    1 ps + 2 workers, --rule local --local-steps K
#   torch_ddp, torch_rpc_sync
#              bench/compare/peers.py on Debian's python3-torch: DDP over gloo (2 workers) and
#              the torch.distributed.rpc parameter server (1 ps + 2 workers), the same work
#
# Both model sizes (784-256-128-10, 10 epochs; 784-1024-1024-10, 4 epochs). table.py prints per
# model and system the medians over the repetitions: examples/s over the whole run and with the
# chief's evaluations taken out, their ratio to twice each baseline, the final test accuracy and
# the first epoch at 0.88.
#
#   bench/solo_limit/run.sh [--reps N] [--ks "8 16 32"] [--models "small big"] [--no-peers]
#                           [--out DIR]
#
#   --reps N      repetitions (default 3)
#   --ks LIST     local SGD's steps between averages (default "8 16 32")
#   --models LIST small, big or both (default "small big")
#   --no-peers    leave the PyTorch peers out
#   --out DIR     logs, CSV files and table.md (default BUILD/solo_limit)
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
peers=1
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --ks) ks=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --no-peers) peers=0; shift ;;
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

"$root/scripts/setup.sh"  # the build's Debian packages, python3-torch among them
build=${BUILD:-"$root/build-compare"}
if [ -z "${BUILD:-}" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_TESTS=OFF \
    -DDSGD_BUILD_BENCH=ON >/dev/null
fi
cmake --build "$build" --target dsgd-train dsgd-launch dsgd_bench_step_profile >/dev/null
out=${out:-"$build/solo_limit"}
mkdir -p "$out"
rm -f "$out"/*.csv "$out"/*.log

export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_WAIT_POLICY=passive
export PYTHONWARNINGS=ignore
launch="$build/tools/dsgd-launch"
program="$build/tools/dsgd-train"
profile="$build/bench/dsgd_bench_step_profile"
py=/usr/bin/python3  # Debian's, with python3-torch (the same 1.13 as libtorch-dev)
peer="$root/bench/compare/peers.py"

# cluster NAME PS WORKERS EPOCHS COMMAND...: one run under dsgd-launch; the chief's evaluations
# go to NAME.csv.
cluster() {
  name=$1 ps=$2 workers=$3 epochs=$4
  shift 4
  # A run that ends below its target still leaves its CSV; every run is bounded by --timeout.
  "$launch" --ps "$ps" --workers "$workers" --timeout 900 -- "$@" --epochs "$epochs" \
    --csv "$out/$name.csv" >"$out/$name.log" 2>&1 || echo "   (exit status $?; see $out/$name.log)"
  tail -1 "$out/$name.csv" 2>/dev/null | sed "s/^/   $name: last evaluation: /"
}

rep=1
while [ "$rep" -le "$reps" ]; do
  echo "== repetition $rep of $reps"
  for m in $models; do
    if [ "$m" = big ]; then
      hidden=1024,1024 epochs=4 solo_steps=150
    else
      hidden=256,128 epochs=10 solo_steps=400
    fi
    "$profile" --solo --steps "$solo_steps" --hidden "$hidden" >"$out/${m}_solo_r$rep.log" 2>&1
    grep '^profile,' "$out/${m}_solo_r$rep.log" | sed "s/^/   ${m}_solo: /"
    # One worker's pass over the whole training set is 938 batches of 64: one average a pass.
    cluster "${m}_alone_r$rep" 1 1 "$epochs" "$program" --hidden "$hidden" --rule local --local-steps 938
    cluster "${m}_sync_r$rep" 1 2 "$epochs" "$program" --hidden "$hidden" --rule sync
    cluster "${m}_async_r$rep" 1 2 "$epochs" "$program" --hidden "$hidden" --rule async --lr 0.01 --decay 0.8
    for k in $ks; do
      cluster "${m}_local_${k}_r$rep" 1 2 "$epochs" "$program" --hidden "$hidden" --rule local --local-steps "$k"
    done
    if [ "$peers" = 1 ]; then
      cluster "${m}_torch_ddp_r$rep" 0 2 "$epochs" "$py" "$peer" ddp --hidden "$hidden"
      cluster "${m}_torch_rpc_sync_r$rep" 1 2 "$epochs" "$py" "$peer" rpc --rule sync --hidden "$hidden"
    fi
  done
  rep=$((rep + 1))
done

python3 "$here/table.py" "$out" | tee "$out/table.md"
