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
#   allreduce  2 workers and no ps, --rule allreduce (collective/: the workers reduce-scatter the
#              gradients, each updates its half, and all-gather the values)
#   torch_ddp, torch_rpc_sync
#              bench/compare/peers.py on Debian's python3-torch: DDP over gloo (2 workers) and
#              the torch.distributed.rpc parameter server (1 ps + 2 workers), the same work
#
# Models (hidden widths, batch per worker, epochs):
#   small  784-256-128-10, 64, 10         big   784-1024-1024-10, 64, 4
#   deep   784-512-512-512-512-10, 128, 3 wide  784-4096-10, 128, 3
# table.py prints per model and system the medians over the repetitions: examples/s over the
# whole run and with the chief's evaluations taken out, their ratio to twice each baseline and
# to DDP's in the same repetition, the final test accuracy and the first epoch at 0.88.
#
#   bench/solo_limit/run.sh [--reps N] [--ks "8 16 32"] [--models "small big deep wide"]
#                           [--systems LIST] [--no-peers] [--out DIR]
#
#   --reps N       repetitions (default 3)
#   --ks LIST      local SGD's steps between averages (default "8 16 32")
#   --models LIST  of small, big, deep, wide (default "small big")
#   --systems LIST of async, local, allreduce, torch_ddp, torch_rpc_sync, besides solo, alone
#                  and sync, which every table needs (default: all of them)
#   --no-peers     leave the PyTorch peers out
#   --out DIR      logs, CSV files and table.md (default BUILD/solo_limit)
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
systems="async local allreduce torch_ddp torch_rpc_sync"
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --ks) ks=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --systems) systems=$2; shift 2 ;;
    --no-peers) peers=0; shift ;;
    --out) out=$2; shift 2 ;;
    *) echo "run.sh: unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done
for m in $models; do
  case "$m" in
    small | big | deep | wide) ;;
    *) echo "run.sh: --models: unknown model $m (expected small, big, deep or wide)" >&2; exit 2 ;;
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
rm -f "$out"/*.csv "$out"/*.log "$out"/models.txt
# wanted SYSTEM: whether --systems (and --no-peers) keep it.
wanted() {
  case "$1" in torch_*) [ "$peers" = 1 ] || return 1 ;; esac
  case " $systems " in *" $1 "*) return 0 ;; esac
  return 1
}

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
    case "$m" in
      small) hidden=256,128 batch=64 epochs=10 solo_steps=400 ;;
      big) hidden=1024,1024 batch=64 epochs=4 solo_steps=150 ;;
      deep) hidden=512,512,512,512 batch=128 epochs=3 solo_steps=150 ;;
      wide) hidden=4096 batch=128 epochs=3 solo_steps=100 ;;
    esac
    [ "$rep" = 1 ] && echo "$m $hidden $batch $epochs" >>"$out/models.txt"
    "$profile" --solo --steps "$solo_steps" --hidden "$hidden" --batch "$batch" >"$out/${m}_solo_r$rep.log" 2>&1
    grep '^profile,' "$out/${m}_solo_r$rep.log" | sed "s/^/   ${m}_solo: /"
    # One worker's pass over the whole training set: one average a pass.
    pass=$(((60000 + batch - 1) / batch))
    cluster "${m}_alone_r$rep" 1 1 "$epochs" "$program" --hidden "$hidden" --batch "$batch" --rule local \
      --local-steps "$pass"
    cluster "${m}_sync_r$rep" 1 2 "$epochs" "$program" --hidden "$hidden" --batch "$batch" --rule sync
    if wanted allreduce; then
      cluster "${m}_allreduce_r$rep" 0 2 "$epochs" "$program" --hidden "$hidden" --batch "$batch" --rule allreduce
    fi
    if wanted async; then
      cluster "${m}_async_r$rep" 1 2 "$epochs" "$program" --hidden "$hidden" --batch "$batch" --rule async \
        --lr 0.01 --decay 0.8
    fi
    if wanted local; then
      for k in $ks; do
        cluster "${m}_local_${k}_r$rep" 1 2 "$epochs" "$program" --hidden "$hidden" --batch "$batch" --rule local \
          --local-steps "$k"
      done
    fi
    if wanted torch_ddp; then
      cluster "${m}_torch_ddp_r$rep" 0 2 "$epochs" "$py" "$peer" ddp --hidden "$hidden" --batch "$batch"
    fi
    if wanted torch_rpc_sync; then
      cluster "${m}_torch_rpc_sync_r$rep" 1 2 "$epochs" "$py" "$peer" rpc --rule sync --hidden "$hidden" \
        --batch "$batch"
    fi
  done
  rep=$((rep + 1))
done

python3 "$here/table.py" "$out" | tee "$out/table.md"
