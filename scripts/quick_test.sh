#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# The quick tier of the test command (scripts/test.sh --quick, which sets up first): what a
# change is checked with between full runs, in a few minutes on 2 cores.
#   1. scripts/format.sh --check: every C++ file formatted as .clang-format says;
#   2. in build-quick (clang at -O0 without debug information: the tests instantiate the server,
#      client and transport stacks many times over, and that compiles fastest there), only the
#      executables these tests run: the tests labelled unit, optim, cluster, device, data or
#      checkpoint (each family's unit tests, layering_test among them) and the one labelled quick
#      (the fastest end-to-end job: dsgd-launch starts 1 ps and 2 workers of dsgd-train as
#      processes over loopback TCP, one epoch of softmax regression to its accuracy);
#   3. those tests.
# Extra arguments go to ctest. DSGD_QUICK_BUILD_DIR sets the build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
scripts/format.sh --check
build=${DSGD_QUICK_BUILD_DIR:-build-quick}
labels='^(unit|optim|cluster|device|data|checkpoint|quick)$'
excluded='^(slow|gpu|consumer|compile|bench)$'
jobs=$(nproc)
CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DDSGD_ENABLE_CUDA=OFF -DDSGD_BUILD_BENCH=OFF \
  -DDSGD_BUILD_OPTIMISED_ONLY_TESTS=OFF >/dev/null
mapfile -t targets < <(scripts/test_executables.py "$build" "$labels" "$excluded")
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
echo "quick_test.sh: format check and build took $((SECONDS - start)) s"
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
ctest --test-dir "$build" -j "$jobs" --output-on-failure --timeout 600 -L "$labels" -LE "$excluded" "$@"
echo "quick_test.sh: took $((SECONDS - start)) s in all"
