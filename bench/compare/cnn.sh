#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# dsgd against PyTorch on the CNN of examples/04_libtorch_cnn (docs/compare.md, "The CNN"):
# LeNet-size torch::nn network on Fashion-MNIST, batch 64 per worker, momentum SGD with 04's
# schedule, every process one thread, both sides on the same libtorch (Debian's libtorch-dev
# for 04, Debian's python3-torch, the same 1.13.1 build, for the peers). Systems:
#
#   dsgd_sync, dsgd_async  04_libtorch_cnn --rule sync|async   dsgd-launch --ps 1 --workers 2
#   torch_ddp              cnn_peers.py ddp (gloo)              dsgd-launch --ps 0 --workers 2
#   torch_rpc_sync/async   cnn_peers.py rpc --rule sync|async   dsgd-launch --ps 1 --workers 2
#   dsgd_solo, torch_solo  04_libtorch_cnn --solo, cnn_peers.py solo: one process, one thread
#   dsgd_solo_x2           two 04_libtorch_cnn --solo at once: what the cores give two
#                          processes that never communicate
#
# Each runs --reps times, interleaved; cnn_summarize.py then prints per system the median
# examples/s, time to 0.90 test accuracy, final accuracy and communication efficiency (2-worker
# examples/s over twice the framework's solo examples/s), and dsgd / best peer ratios.
#
#   bench/compare/cnn.sh [--reps N] [--first-rep N] [--epochs E] [--solo-epochs E] [--out DIR]
#                        [--only NAME...]
#
#   --reps N         runs per system (default 3)
#   --first-rep N    number the runs from N (default 1): more runs into an --out directory
#   --epochs E       passes over the training set per 2-worker run (default 12)
#   --solo-epochs E  passes per solo run (default 3: their examples/s is what they are for)
#   --out DIR        logs, per-run CSV files, cnn_runs.csv, cnn_summary.md (default BUILD/compare-cnn)
#   --only NAME      run only these systems (names above), then summarize all found in DIR
#
# On a fresh Debian machine it first installs the build's packages (scripts/setup.sh) and
# python3-torch. BUILD=dir uses an existing build directory (configured with GCC: Clang does not
# compile libtorch 1.13's headers, and 04_libtorch_cnn is then not a target) instead of
# configuring build-compare-cnn.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
reps=3
first=1
epochs=12
solo_epochs=3
out=""
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --first-rep) first=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --solo-epochs) solo_epochs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --only) only="$only $2"; shift 2 ;;
    *) echo "cnn.sh: unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done

"$root/scripts/setup.sh"  # the build's Debian packages, libtorch-dev among them
py=/usr/bin/python3  # Debian's, with python3-torch: not bench/compare/.venv, whose torch is another build
if ! "$py" -c "import torch.distributed.rpc" 2>/dev/null; then
  echo "cnn.sh: installing python3-torch (Debian's build of libtorch-dev's libtorch)"
  as_root=""
  [ "$(id -u)" -eq 0 ] || as_root=sudo
  $as_root apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
fi
build=${BUILD:-"$root/build-compare-cnn"}
if [ -z "${BUILD:-}" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_TESTS=OFF >/dev/null
fi
if ! cmake --build "$build" --target 04_libtorch_cnn dsgd-launch; then
  echo "cnn.sh: could not build 04_libtorch_cnn in $build (it needs libtorch-dev and GCC; see CMake's dsgd: lines)" >&2
  exit 1
fi
out=${out:-"$build/compare-cnn"}
mkdir -p "$out"

{
  echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
  echo "cores: $(nproc)"
  echo "libtorch-dev $(dpkg-query -W -f='${Version}' libtorch-dev), python3-torch $(dpkg-query -W -f='${Version}' python3-torch)"
  "$py" -c "import platform, torch; print(f'python {platform.python_version()}, torch.__version__ {torch.__version__}')"
} >"$out/versions.txt"
cat "$out/versions.txt"

# One thread per process for every system: the tasks share the machine's cores.
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_WAIT_POLICY=passive PYTHONWARNINGS=ignore
launch="$build/tools/dsgd-launch"
cnn="$build/examples/04_libtorch_cnn"
peers="$here/cnn_peers.py"
# Async applies every batch as a step: twice the updates of sync per pass with 2 workers, at
# half the rate (as 04's async test does).
async="--rule async --lr 0.02"

# run NAME REP PS ARGS...: one cluster run with 2 workers; the chief's evaluations go to NAME_rREP.csv.
run() {
  name=$1 rep=$2 ps=$3
  shift 3
  file="$out/${name}_r$rep"
  echo "== $name (rep $rep): dsgd-launch --ps $ps --workers 2 -- $*"
  "$launch" --ps "$ps" --workers 2 --timeout 1800 -- "$@" --epochs "$epochs" --csv "$file.csv" \
    >"$file.log" 2>&1 || echo "   (exit status $?; see $file.log)"
  grep -E "^\[worker:0\] epoch" "$file.log" | tail -1 | sed 's/^/   /'
}

# solo NAME REP COPIES ARGS...: COPIES one-process runs at once, each to NAME_rREP_K.csv.
solo() {
  name=$1 rep=$2 copies=$3
  shift 3
  echo "== $name (rep $rep): $copies x $*"
  pids="" k=1
  while [ "$k" -le "$copies" ]; do
    "$@" --epochs "$solo_epochs" --csv "$out/${name}_r${rep}_$k.csv" >"$out/${name}_r${rep}_$k.log" 2>&1 &
    pids="$pids $!"
    k=$((k + 1))
  done
  for pid in $pids; do wait "$pid" || echo "   (exit status $?; see $out/${name}_r${rep}_*.log)"; done
  grep -E "^epoch" "$out/${name}_r${rep}_1.log" | tail -1 | sed 's/^/   /'
}

wanted() { [ -z "$only" ] || case " $only " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

rep=$first
while [ "$rep" -lt "$((first + reps))" ]; do
  wanted dsgd_sync && run dsgd_sync "$rep" 1 "$cnn" --rule sync
  wanted torch_ddp && run torch_ddp "$rep" 0 "$py" "$peers" ddp
  wanted torch_rpc_sync && run torch_rpc_sync "$rep" 1 "$py" "$peers" rpc --rule sync
  wanted dsgd_solo && solo dsgd_solo "$rep" 1 "$cnn" --solo
  wanted torch_solo && solo torch_solo "$rep" 1 "$py" "$peers" solo
  wanted dsgd_solo_x2 && solo dsgd_solo_x2 "$rep" 2 "$cnn" --solo
  wanted dsgd_async && run dsgd_async "$rep" 1 "$cnn" $async
  wanted torch_rpc_async && run torch_rpc_async "$rep" 1 "$py" "$peers" rpc $async
  rep=$((rep + 1))
done

"$py" "$here/cnn_summarize.py" --dir "$out" --target 0.90
