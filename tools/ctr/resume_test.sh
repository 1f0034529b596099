#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# resume_test.sh LAUNCHER DSGD_CTR DIR
# The CTR job under sync (1 ps, 2 workers, the click stream) with --logdir DIR trains half its
# examples, checkpointing every 30 global steps with two incremental checkpoints (the tables'
# changed rows) between full ones; started again on DIR for all its examples, it restores the
# last checkpoint (a delta: its tables read from their full base and each delta), trains only
# the second half, and ends with exactly the test AUC and log loss of the same job run without a
# stop (sync is deterministic: the values, Adagrad's and FTRL's slots, the tables' rows and the
# data order all carried over).
set -uo pipefail
launcher=$1 program=$2 dir=$3
rm -rf "$dir"
options=(--rule sync --batch 256 --hidden 64,32 --eval 20000 --log-steps 50)
run() {
  local out status
  out=$("$launcher" --ps 1 --workers 2 --timeout 300 -- "$program" "${options[@]}" "$@" 2>&1)
  status=$?
  printf '%s\n' "$out"
  if [[ $status -ne 0 ]]; then echo "resume_test: the job exited with status $status"; exit 1; fi
  last_output=$out
}
final_line() { grep -E '^\[worker:0\] final step' <<<"$1" | sed -E 's/ +[0-9]+ examples in .*//'; }
# 2 workers x 256 examples a step: 300 global steps, 150 in the first half.
run --examples 153600
uninterrupted=$(final_line "$last_output")
run --examples 76800 --logdir "$dir" --save-steps 30 --deltas 2
ls "$dir"
grep -qx "tables_delta_of 30" "$dir/ckpt-60.manifest" ||
  { echo "resume_test: checkpoint 60 is not a delta of 30"; exit 1; }
grep -q "tables_delta_of" "$dir/ckpt-120.manifest" && { echo "resume_test: checkpoint 120 is not full"; exit 1; }
grep -qx "tables_delta_of 120" "$dir/ckpt-150.manifest" ||
  { echo "resume_test: the last checkpoint, 150, is not a delta of 120"; exit 1; }
compgen -G "$dir/events.out.tfevents.*" >/dev/null || { echo "resume_test: no event file in $dir"; exit 1; }
run --examples 153600 --logdir "$dir" --save-steps 30 --deltas 2
grep -qF "restored checkpoint 150 from $dir: resuming at step 150 of 300" <<<"$last_output" ||
  { echo "resume_test: the job did not resume from checkpoint 150"; exit 1; }
if grep -qE '^\[worker:0\] step +50 ' <<<"$last_output"; then
  echo "resume_test: the resumed job trained the first half again"; exit 1
fi
resumed=$(final_line "$last_output")
printf 'uninterrupted: %s\nresumed:       %s\n' "$uninterrupted" "$resumed"
if [[ -z $resumed || $resumed != "$uninterrupted" ]]; then
  echo "resume_test: the resumed job ended elsewhere than the uninterrupted one"; exit 1
fi
echo "resume_test: resumed from an incremental checkpoint and ended as the uninterrupted job"
