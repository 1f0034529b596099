#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Accuracy kept under compression (docs/compression.md, docs/convergence.md): every case of
# test/compress/compress_accuracy_test, the MLP 784-256-128-10 on Fashion-MNIST trained by one
# ps task and two workers with each encoding, under sync and async, each to its absolute
# target over 12 to 16 epochs. The test command compares each encoding with the uncompressed
# run over 4 epochs (sync_against_none, async_against_none) and leaves these long cases out
# (disabled); they run here by name. Each case's log and its per-epoch CSV lines go to DIR;
# accuracy.csv gathers them, and plot.py draws test accuracy against bytes pushed and against
# wall time (convergence.svg).
#
#   bench/compress/accuracy.sh [--out DIR] [--repeat N] [CASE...]
#
#   --out DIR   logs, accuracy.csv and convergence.svg (default BUILD/compress)
#   --repeat N  run each case N times (plot.py takes each epoch's median; default 1)
#   CASE        run only these cases (default: all), e.g. top_k_1_percent_sync none_async
#
# BUILD=dir uses an existing optimised build directory instead of configuring build-compress.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=""
cases=""
repeat=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    -*) echo "accuracy.sh: unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
    *) cases="$cases $1"; shift ;;
  esac
done
build=${BUILD:-"$root/build-compress"}
if [ -z "${BUILD:-}" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" >/dev/null
fi
cmake --build "$build" --target compress_accuracy_test
out=${out:-"$build/compress"}
mkdir -p "$out"
program="$build/test/compress/compress_accuracy_test"
if [ -z "$cases" ]; then
  cases=$("$program" --list_content 2>&1 | sed -n "s/^    \\([a-z0-9_]*\\)[* ]*$/\\1/p" | grep -v -e '^compress_accuracy_test$' -e '_against_none$')
fi
export OMP_WAIT_POLICY=passive
echo "rule,encoding,pull,epoch,seconds,pushed_bytes,accuracy" >"$out/accuracy.csv"
status=0
for c in $cases; do
  i=1
  while [ "$i" -le "$repeat" ]; do
    log="$out/$c.$i.log"
    echo "== $c ($i of $repeat)"
    if ! "$program" --run_test="compress_accuracy_test/$c" >"$log" 2>&1; then
      echo "accuracy.sh: $c failed (its log: $log)" >&2
      status=1
    fi
    grep -v '^csv,' "$log" | grep -E 'test accuracy .* after' || true
    sed -n 's/^csv,//p' "$log" >>"$out/accuracy.csv"
    i=$((i + 1))
  done
done
python3 "$root/bench/compress/plot.py" "$out/accuracy.csv" --svg "$out/convergence.svg"
exit $status
