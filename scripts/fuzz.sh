#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Builds the libFuzzer targets of test/fuzz/ with clang (ASan + UBSan) in build-fuzz and runs
# each of them, bounded:
#   scripts/fuzz.sh              # DSGD_FUZZ_RUNS executions per target (default 300000), a
#                                # fifth of that for checkpoint and ctr_file (they write files)
#                                # and request_stream (each input sets up a ps task's table):
#                                # 1.98 million executions in all
#   scripts/fuzz.sh SECONDS      # each target for SECONDS seconds instead
# Fails if any target crashes, leaks, trips a sanitizer, lets an exception other than
# dsgd::error escape, breaks an invariant, or allocates above the caps (-malloc_limit_mb, and
# the per-input allocation tracker of test/fuzz/fuzz_support.cpp).
#
# Each target starts from its generated seeds (written by <target>_fuzz_replay --write-seeds)
# plus test/fuzz/corpus/<target>/, and keeps what it finds in build-fuzz/fuzz-corpus/<target>,
# so later runs start further on. Crashing inputs are saved as
# build-fuzz/fuzz-artifacts/<target>-crash-*; replay one with
#   build-fuzz/test/fuzz/<target>_fuzzer build-fuzz/fuzz-artifacts/<target>-crash-...
#
# Environment: CXX (default clang++), DSGD_FUZZ_BUILD_DIR (default build-fuzz), DSGD_FUZZ_RUNS,
# DSGD_FUZZ_SEED (libFuzzer's -seed: the same seed and corpus explore the same inputs; unset,
# a fresh random seed each run; scripts/test.sh uses 1 so that the test command is repeatable),
# DSGD_FUZZ_TARGETS (default: all nine), DSGD_FUZZ_JOBS (build parallelism; default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: scripts/fuzz.sh [seconds-per-target]" >&2
  exit 2
}
(($# <= 1)) || usage
seconds=${1:-}
if [[ -n $seconds && ! $seconds =~ ^[0-9]+$ ]]; then usage; fi

build=${DSGD_FUZZ_BUILD_DIR:-build-fuzz}
runs=${DSGD_FUZZ_RUNS:-300000}
targets=${DSGD_FUZZ_TARGETS:-"frame_header handshake control_message cluster_parsers checkpoint compressed_payload compressed_reply request_stream ctr_file collective_frame"}
jobs=${DSGD_FUZZ_JOBS:-$(nproc)}

cmake -S . -B "$build" -G Ninja \
  -DCMAKE_CXX_COMPILER="${CXX:-clang++}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
  -DDSGD_BUILD_FUZZERS=ON -DDSGD_BUILD_EXAMPLES=OFF -DDSGD_INSTALL=OFF >/dev/null
build_targets=()
for t in $targets; do build_targets+=("${t}_fuzzer" "${t}_fuzz_replay"); done
cmake --build "$build" --target "${build_targets[@]}" -j "$jobs"

# A report ends the run at once; leaks are bugs too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:halt_on_error=1:print_summary=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:print_summary=1}

# The checkpoint and ctr_file targets write their input to a file per execution: tmpfs doubles its speed.
if [[ -z ${TMPDIR:-} && -d /dev/shm && -w /dev/shm ]]; then export TMPDIR=/dev/shm; fi

mkdir -p "$build/fuzz-artifacts"
failed=()
total=0
start_all=$SECONDS
for t in $targets; do
  corpus=$build/fuzz-corpus/$t
  "$build/test/fuzz/${t}_fuzz_replay" --write-seeds "$corpus" >/dev/null
  extra=()
  [[ -d test/fuzz/corpus/$t ]] && extra+=("test/fuzz/corpus/$t")
  if [[ -n $seconds ]]; then
    bound=(-max_total_time="$seconds")
  elif [[ $t == checkpoint || $t == request_stream || $t == ctr_file ]]; then
    bound=(-runs=$((runs / 5)))
  else
    bound=(-runs="$runs")
  fi
  echo "== $t: ${bound[*]}"
  start=$SECONDS
  seed=()
  [[ -n ${DSGD_FUZZ_SEED:-} ]] && seed=(-seed="$DSGD_FUZZ_SEED")
  if "$build/test/fuzz/${t}_fuzzer" "${bound[@]}" "${seed[@]}" \
      -max_len=4096 -timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=64 \
      -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$t-" \
      "$corpus" "${extra[@]}" >"$build/fuzz-artifacts/$t.log" 2>&1; then
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/fuzz-artifacts/$t.log" | grep -o '[0-9]*$' || true)
    echo "   ok: ${execs:-?} executions in $((SECONDS - start)) s"
    total=$((total + ${execs:-0}))
  else
    echo "   FAILED after $((SECONDS - start)) s; the report (from $build/fuzz-artifacts/$t.log):"
    grep -E 'ERROR|dsgd fuzz|SUMMARY|Test unit written|terminate called|what\(\)' "$build/fuzz-artifacts/$t.log" | head -20 | sed 's/^/   /'
    failed+=("$t")
  fi
done
echo "fuzzing took $((SECONDS - start_all)) s; $total executions by the targets that passed"
if ((${#failed[@]} > 0)); then
  echo "FAILED: ${failed[*]}" >&2
  exit 1
fi
