#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# dsgd_ctr_data_usage_test.sh DSGD_CTR_DATA
# dsgd-ctr-data's command line: --help prints the usage and exits 0; every bad option exits 2
# with a message that names it; a written file has the documented size and --info reads it
# back; a damaged or missing file, or an --out it cannot create, exits 1 naming the file (and
# leaves no file behind).
set -uo pipefail
program=$1
failures=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

out=$("$program" --help 2>&1)
status=$?
if [[ $status -ne 0 ]]; then fail "--help exited $status"; fi
for want in "usage: dsgd-ctr-data --out PATH --examples N" "--info PATH" "--scale X" "Exit status:"; do
  grep -qF -- "$want" <<<"$out" || fail "--help does not mention: $want"
done

# expect_status STATUS TEXT ARGS...: the program exits STATUS and its message contains TEXT.
expect_status() {
  local want_status=$1 want=$2
  shift 2
  local msg status
  msg=$("$program" "$@" 2>&1 >/dev/null)
  status=$?
  if [[ $status -ne $want_status ]]; then
    fail "dsgd-ctr-data $*: exit $status, expected $want_status ($msg)"
  elif ! grep -qF -- "$want" <<<"$msg"; then
    fail "dsgd-ctr-data $*: message does not name '$want': $msg"
  else
    echo "ok: dsgd-ctr-data $* -> $(head -1 <<<"$msg")"
  fi
}

x=$scratch/x.ctr
expect_status 2 "--out PATH or --info PATH is required"
expect_status 2 "unrecognised option '--bogus'" --bogus
expect_status 2 "the required argument for option '--out' is missing" --out
expect_status 2 "--out needs --examples N" --out "$x"
expect_status 2 "too many positional options" --out "$x" --examples 3 extra
expect_status 2 "--examples 0: expected a whole number from 1" --out "$x" --examples 0
expect_status 2 "--examples -1: expected a whole number from 1" --out "$x" --examples -1
expect_status 2 "--examples 5x: expected a whole number from 1" --out "$x" --examples 5x
expect_status 2 "--seed x: expected a whole number from 0" --out "$x" --examples 5 --seed x
expect_status 2 "--part valid: expected train or test" --out "$x" --examples 5 --part valid
expect_status 2 "--start y: expected a whole number from 0" --out "$x" --examples 5 --start y
expect_status 2 "--scale 0: expected a finite number above 0" --out "$x" --examples 5 --scale 0
expect_status 2 "--scale nan: expected a finite number above 0" --out "$x" --examples 5 --scale nan
expect_status 2 "click_stream::options.cardinality_scale: must keep every cardinality at most 2^32" \
  --out "$x" --examples 5 --scale 10000
expect_status 2 "--batch 0: expected a whole number from 1 to 16777216" --out "$x" --examples 5 --batch 0
expect_status 2 "--start 18446744073709551615 --examples 5: the last example's index does not fit in 64 bits" \
  --out "$x" --examples 5 --start 18446744073709551615
expect_status 2 "--info reads a file: no --out or --examples" --info "$x" --out "$x"
if [[ -e $x ]]; then fail "a usage error left $x behind"; fi

# 1000 examples, 7 at a time: 64 + 1000 * 272 bytes (13 dense floats padded to 64 bytes, 26 keys).
if ! msg=$("$program" --out "$x" --examples 1000 --batch 7 --scale 0.01 --part test --start 50 2>&1); then
  fail "writing 1000 examples: $msg"
else
  echo "ok: $msg"
  size=$(stat -c %s "$x")
  if [[ $size -ne 272064 ]]; then fail "$x has $size bytes, expected 272064"; fi
  out=$("$program" --info "$x" 2>&1)
  status=$?
  for want in "dense_features: 13" "fields: 26" "flags: 0x00000001 (teacher probabilities)" "examples: 1000" \
    "record_bytes: 272" "teacher_auc: 0." "records: all 1000 checked"; do
    grep -qF -- "$want" <<<"$out" || fail "--info (exit $status) does not print: $want: $out"
  done
  # The same examples in one batch make the same bytes.
  "$program" --out "$scratch/y.ctr" --examples 1000 --scale 0.01 --part test --start 50 >/dev/null 2>&1
  cmp -s "$x" "$scratch/y.ctr" || fail "--batch 7 and the default batch wrote different files"
  head -c 272000 "$x" >"$scratch/short.ctr"
  expect_status 1 "$scratch/short.ctr: wrong size: a 64-byte header and 1000 examples of 272 bytes are 272064 bytes, but the file has 272000 (truncated)" \
    --info "$scratch/short.ctr"
fi
expect_status 1 "$scratch/missing.ctr: no such CTR example file" --info "$scratch/missing.ctr"
expect_status 1 "cannot create $scratch/no/such/dir.ctr: No such file or directory" \
  --out "$scratch/no/such/dir.ctr" --examples 5
if [[ -c /dev/full ]]; then  # every write to it fails with ENOSPC; the tool must not remove it
  expect_status 1 "/dev/full: No space left on device" --out /dev/full --examples 5
fi

if [[ $failures -ne 0 ]]; then
  echo "dsgd_ctr_data_usage_test: $failures failure(s)"
  exit 1
fi
if [[ -e /dev/full && ! -c /dev/full ]]; then fail "/dev/full is no longer a character device"; fi
echo "dsgd_ctr_data_usage_test: all passed"
