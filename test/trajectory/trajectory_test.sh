#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Same model, same start, same result: PyTorch trains the MLP for a few steps in one process
# (torch_reference.py, Debian's python3-torch), then dsgd sync with 2 workers starts from the
# same parameters on the same data order and must follow the same trajectory (trajectory_job).
#   trajectory_test.sh TRAJECTORY_JOB [--steps N] [--hidden W,W]
# Exits 77 (skipped) where python3 has no torch module.
set -euo pipefail
job=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# Debian's python3-torch is for Debian's python3: prefer it to another python3 first on PATH.
py=python3
/usr/bin/python3 -c "import torch" 2>/dev/null && py=/usr/bin/python3
"$py" "$here/torch_reference.py" --out "$dir" "$@"
"$job" "$dir" "$@"
