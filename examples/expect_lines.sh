#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# expect_lines.sh TEXT... -- COMMAND ARGS...
# Runs COMMAND; passes when it exits 0 and every TEXT occurs in some line of its output. A TEXT
# written re:PATTERN is an extended regular expression some line must match instead.
set -uo pipefail
expected=()
while [[ $# -gt 0 && $1 != "--" ]]; do expected+=("$1"); shift; done
shift
output=$("$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [[ $status -ne 0 ]]; then echo "expect_lines: command exited with status $status"; exit 1; fi
for line in "${expected[@]}"; do
  if [[ $line == re:* ]]; then
    if ! grep -qE -- "${line#re:}" <<<"$output"; then echo "expect_lines: no line matches: ${line#re:}"; exit 1; fi
  elif ! grep -qF -- "$line" <<<"$output"; then
    echo "expect_lines: no line with: $line"
    exit 1
  fi
done
echo "expect_lines: all ${#expected[@]} expected lines present"
