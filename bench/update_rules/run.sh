#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Builds the update-rule benchmark (Release, -DDSGD_BUILD_BENCH=ON) in build-bench, runs it with
# 5 repetitions and prints the medians as the markdown tables kept in docs/benchmarks.md.
#   bench/update_rules/run.sh [extra Google Benchmark flags, e.g. --benchmark_filter=async]
# DSGD_BENCH_SHARD_ELEMENTS sets the shard sizes in floats (default 65536,4194304);
# OMP_NUM_THREADS the threads of each kernel (default: all cores).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build="$root/build-bench"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_BENCH=ON \
  -DDSGD_BUILD_TESTS=OFF -DDSGD_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" --target dsgd_bench_update_rules
"$build/bench/dsgd_bench_update_rules" --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_format=json "$@" >"$build/update_rules.json"
python3 "$root/bench/update_rules/table.py" "$build/update_rules.json"
