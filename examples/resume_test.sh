#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# resume_test.sh LAUNCHER EXAMPLE DIR [PS EPOCHS TARGET [OPTION...]]
# A job of EXAMPLE (04_libtorch_cnn; PS ps tasks, 1 by default, and 2 workers) with --logdir DIR
# trains one epoch and ends with a checkpoint and a TensorBoard event file there; the same job
# started again on DIR for EPOCHS epochs (2) restores that checkpoint (the monitored session
# over the module's views), trains only the later epochs, reaches TARGET (0.85), and ends with
# the loss and test accuracy of the same job run for EPOCHS epochs without a stop, which reaches
# TARGET too (the values, momentum slots and data order all carried over). The OPTIONs go to
# every run of EXAMPLE (--batchnorm); where its workers print a digest of their buffers, every
# worker's must be the same, and the resumed job's that of the uninterrupted one.
set -uo pipefail
launcher=$1 example=$2 dir=$3 ps=${4:-1} epochs=${5:-2} target=${6:-0.85}
shift $(($# < 6 ? $# : 6))
options=("$@")
rm -rf "$dir"
run() {
  local out status
  out=$("$launcher" --ps "$ps" --workers 2 --timeout 600 -- "$example" --rule sync "${options[@]}" "$@" 2>&1)
  status=$?
  printf '%s\n' "$out"
  if [[ $status -ne 0 ]]; then echo "resume_test: the job exited with status $status"; exit 1; fi
  last_output=$out
}
last_epoch=$(printf 'epoch %2d ' "$epochs")
# The chief's last epoch line and final accuracy, without the times and rates, and the
# workers' digests of their buffers (if they print them).
outcome() {
  grep -E "^\[worker:0\] ($last_epoch|final test accuracy)" <<<"$1" | sed -E 's/ +[0-9.]+ s .*(loss)/ \1/; s/ +\(.*//'
  grep -E '^\[worker:[0-9]+\] buffers digest' <<<"$1" | sort
}
# Every worker holds the same buffers (a job without digests has none to compare).
same_buffers() {
  local digests
  digests=$(grep -E '^\[worker:[0-9]+\] buffers digest' <<<"$1" | sed -E 's/.*digest //' | sort -u | wc -l)
  if [[ $digests -gt 1 ]]; then echo "resume_test: the workers ended with different buffers"; exit 1; fi
}
run --epochs "$epochs" --target "$target"
same_buffers "$last_output"
uninterrupted=$(outcome "$last_output")
run --epochs 1 --logdir "$dir"
ls "$dir"
# Under sync one epoch is 60000 / 2 workers / 64 = 468 global steps.
[[ -f $dir/ckpt-468.manifest ]] || { echo "resume_test: no checkpoint of step 468 in $dir"; exit 1; }
compgen -G "$dir/events.out.tfevents.*" >/dev/null || { echo "resume_test: no event file in $dir"; exit 1; }
run --epochs "$epochs" --target "$target" --logdir "$dir"
same_buffers "$last_output"
for line in "restored checkpoint 468 from $dir: resuming at step 468 of $((468 * epochs))" \
            "[worker:0] $last_epoch" "final test accuracy"; do
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
echo "resume_test: resumed from step 468 and finished epoch $epochs where the uninterrupted job does"
