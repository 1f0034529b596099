#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Sets up a fresh Debian machine, builds the examples and runs the main job: the Fashion-MNIST
# MLP trained by data-parallel SGD, printing progress and the final test accuracy.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build=${DSGD_BUILD_DIR:-build-release}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_TESTS=OFF
cmake --build "$build" -j "$(nproc)" --target 02_multi_device
"$build"/examples/02_multi_device --model mlp --replicas 2 "$@"
