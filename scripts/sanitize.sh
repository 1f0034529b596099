#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Builds the tests, tools and examples with a sanitizer and runs the test suite under it.
#   scripts/sanitize.sh asan [ctest args]   # AddressSanitizer + LeakSanitizer + UBSan, in build-asan
#   scripts/sanitize.sh tsan [ctest args]   # ThreadSanitizer, in build-tsan
# Extra arguments go to ctest (e.g. `-R 'ps_test|asio_tcp_test'` or `-L network`).
#
# What runs: every test except those labelled `slow` (training to an accuracy target: too slow
# under a sanitizer; pass `--no-exclude-slow` first to include them), `consumer` (they build
# a separate, uninstrumented project) and `compile` (a compiler's verdict on a near-miss type,
# the same with or without instrumentation; scripts/test.sh runs them in its optimised build).
# CUDA is off, so there are no `gpu` tests: sanitizers
# do not instrument device code. tsan runs, of those, the tests labelled `threads` (dsgd code on
# several threads of one process), and builds only what they run: a data race needs two threads.
#
# Build: clang at -O0 with line tables and assertions on (no NDEBUG), so DSGD_ASSERT and
# assert() are live and every report names its file and line. -O0 because the build, not the
# run, is what costs: the tests instantiate the server and transport stacks many times over, and
# at -O0 clang compiles them with both sanitizers in about 0.6 to 0.7 of the time GCC takes for
# the optimised Release build (GCC with ASan and UBSan at -O1: 3 to 5 times it). The tests still
# finish well inside their timeouts: the arithmetic that matters runs in OpenBLAS.
#
# ThreadSanitizer and OpenMP: libgomp is not built with TSan, so TSan cannot see its barriers
# and reports races inside every parallel region. The tsan build therefore configures without
# OpenMP (-DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=ON): device::cpu falls back to Thrust's sequential
# backend, and the threads TSan checks are dsgd's own (servers, clients, replicas, the
# launcher). OpenBLAS runs single-threaded (OPENBLAS_NUM_THREADS=1) for the same reason: its
# worker threads synchronise through uninstrumented spin loops.
#
# Reports stop the test at the first error (halt_on_error / abort_on_error), so a report is a
# failed test. test/sanitizers/ holds suppression files for third-party code only (ubsan.supp:
# Thrust; tsan.supp: OpenSSL; each entry says why); dsgd code is never suppressed.
#
# Environment: DSGD_SANITIZE_SKIP_FUZZ_REPLAYS=1 (asan: leave out the `fuzz` replay tests, which
# scripts/test.sh's fuzzers stage covers), DSGD_SANITIZE_BUILD_DIR (default build-asan / build-tsan), DSGD_SANITIZE_TARGETS
# (build only these targets instead of everything, e.g. "dsgd_server_tests dsgd_transport_tests":
# a test folder's executable, test/CMakeLists.txt),
# DSGD_SANITIZE_JOBS (build jobs; default: nproc), DSGD_SANITIZE_TEST_JOBS (tests at once;
# default: twice the build jobs), CXX (compiler; default clang++).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: scripts/sanitize.sh asan|tsan [--no-exclude-slow] [ctest args...]" >&2
  exit 2
}
(($# >= 1)) || usage
kind=$1
shift
exclude='slow|consumer|gpu|compile'
build_slow=OFF  # the slow tests' executables are built only when they run
if (($# >= 1)) && [[ $1 == --no-exclude-slow ]]; then
  exclude='consumer|gpu|compile'
  build_slow=ON
  shift
fi

suppressions=$PWD/test/sanitizers
cmake_extra=()
case $kind in
  asan)
    cmake_extra+=(-DDSGD_TEST_ONLY_THREADS=OFF)
    # UBSan checks stay recoverable at compile time (no -fno-sanitize-recover=undefined) only
    # so that ubsan.supp can work: a non-recoverable check dies even when suppressed.
    # halt_on_error=1 still stops at the first report that is not suppressed.
    flags="-fsanitize=address,undefined -fno-omit-frame-pointer"
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:print_summary=1}
    ubsan_options="print_stacktrace=1:halt_on_error=1:print_summary=1"
    if [[ -s $suppressions/ubsan.supp ]]; then
      ubsan_options+=":suppressions=$suppressions/ubsan.supp"
    fi
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-$ubsan_options}
    if [[ -s $suppressions/lsan.supp ]]; then
      export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$suppressions/lsan.supp:print_suppressions=0}
    fi
    ;;
  tsan)
    flags="-fsanitize=thread -fno-omit-frame-pointer"
    # Only the tests it runs (label threads) go into the folders' shared test executables.
    cmake_extra+=(-DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=ON -DDSGD_TEST_ONLY_THREADS=ON)
    tsan_options="halt_on_error=1:second_deadlock_stack=1:history_size=4"
    if [[ -s $suppressions/tsan.supp ]]; then
      tsan_options+=":suppressions=$suppressions/tsan.supp"
    fi
    export TSAN_OPTIONS=${TSAN_OPTIONS:-$tsan_options}
    export OPENBLAS_NUM_THREADS=1
    ;;
  *) usage ;;
esac

build=${DSGD_SANITIZE_BUILD_DIR:-build-$kind}
jobs=${DSGD_SANITIZE_JOBS:-$(nproc)}
# Twice as many tests as cores: about half of the suite's run time is waiting (step and chief
# deadlines, restart backoff, processes that sleep between steps), so two tests per core keep
# the cores busy; every test's bounds are generous enough for that (docs/building.md).
test_jobs=${DSGD_SANITIZE_TEST_JOBS:-$((2 * jobs))}
# lld links the instrumented executables in about half the time of GNU ld (setup.sh installs it).
link_flags=$flags
if command -v ld.lld >/dev/null 2>&1; then
  link_flags+=" -fuse-ld=lld"
fi
cmake -S . -B "$build" -G Ninja \
  -DCMAKE_CXX_COMPILER="${CXX:-clang++}" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O0 -gline-tables-only" \
  -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$link_flags" \
  -DDSGD_ENABLE_CUDA=OFF -DDSGD_BUILD_BENCH=OFF -DDSGD_BUILD_EXAMPLES=ON \
  -DDSGD_BUILD_OPTIMISED_ONLY_TESTS=$build_slow \
  "${cmake_extra[@]}"
# ThreadSanitizer finds races between threads of one process, so it runs the tests that run
# dsgd code on several threads (label `threads`, test/CMakeLists.txt); in every other test each
# process runs dsgd on one thread (dsgd starts no threads itself; this build has no OpenMP and
# one BLAS thread), which ASan and UBSan check. Only the executables those tests run are built,
# and the folders' shared test executables hold only those tests (DSGD_TEST_ONLY_THREADS).
label=''  # the tests to run and build for: those with a label matching this (ctest -L)
if [[ $kind == tsan ]]; then
  label=threads
elif [[ ${DSGD_SANITIZE_SKIP_FUZZ_REPLAYS:-0} == 1 ]]; then
  # scripts/test.sh's fuzzers stage has just run the replays' seeds and corpus, and far more
  # mutations, under the same sanitizers: their replay programs are neither built nor run here.
  exclude+='|fuzz'
  label='.*'
fi
select=()
if [[ -n $label ]]; then select=(-L "$label"); fi
# DSGD_SANITIZE_ALSO_BUILD: more targets to build in the same ninja run (scripts/test.sh: the
# header checks, all_verify_interface_header_sets).
read -r -a also <<<"${DSGD_SANITIZE_ALSO_BUILD:-}"
if [[ -n ${DSGD_SANITIZE_TARGETS:-} ]]; then
  # shellcheck disable=SC2086  # a list of target names
  cmake --build "$build" -j "$jobs" --target ${DSGD_SANITIZE_TARGETS} "${also[@]}"
elif [[ -n $label ]]; then
  # The build's own files that the selected tests' commands run: their executables (and, through
  # their dependencies, the jobs they start).
  mapfile -t outputs < <(scripts/test_executables.py "$build" "$label" "$exclude")
  ninja -C "$build" -j "$jobs" "${outputs[@]}" "${also[@]}"
else
  cmake --build "$build" -j "$jobs"
  ((${#also[@]} == 0)) || cmake --build "$build" -j "$jobs" --target "${also[@]}"
fi

# OpenMP threads (asan build) sleep between kernels instead of spinning: tasks share the cores.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
if [[ $kind == asan ]]; then
  # One compute thread per process: ctest runs two tests per core, many of them several
  # processes, so OpenBLAS's and OpenMP's pools (a thread per core each) only take turns on
  # cores the other tests need, and OpenBLAS's idle threads spin on sched_yield. With one
  # thread each, softmax regression's accuracy test takes 8 s of CPU instead of 22 s. The code
  # is the same: a parallel region with one thread runs the whole range. (Set here, after the
  # build: nproc, and so the build's parallelism, obeys OMP_NUM_THREADS.)
  export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
fi
ctest --test-dir "$build" -j "$test_jobs" --output-on-failure -LE "$exclude" "${select[@]}" "$@"
