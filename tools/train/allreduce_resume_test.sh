#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# allreduce_resume_test.sh DSGD_LAUNCH DSGD_TRAIN DIR
# The collective rule's checkpoints are the ps jobs' (docs/checkpoints.md, "Without a ps"):
#   1. 2 workers under --rule allreduce train 2 epochs, checkpointing every 400 steps and at the end;
#   2. a sync job of 2 ps tasks resumes from that checkpoint (step 938) for a third epoch;
#   3. 3 workers under --rule allreduce resume from the sync job's (step 1407) to the accuracy bar.
# Each run must name the checkpoint it restored; the last must reach 0.86.
set -uo pipefail
launch=$1 program=$2 dir=$3
rm -rf "$dir"
export OMP_WAIT_POLICY=passive
run() {
  local want=$1
  shift
  local out status
  out=$("$launch" --timeout 300 "$@" 2>&1)
  status=$?
  printf '%s\n' "$out"
  if [[ $status -ne 0 ]]; then echo "FAIL: $* exited with status $status"; exit 1; fi
  if [[ -n $want ]] && ! grep -qF -- "$want" <<<"$out"; then echo "FAIL: $*: no line with: $want"; exit 1; fi
}
run "" --ps 0 --workers 2 -- "$program" --rule allreduce --epochs 2 --logdir "$dir" --save-steps 400
[[ -f $dir/ckpt-400.manifest && -f $dir/ckpt-938.ps-1-of-2 ]] || { echo "FAIL: no checkpoints 400 and 938 in $dir"; ls "$dir"; exit 1; }
run "restored checkpoint 938 from $dir" --ps 2 --workers 2 -- "$program" --rule sync --epochs 3 --logdir "$dir"
run "restored checkpoint 1407 from $dir" --ps 0 --workers 3 -- "$program" --rule allreduce --epochs 5 \
  --logdir "$dir" --target 0.86
echo "ok: allreduce -> sync -> allreduce through one checkpoint directory"
