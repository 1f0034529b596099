#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Formats the tree's C++ files (.hpp, .cpp, .cu, .cuh that git tracks, and new ones it does not
# ignore) with the style of .clang-format, by the clang-format version that scripts/setup.sh
# installs (14, Debian 12's): another version formats some lines differently.
#   scripts/format.sh           # formats in place
#   scripts/format.sh --check   # changes nothing; lists each file that is not formatted and exits 1
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format=${CLANG_FORMAT:-clang-format-14}
command -v "$clang_format" >/dev/null || {
  echo "format.sh: $clang_format not found (scripts/setup.sh installs it)" >&2
  exit 2
}
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.hpp' '*.cpp' '*.cu' '*.cuh' |
  while read -r f; do [[ -f $f ]] && echo "$f"; done)
case ${1:-} in
  --check)
    bad=()
    for f in "${files[@]}"; do
      "$clang_format" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
    done
    if ((${#bad[@]})); then
      printf 'format.sh: not formatted (scripts/format.sh formats them): %s\n' "${bad[@]}" >&2
      exit 1
    fi
    echo "format.sh: ${#files[@]} files formatted"
    ;;
  "") printf '%s\0' "${files[@]}" | xargs -0 "$clang_format" -i ;;
  *)
    echo "usage: scripts/format.sh [--check]" >&2
    exit 2
    ;;
esac
