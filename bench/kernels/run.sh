#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Builds the update-kernel benchmark (Release, -DDSGD_BUILD_BENCH=ON) in build-bench, runs it
# with 5 repetitions and prints the medians as the markdown table kept in docs/benchmarks.md.
#   bench/kernels/run.sh [extra Google Benchmark flags, e.g. --benchmark_filter=adam]
# DSGD_BENCH_ELEMENTS sets the floats per array (default 16 Mi).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build="$root/build-bench"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_BENCH=ON \
  -DDSGD_BUILD_TESTS=OFF -DDSGD_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" --target dsgd_bench_update_kernels dsgd_bench_update_kernels_no_math_errno
flags="--benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_format=json"
"$build/bench/dsgd_bench_update_kernels" $flags "$@" >"$build/update_kernels.json"
# Only the sqrt kernels change with -fno-math-errno.
"$build/bench/dsgd_bench_update_kernels_no_math_errno" $flags --benchmark_filter='adagrad|adam' \
  "$@" >"$build/update_kernels_no_math_errno.json"
python3 "$root/bench/kernels/table.py" "$build/update_kernels.json" \
  "$build/update_kernels_no_math_errno.json"
