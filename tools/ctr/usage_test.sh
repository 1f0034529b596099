#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# usage_test.sh DSGD_CTR DSGD_CTR_DATA
# dsgd-ctr's command line: --help prints the usage and exits 0; every bad option exits 2 with a
# message that names it; a worker whose data file is missing or damaged exits 1 naming the file,
# before it connects to anyone (its TF_CONFIG names tasks nobody serves).
set -uo pipefail
program=$1 make_data=$2
failures=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

out=$("$program" --help 2>&1)
status=$?
if [[ $status -ne 0 ]]; then echo "FAIL: --help exited $status"; failures=$((failures + 1)); fi
for want in "usage: dsgd-ctr" "Wide & Deep" "--train FILE" "--logdir DIR" "--deltas N" "Exit status:"; do
  grep -qF -- "$want" <<<"$out" || { echo "FAIL: --help does not mention: $want"; failures=$((failures + 1)); }
done

# expect_error STATUS TEXT ARGS...: the program exits STATUS and its message contains TEXT.
expect_error() {
  local want_status=$1 want=$2
  shift 2
  local msg status
  msg=$("$program" "$@" 2>&1 >/dev/null)
  status=$?
  if [[ $status -ne $want_status ]]; then
    echo "FAIL: dsgd-ctr $*: exit $status, expected $want_status ($msg)"
    failures=$((failures + 1))
  elif ! grep -qF -- "$want" <<<"$msg"; then
    echo "FAIL: dsgd-ctr $*: message does not name '$want': $msg"
    failures=$((failures + 1))
  else
    echo "ok: dsgd-ctr $* -> $msg"
  fi
}

expect_error 2 "unknown option --bogus" --bogus
expect_error 2 "--rule sideways: expected sync, async, ssp or hybrid" --rule sideways
expect_error 2 "--staleness: a bound of --rule ssp, not hybrid" --staleness 3
expect_error 2 "--backup: backup workers need --rule hybrid" --rule sync --backup 1
expect_error 2 "--wide-optimizer adam: expected ftrl or adagrad" --wide-optimizer adam
expect_error 2 "--batch 0: expected a whole number from 1" --batch 0
expect_error 2 "--dim 0: expected a whole number from 1" --dim 0
expect_error 2 "--hidden x: expected a whole number" --hidden 64,x
expect_error 2 "--crosses 5y8: expected pairs of field numbers like 5x8,13x16" --crosses 5y8
expect_error 2 "--lr 0: expected a number in (0" --lr 0
expect_error 2 "--target 1.5:" --target 1.5
expect_error 2 "--epochs: passes over --train FILE, which is not given" --epochs 2
expect_error 2 "--train and --test: give both" --train x.ctr
expect_error 2 "--save-steps needs --logdir DIR" --save-steps 10
expect_error 2 "--deltas needs --logdir DIR" --deltas 3
expect_error 2 "--eval 0: every test example of a file; the stream needs N" --eval 0
expect_error 2 "unexpected argument stray" stray

# A worker of a cluster nobody serves: its data is checked before it connects.
export TF_CONFIG='{"cluster": {"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}, "task": {"type": "worker", "index": 0}}'
export DSGD_CLUSTER_TOKEN=t
expect_error 1 "$dir/none.ctr" --train "$dir/none.ctr" --test "$dir/none.ctr"
"$make_data" --out "$dir/good.ctr" --examples 100 >/dev/null || { echo "FAIL: dsgd-ctr-data"; failures=$((failures + 1)); }
head -c 1000 "$dir/good.ctr" >"$dir/short.ctr"
expect_error 1 "$dir/short.ctr" --train "$dir/short.ctr" --test "$dir/good.ctr"
printf 'DSGDCTR9' | dd of="$dir/good.ctr" conv=notrunc status=none
expect_error 1 "$dir/good.ctr" --train "$dir/good.ctr" --test "$dir/good.ctr"

if [[ $failures -gt 0 ]]; then echo "$failures failure(s)"; exit 1; fi
echo "all usage checks passed"
