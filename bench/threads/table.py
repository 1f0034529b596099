#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""The table of bench/threads/run.sh: per setting (default, hand_T) the median over the
repetitions of the main job's examples/s with the chief's evaluations taken out, its ratio to the
best setting's, and the final test accuracy.

    python3 bench/threads/table.py OUT_DIR
"""
import glob
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "compare"))
from summarize import TRAIN_EXAMPLES, read_run  # noqa: E402


def rate(points):
    """Examples per second of training between the first and last evaluation, evaluations out."""
    first, last = points[0], points[-1]
    evals = sum(p[2] or 0.0 for p in points[1:])
    return (last[1] - first[1]) * TRAIN_EXAMPLES / (last[0] - first[0] - evals)


def main(out):
    runs = {}
    for path in sorted(glob.glob(os.path.join(out, "*_r*.csv"))):
        setting = re.sub(r"_r\d+\.csv$", "", os.path.basename(path))
        points = read_run(path)
        if len(points) >= 2:
            runs.setdefault(setting, []).append((rate(points), points[-1][3]))
    if not runs:
        sys.exit("table.py: no runs with two evaluations in " + out)
    medians = {s: statistics.median(r for r, _ in v) for s, v in runs.items()}
    best = max(medians.values())
    print("| setting | runs | examples/s (median, evaluations out) | / best | final accuracy (median) |")
    print("|---|---:|---:|---:|---:|")
    order = sorted(runs, key=lambda s: (s != "default", int(s.split("_")[1]) if s.startswith("hand_") else 0))
    for s in order:
        label = "default (the launcher's budget)" if s == "default" else "OMP_NUM_THREADS=%s" % s.split("_")[1]
        print("| %s | %d | %.0f | %.3f | %.4f |" % (label, len(runs[s]), medians[s], medians[s] / best,
                                                  statistics.median(a for _, a in runs[s])))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
