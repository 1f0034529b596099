#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# dsgd-ctr against the parameter-server and sparse-training stacks of PyTorch, TorchRec,
# PaddlePaddle and TensorFlow on the same job: Wide & Deep of model/wide_deep.hpp (13 dense
# floats, 26 hashed ids, 2 crosses; 429-256-128-1), 2 workers of batch 512, read from the same
# .ctr files, every process one compute thread. Each system runs --reps times, INTERLEAVED (one
# run of every system, then again); summarize.py prints per system and configuration the
# median examples/s (with and without input), time to --target test AUC, final AUC (exact, the
# whole test file) and dsgd's examples/s over the peer's, and writes runs.csv and summary.csv.
#
#   bench/ctr/run.sh [--configs 1ps-1M,2ps-1M,1ps-10M,2ps-10M] [--systems NAME,...] [--examples N]
#                    [--test-examples N] [--reps N] [--target AUC] [--wide-optimizer O] [--out DIR]
#                    [--timeout S]
#
#   --configs  ps tasks and table rows (a peer's fixed tables: key mod rows; dsgd's take any key);
#              the 1M tables read the click stream at --scale 0.01, the 10M ones at 1 (Criteo's
#              cardinalities) [1ps-1M]
#   --systems  dsgd_hybrid dsgd_sync torch_ddp torch_rpc_hybrid torch_rpc_sync torchrec tf_ps paddle_ps
#              [all of them]
#   --examples training examples over both workers, one pass over the training file [2000000]
#   --test-examples  test examples (the stream's test split after the training examples) [100000]
#   --reps     runs per system and configuration [2]
#   --target   the AUC of "time to AUC" [0.74]: the test split comes after the training examples in
#              the stream's time, whose ids drift, so the AUC climbs slowly and jumps at the end
#              (at 2M examples of scale 0.01: 0.725 after 1/8 of the run, 0.745 after 7/8, 0.81 at the end)
#   --wide-optimizer  ftrl: every system that has FTRL trains the wide part with it (torchrec and
#              paddle_ps with Adagrad); adagrad: every system trains it with Adagrad at --lr 0.05,
#              the speed table on equal optimizers [ftrl]
#   --out      logs, runs.csv, summary.csv (default bench/ctr/out)
#   --timeout  seconds a run may take before it is stopped [900]
#
# Which rule compares with which: torch_ddp, torchrec and torch_rpc_sync are synchronous
# (compared with dsgd_sync); torch_rpc_hybrid (MLP sync, tables async) with dsgd_hybrid;
# tf_ps (ParameterServerStrategy: asynchronous only) and paddle_ps (async) with dsgd_hybrid.
# torchrec and paddle_ps have no FTRL: their wide part trains with Adagrad (lr 0.05), everyone
# else's with FTRL. torch_ddp and torchrec have no ps tasks (--ps 0 whatever the config).
#
# The data is made by dsgd-ctr-data into bench/ctr/data/ (kept between runs). Python peers
# come from bench/compare/.venv (bench/python_env.sh), with torchrec==1.9.2, fbgemm-gpu-cpu==1.9.0
# (whose torch is 2.14: a venv of another torch gets bench/ctr/.venv-torchrec for it), tf-keras
# and paddlepaddle==3.3.1 added on first use.
# BUILD=dir uses an existing build directory instead of configuring build-ctr.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
configs=1ps-1M
systems="dsgd_hybrid,dsgd_sync,torch_ddp,torch_rpc_hybrid,torch_rpc_sync,torchrec,tf_ps,paddle_ps"
examples=2000000
test_examples=100000
reps=2
target=0.74
out="$here/out"
timeout=900
wide_optimizer=ftrl
while [ $# -gt 0 ]; do
  case "$1" in
    --configs) configs=$2; shift 2 ;;
    --systems) systems=$2; shift 2 ;;
    --examples) examples=$2; shift 2 ;;
    --test-examples) test_examples=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --wide-optimizer) wide_optimizer=$2; shift 2 ;;
    *) echo "run.sh: unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done

case $wide_optimizer in ftrl | adagrad) ;; *) echo "run.sh: --wide-optimizer $wide_optimizer: ftrl or adagrad" >&2; exit 2 ;; esac
wide="--wide-optimizer $wide_optimizer"

build=${BUILD:-"$root/build-ctr"}
if [ -z "${BUILD:-}" ]; then
  "$root/scripts/setup.sh"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_ENABLE_CUDA=OFF -DDSGD_BUILD_TESTS=OFF \
    -DDSGD_BUILD_BENCH=OFF >/dev/null
  nice -n 10 cmake --build "$build" --target dsgd-ctr dsgd-launch dsgd-ctr-data
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
launch="$build/tools/dsgd-launch"
ctr="$build/tools/dsgd-ctr"
mkdir -p "$out" "$here/data"

# ------------------------------------------------------------------------------ the peers
. "$root/bench/python_env.sh"
py=$(bench_python torch tensorflow numpy)
"$py" -c "import tf_keras" 2>/dev/null || "$py" -m pip install --quiet tf-keras==2.21.0 >&2
case ",$systems," in *,paddle_ps,*)
  "$py" -c "import paddle" 2>/dev/null || "$py" -m pip install --quiet paddlepaddle==3.3.1 >&2 || true ;;
esac
# TorchRec 1.9 and FBGEMM 1.9 are built for torch 2.14 (FBGEMM's compatibility table). torchrec
# is installed without its dependencies: they name fbgemm-gpu (the CUDA build), whose module
# the CPU build's would clash with.
rec_py=$py
case ",$systems," in *,torchrec,*)
  torch_version=$("$py" -c "import torch; print(torch.__version__)")
  case $torch_version in
    2.14.*) ;;
    *) rec_py="$here/.venv-torchrec/bin/python"
       [ -x "$rec_py" ] || python3 -m venv "$here/.venv-torchrec"
       "$rec_py" -c "import torch" 2>/dev/null || "$rec_py" -m pip install --quiet "torch==2.14.*" numpy >&2 ;;
  esac
  if ! "$rec_py" -c "import torchrec, fbgemm_gpu" 2>/dev/null; then
    "$rec_py" -m pip install --quiet fbgemm-gpu-cpu==1.9.0 tensordict torchmetrics==1.0.3 tqdm pyre-extensions >&2
    "$rec_py" -m pip install --quiet --no-deps torchrec==1.9.2 >&2
  fi ;;
esac

{
  echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
  # One module a process: paddle imported after torch and tensorflow in one process crashes.
  line="python $("$py" -c 'import platform; print(platform.python_version())')"
  for m in numpy torch tensorflow tf_keras paddle; do
    line="$line, $m $("$py" -c "import $m; print($m.__version__)" 2>/dev/null | tail -1 || echo missing)"
  done
  echo "$line"
  "$rec_py" -c "import torch, torchrec, fbgemm_gpu, importlib.metadata as m; print('torchrec', m.version('torchrec'), 'fbgemm-gpu-cpu', m.version('fbgemm-gpu-cpu'), 'with torch', torch.__version__)" 2>&1 | tail -1
} | tee "$out/versions.txt"

# One compute thread per process for every system: the tasks share the machine's cores.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_WAIT_POLICY=passive CPU_NUM=1
export TF_CPP_MIN_LOG_LEVEL=2 PYTHONWARNINGS=ignore FLAGS_enable_pir_api=0

# ------------------------------------------------------------------------------- the data
# data SCALE: the training and test files of --examples and --test-examples at that scale.
data() {
  train="$here/data/train_s$1_n$examples.ctr"
  test="$here/data/test_s$1_n${examples}_t$test_examples.ctr"
  [ -f "$train" ] || nice -n 10 "$build/tools/dsgd-ctr-data" --out "$train" --examples "$examples" --scale "$1"
  [ -f "$test" ] || nice -n 10 "$build/tools/dsgd-ctr-data" --out "$test" --examples "$test_examples" \
    --part test --start "$examples" --scale "$1"
  PYTHONPATH="$here" "$py" -c "
import sys, numpy as np, ctr_common as cc
r = cc.open_ctr(sys.argv[1])
print(f'{sys.argv[1]}: {len(r)} examples, {len(np.unique(r[\"keys\"]))} distinct ids')" "$train"
}

# ------------------------------------------------------------------------------- the runs
# Progress every 1/40 of the run, an evaluation of the whole test file every 5 progress lines
# (1/8 of the run), at a progress line's step: its time is the evaluation's.
log_examples=$((examples / 40))
steps() { n=$(($1 / $2)); [ "$n" -ge 1 ] || n=1; echo "--log-steps $n --eval-steps $((5 * n))"; }

# run NAME CONFIG REP: one run of NAME, its log in $out/NAME_CONFIG_rREP.log
run() {
  name=$1 config=$2 rep=$3
  log="$out/${name}_${config}_r$rep.log"
  sync_steps=$(steps $log_examples 1024)  # a global step: both workers' batches
  async_steps=$(steps $log_examples 512)  # a global step: one worker's batch
  files="--train $train --test $test"
  common="$files --examples $examples"
  L="nice -n 10 $launch --workers 2 --timeout $timeout"
  echo "== $name $config (rep $rep)"
  set +e
  case $name in
    dsgd_hybrid | dsgd_sync)
      $L --ps "$ps" -- "$ctr" $common --rule "${name#dsgd_}" --crosses 5x8,13x16 --eval 0 $wide $sync_steps \
        >"$log" 2>&1 ;;
    torch_ddp)
      $L --ps 0 -- "$py" "$here/torch_ddp.py" $common --rows "$rows" $wide $sync_steps >"$log" 2>&1 ;;
    torch_rpc_hybrid | torch_rpc_sync)
      $L --ps "$ps" -- "$py" "$here/torch_rpc_ps.py" $common --rows "$rows" --rule "${name#torch_rpc_}" \
        $wide $sync_steps >"$log" 2>&1 ;;
    torchrec)
      $L --ps 0 -- "$rec_py" "$here/torchrec_cpu.py" $common --rows "$rows" --wide-optimizer adagrad \
        $sync_steps >"$log" 2>&1 ;;
    tf_ps)
      $L --ps "$ps" --chief -- "$py" "$here/tf_ps.py" $common --rows "$rows" $wide $async_steps >"$log" 2>&1 ;;
    paddle_ps)
      # Paddle's launcher starts its own servers and trainers; trainer 0's lines are workerlog.0.
      # It runs in $out, where its rendezvous writes http.log.
      rm -rf "$log.d"
      (cd "$out" && timeout "$timeout" nice -n 10 "$py" -m paddle.distributed.launch --log_dir "$log.d" \
        --server_num "$ps" --trainer_num 2 "$here/paddle_ps.py" --train-file "$train" --test "$test" \
        --examples "$examples" --rows "$rows" --rule async --wide-optimizer adagrad $async_steps) >"$log" 2>&1
      paddle_status=$?
      [ ! -f "$log.d/workerlog.0" ] || { echo "--- workerlog.0"; cat "$log.d/workerlog.0"; } >>"$log"
      (exit $paddle_status) ;;
    *) echo "run.sh: unknown system $name" >&2; exit 2 ;;
  esac
  status=$?
  set -e
  [ "$status" -eq 0 ] || echo "   exit status $status; see $log"
  grep -h "final test auc" "$log" | tail -1 | sed 's/^/   /' || true
}

for config in $(echo "$configs" | tr ',' ' '); do
  ps=${config%%ps-*}
  case ${config#*ps-} in
    1M) rows=1000000 scale=0.01 ;;
    10M) rows=10000000 scale=1 ;;
    *) echo "run.sh: --configs $config: expected 1ps-1M, 2ps-1M, 1ps-10M or 2ps-10M" >&2; exit 2 ;;
  esac
  data "$scale"
  rep=1
  while [ "$rep" -le "$reps" ]; do
    for name in $(echo "$systems" | tr ',' ' '); do
      run "$name" "$config" "$rep"
    done
    rep=$((rep + 1))
  done
done
"$py" "$here/summarize.py" --dir "$out" --target "$target" --examples "$examples" --configs "$configs" \
  --systems "$systems"
