#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# resume_test.sh LAUNCHER EXAMPLE DIR
# A job of EXAMPLE (04_libtorch_cnn) with --logdir DIR trains one epoch and ends with a
# checkpoint and a TensorBoard event file there; the same job started again on DIR for two
# epochs restores that checkpoint (the monitored session over the module's views), trains only
# the second epoch, reaches 0.85, and ends with the loss and test accuracy of the same job run
# for two epochs without a stop (the values, momentum slots and data order all carried over).
set -uo pipefail
launcher=$1 example=$2 dir=$3
rm -rf "$dir"
run() {
  local out status
  out=$("$launcher" --ps 1 --workers 2 --timeout 600 -- "$example" --rule sync "$@" 2>&1)
  status=$?
  printf '%s\n' "$out"
  if [[ $status -ne 0 ]]; then echo "resume_test: the job exited with status $status"; exit 1; fi
  last_output=$out
}
# The chief's last epoch line and final accuracy, without the times and rates.
outcome() { grep -E '^\[worker:0\] (epoch  2 |final test accuracy)' <<<"$1" | sed -E 's/ +[0-9.]+ s .*(loss)/ \1/; s/ +\(.*//'; }
run --epochs 2
uninterrupted=$(outcome "$last_output")
run --epochs 1 --logdir "$dir"
ls "$dir"
# Under sync one epoch is 60000 / 2 workers / 64 = 468 global steps.
[[ -f $dir/ckpt-468.manifest ]] || { echo "resume_test: no checkpoint of step 468 in $dir"; exit 1; }
compgen -G "$dir/events.out.tfevents.*" >/dev/null || { echo "resume_test: no event file in $dir"; exit 1; }
run --epochs 2 --target 0.85 --logdir "$dir"
for line in "restored checkpoint 468 from $dir: resuming at step 468 of 936" "[worker:0] epoch  2 " \
            "final test accuracy"; do
  grep -qF -- "$line" <<<"$last_output" || { echo "resume_test: no line with: $line"; exit 1; }
done
if grep -qF -- "[worker:0] epoch  1 " <<<"$last_output"; then
  echo "resume_test: the resumed job trained epoch 1 again"; exit 1
fi
resumed=$(outcome "$last_output")
printf 'uninterrupted:\n%s\nresumed:\n%s\n' "$uninterrupted" "$resumed"
if [[ -z $resumed || $resumed != "$uninterrupted" ]]; then
  echo "resume_test: the resumed job ended elsewhere than the uninterrupted one"; exit 1
fi
rm -rf "$dir"
echo "resume_test: resumed from step 468 and finished epoch 2 where the uninterrupted job does"
