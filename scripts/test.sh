#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Sets up a fresh Debian machine, builds everything and runs the whole test suite:
#   - optimised (Release, as users build it): the examples, tools, benchmarks and CUDA code
#     (compiled with nvcc for sm_90 when present; the `gpu` tests report "skipped" without a
#     GPU), and the tests that train to an accuracy (`slow`), build a consumer project
#     (`consumer`), smoke-test a benchmark (`bench`), or check that a near-miss type does not
#     compile (`compile`);
#   - every other test twice, under AddressSanitizer + UndefinedBehaviorSanitizer and under
#     ThreadSanitizer (scripts/sanitize.sh);
#   - the libFuzzer targets, bounded (scripts/fuzz.sh).
# docs/building.md, "What the test command runs", says why the suite is split this way.
#   scripts/test.sh                 # all of the above
#   scripts/test.sh --quick         # the day-to-day tier, a few minutes: the format check and,
#                                   # built with clang at -O0 in build-quick, the unit tests of
#                                   # every family, the layering check and one end-to-end job
#   scripts/test.sh -L unit         # extra arguments: one optimised build of everything, then
#                                   # ctest with them (no sanitizers, no fuzzers)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [[ ${1:-} == --quick ]]; then
  shift
  exec scripts/quick_test.sh "$@"
fi
# The summaries test reads our event files with TensorBoard itself (PyPI); without it that test
# reports "skipped".
python3 -c "import tensorboard" 2>/dev/null ||
  python3 -m pip install --quiet tensorboard 2>/dev/null ||
  python3 -m pip install --quiet --break-system-packages tensorboard ||
  echo "test.sh: could not install tensorboard; its test will be skipped"

build=${DSGD_BUILD_DIR:-build}
cuda=OFF
if command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  cuda=ON
  export PATH=$PATH:/usr/local/cuda/bin
fi
jobs=$(nproc)
# Optimised as users build it, without debug information: the suite compiles about 40% faster
# than with -g (scripts/sanitize.sh builds with line tables, for its reports).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DDSGD_ENABLE_CUDA=$cuda -DDSGD_BUILD_BENCH=ON
# Tasks and replicas share the cores: OpenMP threads sleep instead of spinning between kernels.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
# As root the network-namespace tests must run: cut_link_test (in the sanitizer stages) fails
# instead of skipping, and the optimised stage checks its netns and Slurm tests (below).
# DSGD_ALLOW_ROOT_SKIPS=1 lets them skip, for a root without namespaces (some containers).
if [[ $(id -u) -eq 0 && ${DSGD_ALLOW_ROOT_SKIPS:-0} != 1 ]]; then
  export DSGD_REQUIRE_NETNS=1
fi
if (($# > 0)); then
  cmake --build "$build" -j "$jobs"
  ctest --test-dir "$build" -j "$jobs" --output-on-failure --timeout 1200 "$@"
  exit
fi

# Each stage says how long it took (docs/building.md, "How long it takes").
stage() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "test.sh: $name took $((SECONDS - start)) s"
}
# As root, a test labelled netns or slurm that skips fails the stage (scripts/required_tests.py):
# those tests skip only without root or a package that the set-up installs.
optimised() {
  cmake --build "$build" -j "$jobs" --target dsgd_optimised
  local junit=$PWD/$build/optimised-junit.xml
  ctest --test-dir "$build" -j "$jobs" --output-on-failure --timeout 1200 -L 'slow|gpu|consumer|bench|compile|libtorch' \
    --output-junit "$junit"
  if [[ $(id -u) -eq 0 && ${DSGD_ALLOW_ROOT_SKIPS:-0} != 1 ]]; then
    scripts/required_tests.py "$build" "$junit" netns,slurm
  fi
}
stage format scripts/format.sh --check
stage optimised optimised
# The libFuzzer targets, bounded (about 1.9 million executions under ASan and UBSan, clang):
# docs/reliability.md, "Fuzzing". A fixed seed keeps the command repeatable; scripts/fuzz.sh
# alone explores with fresh seeds.
stage fuzzers env DSGD_FUZZ_SEED="${DSGD_FUZZ_SEED:-1}" scripts/fuzz.sh
# The rest of the suite under each sanitizer (clang at -O0: docs/building.md).
# The fuzz replay tests are left out there: the fuzzers stage has run their seeds and corpus
# under the same sanitizers.
# The header checks (every public header compiled alone) are built there too: clang at -O0
# compiles them in about 0.7 of the time GCC -O2 takes (docs/building.md).
stage asan env DSGD_SANITIZE_SKIP_FUZZ_REPLAYS=1 DSGD_SANITIZE_ALSO_BUILD=all_verify_interface_header_sets \
  scripts/sanitize.sh asan
stage tsan scripts/sanitize.sh tsan
