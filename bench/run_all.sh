#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Reruns every benchmark of docs/benchmarks.md and docs/compare.md, one after the other, with
# the settings their tables came from: each one's output goes to build-bench/results/<name>.txt
# and its plot to docs/img/<name>.png (the plots that docs show).
#   bench/run_all.sh                       # all of them (about 50 minutes on 2 cores)
#   bench/run_all.sh kernels push_pull     # only these
# Names: kernels push_pull update_rules step_profile scaling straggler solo_limit compare. Run it on an
# otherwise idle machine: the figures are medians and ratios to baselines measured in the same
# run, but two benchmarks sharing the cores would still disturb each other. The first one that
# needs them installs torch, tensorflow-cpu and matplotlib into bench/compare/.venv (pip).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/build-bench/results"
img="$root/docs/img"
mkdir -p "$out" "$img"
"$root/scripts/setup.sh"  # the build's Debian packages (Boost, OpenBLAS, Google Benchmark, ...)
names=${*:-kernels push_pull update_rules step_profile scaling straggler solo_limit compare}
for name in $names; do
  script="$root/bench/$name/run.sh"
  case $name in
    kernels | update_rules) set -- ;;
    push_pull)
      export PNG="$img/push_pull.png"
      set -- --sizes=1048576,8388608,16777216,104857600 --reps=31 --tls ;;
    step_profile)
      script="$root/bench/compare/step_profile.sh"
      export PNG="$img/step_profile.png"
      set -- --reps 5 ;;
    scaling)
      export PNG="$img/scaling.png"
      set -- --reps 3 --epochs 3 --workers "1 2 3 4" ;;
    straggler) set -- --verify --epochs 15 --png "$img/straggler.png" ;;
    solo_limit) set -- --reps 3 ;;
    compare) set -- --reps 3 --epochs 8 --png "$img/compare.png" ;;
    *) echo "run_all.sh: unknown benchmark $name" >&2; exit 2 ;;
  esac
  echo "== $name: $script $*"
  "$script" "$@" 2>&1 | tee "$out/$name.txt"
  unset PNG
done
