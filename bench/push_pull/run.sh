#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Builds the push/pull benchmark (Release, -DDSGD_BUILD_BENCH=ON) in build-bench, runs it and
# prints its CSV rows, then the tables of medians and ratios kept in docs/benchmarks.md.
#   bench/push_pull/run.sh [dsgd_bench_push_pull flags, e.g. --sizes=1048576 --reps=9]
# The rows are also left in build-bench/push_pull.csv, the plot in build-bench/push_pull.png
# (PNG=file elsewhere; matplotlib from bench/compare/.venv, bench/python_env.sh).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build="$root/build-bench"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_BENCH=ON \
  -DDSGD_BUILD_TESTS=OFF -DDSGD_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" --target dsgd_bench_push_pull
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} "$build/bench/dsgd_bench_push_pull" "$@" | tee "$build/push_pull.csv"
echo
python3 "$root/bench/push_pull/table.py" "$build/push_pull.csv"
. "$root/bench/python_env.sh"
py=$(bench_python matplotlib)
"$py" "$root/bench/push_pull/plot.py" "$build/push_pull.csv" "${PNG:-$build/push_pull.png}"
