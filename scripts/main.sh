#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Sets up a fresh Debian machine, builds the examples and runs the main job: the Fashion-MNIST
# MLP trained by synchronous data-parallel SGD on a local cluster (2 ps + 2 worker processes),
# printing progress and the final test accuracy, with checkpoints and TensorBoard summaries in
# a new directory under $build/main_job (DSGD_LOGDIR=DIR names one; an existing DIR resumes
# from its latest checkpoint). Extra arguments go to dsgd-train (e.g. --rule async,
# --epochs 15, --save-steps 500; dsgd-train --help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build=${DSGD_BUILD_DIR:-build-release}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_TESTS=OFF
cmake --build "$build" -j "$(nproc)" --target dsgd-train dsgd-launch
# Two ps tasks and two workers as processes on this machine, connected over loopback TCP with
# their payloads through shared memory; the chief (worker:0) prints progress and the final test
# accuracy, checkpoints and writes summaries into the log directory.
logdir=${DSGD_LOGDIR:-"$build/main_job/$(date +%Y%m%d-%H%M%S)"}
"$build"/tools/dsgd-launch --ps 2 --workers 2 -- "$build"/tools/dsgd-train --rule sync --epochs 10 --target 0.88 \
  --logdir "$logdir" "$@"
echo "checkpoints and summaries in $logdir; to see them: tensorboard --logdir $(dirname "$logdir")"
