#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Sets up a fresh Debian machine, builds everything and runs the whole test suite.
# With nvcc present the CUDA code is compiled too (sm_90) and its tests, labelled "gpu",
# report "skipped" where no GPU is found.
#   scripts/test.sh                 # everything, then a bounded run of the fuzzers
#   scripts/test.sh -L unit         # extra arguments go to ctest (and skip the fuzzers)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
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
# than with -g (scripts/sanitize.sh builds with it, for its reports).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DDSGD_ENABLE_CUDA=$cuda -DDSGD_BUILD_BENCH=ON
cmake --build "$build" -j "$jobs"
cmake --build "$build" -j "$jobs" --target all_verify_interface_header_sets
# Tasks and replicas share the cores: OpenMP threads sleep instead of spinning between kernels.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
ctest --test-dir "$build" -j "$jobs" --output-on-failure --timeout 1200 "$@"
# The libFuzzer targets, bounded (about 1.3 million executions under ASan and UBSan, clang):
# docs/reliability.md, "Fuzzing".
# A fixed seed keeps the command repeatable; scripts/fuzz.sh alone explores with fresh seeds.
if (($# == 0)); then DSGD_FUZZ_SEED=${DSGD_FUZZ_SEED:-1} scripts/fuzz.sh; fi
# ThreadSanitizer over the tests of the concurrent core: the update rules' shards (chunked pushes
# included) and a ps's event loop against clients' I/O threads. scripts/sanitize.sh tsan runs the
# whole suite the same way (docs/building.md), longer than this command's budget.
if (($# == 0)); then
  DSGD_SANITIZE_TARGETS="update_test chunked_apply_test ps_test" \
    scripts/sanitize.sh tsan -R '^(update_test|chunked_apply_test|ps_test)$'
fi
