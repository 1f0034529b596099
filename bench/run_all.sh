#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Reruns every benchmark of docs/benchmarks.md and docs/compare.md, one after the other, and
# keeps each one's output in build-bench/results/<name>.txt:
#   bench/run_all.sh            # all of them (about 1.5 hours on 2 cores, most of it compare)
#   bench/run_all.sh kernels push_pull    # only these
# Names: kernels push_pull update_rules straggler scaling compare. Run it on an otherwise idle machine:
# the figures are medians and ratios to baselines measured in the same run, but two benchmarks
# sharing the cores would still disturb each other.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/build-bench/results"
mkdir -p "$out"
names=${*:-kernels push_pull update_rules straggler scaling compare}
for name in $names; do
  case $name in
    kernels) set -- ;;
    push_pull) set -- --sizes=1048576,8388608,16777216,104857600 --reps=9 --tls ;;
    update_rules) set -- ;;
    straggler) set -- --verify --epochs 15 ;;
    scaling) set -- --reps 3 --epochs 2 ;;
    compare) set -- --reps 3 --epochs 8 ;;
    *) echo "run_all.sh: unknown benchmark $name" >&2; exit 2 ;;
  esac
  echo "== $name: bench/$name/run.sh $*"
  "$root/bench/$name/run.sh" "$@" 2>&1 | tee "$out/$name.txt"
done
