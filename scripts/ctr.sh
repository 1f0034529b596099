#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Sets up a fresh Debian machine, builds the CTR job and runs it: Wide & Deep (TF1's
# DNNLinearCombinedClassifier) trained on the synthetic click stream by 2 ps + 2 worker
# processes under the hybrid rule (the MLP sync, the embedding tables async), printing progress
# (examples/s, loss), the test AUC beside the teacher's (the best reachable), the tables' rows,
# with checkpoints (the tables incrementally) and TensorBoard summaries in a new directory under
# $build/ctr_job (DSGD_LOGDIR=DIR names one; an existing DIR resumes from its latest
# checkpoint). Extra arguments go to dsgd-ctr (e.g. --rule sync, --examples 10000000, --cache 2;
# dsgd-ctr --help lists them). docs/ctr.md describes the job and how to run it on the real data
# set (UCI Adult, which setup.sh fetches into data/adult).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build=${DSGD_BUILD_DIR:-build-release}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_TESTS=OFF
cmake --build "$build" -j "$(nproc)" --target dsgd-ctr dsgd-launch
logdir=${DSGD_LOGDIR:-"$build/ctr_job/$(date +%Y%m%d-%H%M%S)"}
"$build"/tools/dsgd-launch --ps 2 --workers 2 -- "$build"/tools/dsgd-ctr --rule hybrid --examples 2000000 \
  --eval-steps 500 --target 0.77 --logdir "$logdir" "$@"
echo "checkpoints and summaries in $logdir; to see them: tensorboard --logdir $(dirname "$logdir")"
