#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Same model, same start, same result: PyTorch trains the MLP for a few steps in one process
# (torch_reference.py, Debian's python3-torch), then dsgd sync with 2 workers starts from the
# same parameters on the same data order and must follow the same trajectory (trajectory_job).
#   trajectory_test.sh TRAJECTORY_JOB [--steps N] [--hidden W,W] [--rule sync|allreduce]
# Exits 77 (skipped) where python3 has no torch module.
set -euo pipefail
job=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# Both sides' matrix products are OpenBLAS's (Debian's torch links it too), whose kernels the
# CPU picks: on x86-64 they are pinned to its Haswell ones (AVX2 + FMA, on every x86-64 CI
# machine), as its Cooperlake kernels (AVX512-BF16 CPUs) round PyTorch's and dsgd's layouts
# differently enough to tip a ReLU unit at step 47 (docs/convergence.md, "Same start").
if [ "$(uname -m)" = x86_64 ] && [ -z "${OPENBLAS_CORETYPE:-}" ]; then export OPENBLAS_CORETYPE=Haswell; fi
# Debian's python3-torch is for Debian's python3: prefer it to another python3 first on PATH.
py=python3
/usr/bin/python3 -c "import torch" 2>/dev/null && py=/usr/bin/python3
# --rule R goes to the job alone (PyTorch's reference is one process either way).
args=() rule=()
while [ $# -gt 0 ]; do
  if [ "$1" = --rule ]; then rule=(--rule "$2"); shift 2; else args+=("$1"); shift; fi
done
"$py" "$here/torch_reference.py" --out "$dir" "${args[@]}"
"$job" "$dir" "${args[@]}" "${rule[@]}"
