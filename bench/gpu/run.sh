#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Everything the GPU items of docs/benchmarks.md need, as one script for a machine with an
# NVIDIA GPU (about 10 minutes on one): names the GPU, runs the `gpu`-labelled tests, measures
# the update kernels on device::cuda against the same run's device-to-device copy bandwidth,
# trains the Fashion-MNIST MLP on `cuda` with cuBLAS (one replica), then with 4 replicas on the
# GPU (each on its own stream), and a CPU run of the same for the ratio. Results go to
# build-gpu/gpu/ (one log per part, and summary.txt).
#   bench/gpu/run.sh [--epochs E]          # default 4 epochs per training run
# BUILD=dir uses another build directory; CMAKE_CUDA_ARCHITECTURES (default 90) the GPU's.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
epochs=4
while [ $# -gt 0 ]; do
  case $1 in
    --epochs) epochs=$2; shift 2 ;;
    *) echo "usage: bench/gpu/run.sh [--epochs E]" >&2; exit 2 ;;
  esac
done
build=${BUILD:-$root/build-gpu}
out="$build/gpu"
mkdir -p "$out"
command -v nvcc >/dev/null || PATH=$PATH:/usr/local/cuda/bin
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_ENABLE_CUDA=ON -DDSGD_BUILD_BENCH=ON \
  -DDSGD_BUILD_TESTS=ON -DCMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-90}" >"$out/configure.log"
cmake --build "$build" --target dsgd_gpu_tests dsgd_bench_update_kernels_cuda 02_multi_device_cuda 02_multi_device \
  >"$out/build.log"
summary="$out/summary.txt"
{
  echo "== GPU"
  nvidia-smi --query-gpu=name,memory.total,clocks.max.memory,driver_version --format=csv,noheader || true
  echo "== gpu tests"
  DSGD_REQUIRE_GPU=1 ctest --test-dir "$build" -L gpu --output-on-failure --no-tests=error 2>&1 | tail -5
  echo "== update kernels against the device-to-device copy"
  "$build/bench/dsgd_bench_update_kernels_cuda" --reps=5 >"$out/kernels.csv"
  sed -n '/^$/,$p' "$out/kernels.csv"
  for run in "cuda 1:--devices cuda" "cuda 4 replicas:--devices cuda --replicas 4" "cpu 2 replicas:--devices cpu --replicas 2"; do
    name=${run%%:*}
    args=${run#*:}
    echo "== MLP on $name ($epochs epochs)"
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$build/examples/02_multi_device_cuda" --model mlp $args \
      --epochs "$epochs" >"$out/mlp_$(echo "$name" | tr ' ' _).log" 2>&1 || echo "(exit status $?)"
    grep -E "epoch|final" "$out/mlp_$(echo "$name" | tr ' ' _).log" | tail -3
  done
} 2>&1 | tee "$summary"
