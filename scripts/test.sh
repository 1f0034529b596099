#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Sets up a fresh Debian machine, builds everything and runs the whole test suite.
# With nvcc present the CUDA code is compiled too (sm_90) and its tests, labelled "gpu",
# report "skipped" where no GPU is found.
#   scripts/test.sh                 # everything
#   scripts/test.sh -L unit         # extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

build=${DSGD_BUILD_DIR:-build}
cuda=OFF
if command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  cuda=ON
  export PATH=$PATH:/usr/local/cuda/bin
fi
jobs=$(nproc)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSGD_ENABLE_CUDA=$cuda \
  -DDSGD_BUILD_BENCH=ON
cmake --build "$build" -j "$jobs"
cmake --build "$build" -j "$jobs" --target all_verify_interface_header_sets
ctest --test-dir "$build" -j "$jobs" --output-on-failure --timeout 1200 "$@"
