#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# On a machine with a GPU: configures dsgd with CUDA (sm_90 unless CMAKE_CUDA_ARCHITECTURES is
# set), builds the GPU tests and runs every test labelled "gpu". A missing GPU fails the run
# here instead of skipping it. Usage: test/cuda/run_gpu_checks.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build-gpu}"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDSGD_ENABLE_CUDA=ON -DDSGD_BUILD_TESTS=ON -DDSGD_BUILD_EXAMPLES=OFF \
  ${CMAKE_CUDA_ARCHITECTURES:+-DCMAKE_CUDA_ARCHITECTURES=$CMAKE_CUDA_ARCHITECTURES}
cmake --build "$build" --target dsgd_gpu_tests --parallel
DSGD_REQUIRE_GPU=1 ctest --test-dir "$build" -L gpu --output-on-failure --no-tests=error
