#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# allreduce_restart_test.sh DSGD_LAUNCH DSGD_TRAIN DIR
# A worker of a --rule allreduce job killed with SIGKILL once the first checkpoint is written:
# the other's collective fails, naming it, and exits; dsgd-launch --max-restarts starts both
# again, they resume from the last checkpoint in DIR, and the job ends at the accuracy bar.
set -uo pipefail
launch=$1 program=$2 dir=$3
rm -rf "$dir"
mkdir -p "$dir"
log=$dir/job.log
export OMP_WAIT_POLICY=passive
"$launch" --timeout 300 --ps 0 --workers 2 --max-restarts 2 -- "$program" --rule allreduce --epochs 4 \
  --logdir "$dir/ckpt" --save-steps 200 --target 0.86 >"$log" 2>&1 &
job=$!
fail() {
  echo "FAIL: $1"
  cat "$log"
  kill "$job" 2>/dev/null
  exit 1
}
for _ in $(seq 600); do  # at most 60 s for the first checkpoint
  [[ -f $dir/ckpt/ckpt-200.manifest ]] && break
  sleep 0.1
done
[[ -f $dir/ckpt/ckpt-200.manifest ]] || fail "no checkpoint 200 within 60 s"
victim=$(grep -oE '\[launcher\] worker:1 [^ ]+ pid [0-9]+' "$log" | head -1 | awk '{print $NF}')
[[ -n $victim ]] || fail "the launcher named no pid for worker:1"
kill -9 "$victim" || fail "worker:1 (pid $victim) had already ended"
wait "$job"
status=$?
cat "$log"
[[ $status -eq 0 ]] || { echo "FAIL: the job exited with status $status"; exit 1; }
for want in "worker:1 killed by signal 9" "(its predecessor) lost" "restored checkpoint" \
  "[launcher] every task exited with status 0"; do
  grep -qF -- "$want" "$log" || { echo "FAIL: no line with: $want"; exit 1; }
done
echo "ok: the allreduce job survived a killed worker and resumed from its checkpoint"
