#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Builds the fan-in benchmark (Release, -DDSGD_BUILD_BENCH=ON) in build-bench and runs its two
# parts, then prints the tables kept in docs/benchmarks.md ("Fan-in of one ps") and
# docs/design.md ("How a ps's cost grows with its workers"):
#  - fan-in: 1, 4, 16, 32 workers (one client thread each), 4 KiB, 256 KiB and 4 MiB, one ps,
#    async and sync, raw sockets / dsgd over TCP / dsgd with shared memory;
#  - many workers: 64, 256 and 1,024 workers (ps_client connections multiplexed on 8 client
#    threads), a 4 KiB variable cut over 1, 2 and 4 ps tasks, raw sockets and dsgd over TCP;
#  - threads (not part of both): the fan-in's workers and sizes, then 256 and 1,024 workers over
#    1 and 2 ps tasks, each with dsgd over TCP on one ps thread and on two (dsgd_tcp_2t,
#    serving_options::threads = 2): docs/benchmarks.md, "Fan-in of one ps on several threads".
#   bench/fan_in/run.sh [fan-in|many|both|threads] [REPS]
# The rows are left in build-bench/fan_in.csv and build-bench/fan_in_many.csv (threads:
# build-bench/fan_in_threads.csv and build-bench/fan_in_threads_many.csv).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build="$root/build-bench"
what=${1:-both}
reps=${2:-5}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_BENCH=ON \
  -DDSGD_BUILD_TESTS=OFF -DDSGD_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" --target dsgd_bench_fan_in
bench="$build/bench/dsgd_bench_fan_in"
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
files=
if [ "$what" = threads ]; then
  "$bench" --workers=1,4,16,32 --variants=raw,dsgd_tcp,dsgd_tcp_2t --reps="$reps" | tee "$build/fan_in_threads.csv"
  "$bench" --workers=256,1024 --sizes=4096 --ps=1,2 --variants=raw,dsgd_tcp,dsgd_tcp_2t --threads=8 \
    --reps="$reps" --bytes-per-rep=33554432 --max-steps=200 | tee "$build/fan_in_threads_many.csv"
  echo
  python3 "$root/bench/fan_in/table.py" "$build/fan_in_threads.csv" "$build/fan_in_threads_many.csv"
  exit 0
fi
if [ "$what" != many ]; then
  "$bench" --reps="$reps" | tee "$build/fan_in.csv"
  files="$build/fan_in.csv"
fi
if [ "$what" != fan-in ]; then
  "$bench" --workers=64,256,1024 --sizes=4096 --ps=1,2,4 --variants=raw,dsgd_tcp --threads=8 \
    --reps="$reps" --bytes-per-rep=33554432 --max-steps=200 | tee "$build/fan_in_many.csv"
  files="$files $build/fan_in_many.csv"
fi
echo
# shellcheck disable=SC2086
python3 "$root/bench/fan_in/table.py" $files
