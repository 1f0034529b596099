#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# 06_embeddings across processes against one process on the same stream (docs/embeddings.md):
# 2 ps tasks and 2 workers of batch B under dsgd-launch, then 1 ps task and 1 worker, and the
# final test AUCs must agree within 0.002 and show the model learned (at least MIN_AUC; the click
# stream's teacher reaches about 0.795 on this split). One process sees the same examples: for
# sync it takes both workers' batches at once (batch 2B, one step each), which sync equals up to
# the float sums' order; for async, ssp and hybrid it takes them one after the other (batch B,
# twice the steps), so the cluster differs only by its staleness.
#   embeddings_against_one_process.sh DSGD_LAUNCH 06_EMBEDDINGS RULE STEPS BATCH MIN_AUC
set -euo pipefail
[[ $# -eq 6 ]] || { echo "usage: $0 DSGD_LAUNCH 06_EMBEDDINGS RULE STEPS BATCH MIN_AUC" >&2; exit 2; }
launch=$1 job=$2 rule=$3 steps=$4 batch=$5 min_auc=$6

run() {  # run PS WORKERS JOB-OPTIONS...: prints the final AUC
  local ps=$1 workers=$2 out
  shift 2
  out=$("$launch" --ps "$ps" --workers "$workers" --timeout 300 -- "$job" --rule "$rule" "$@" 2>&1) || {
    printf '%s\n' "$out"
    echo "embeddings_against_one_process: the job of $ps ps and $workers workers failed"
    exit 1
  }
  printf '%s\n' "$out" | grep "final test auc" >&2
  printf '%s\n' "$out" | sed -n 's/.*final test auc \([0-9.]*\).*/\1/p'
}

cluster=$(run 2 2 --steps "$steps" --batch "$batch")
if [[ $rule == sync ]]; then
  one=$(run 1 1 --steps "$steps" --batch $((2 * batch)))
else
  one=$(run 1 1 --steps $((2 * steps)) --batch "$batch")
fi
[[ -n $cluster && -n $one ]] || { echo "embeddings_against_one_process: no final AUC printed"; exit 1; }
python3 - "$cluster" "$one" "$min_auc" "$rule" <<'PY'
import sys
cluster, one, floor, rule = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
print(f"embeddings_against_one_process: {rule}: 2 ps + 2 workers {cluster:.4f}, one process {one:.4f}, "
      f"difference {abs(cluster - one):.4f} (at most 0.002), floor {floor}")
if abs(cluster - one) > 0.002:
    sys.exit("embeddings_against_one_process: the cluster's AUC is more than 0.002 from one process's")
if min(cluster, one) < floor:
    sys.exit("embeddings_against_one_process: an AUC below the floor: the model did not learn")
print("embeddings_against_one_process: passed")
PY
