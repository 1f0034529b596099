#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# soak_test: bench/soak/run.sh bounded for the test command (docs/reliability.md, "Soak"): the
# sync-with-backup main job and the exactly-once counter job, 2 ps + 4 workers each under
# dsgd-launch --max-restarts, with a few SIGKILLs of random tasks (ps, chief, worker); the same
# checks as the bench (completion, accuracy vs an undisturbed run, counters, no leaks) with
# generous bounds for a loaded 2-core machine. The kills come every 0.5 to 1.5 s and the sync job
# trains 12 epochs (about 13 s undisturbed on 2 cores), so that after the last kill a ps lives
# long enough (6 s) for the leak check to measure it.
#   soak_test.sh DSGD_LAUNCH MAIN_JOB COUNTER_JOB OUT_DIR [run.sh options to add]
set -u
[ $# -ge 4 ] || { echo "usage: $0 DSGD_LAUNCH MAIN_JOB COUNTER_JOB OUT_DIR [OPTIONS]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
LAUNCH=$1 MAIN_JOB=$2 COUNTER_JOB=$3 exec "$here/../../bench/soak/run.sh" --jobs "sync counter" --kills 8 \
  --interval 1.0 --epochs 12 --pushes 3000 --tolerance 1.5 --rss-mb 16 --fd-slack 4 --leak-min-life 6 --time-limit 400 --out "$4" "${@:5}"
