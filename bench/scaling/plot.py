# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""Draws bench/scaling/run.sh's scaling.csv: examples/s of all workers together against the
number of workers, per update rule (the runs as dots, their medians joined), with linear
scaling from one worker and the machine's ceiling (cores x one worker's rate) for reference.

  python plot.py --csv DIR/scaling.csv --png docs/img/scaling.png --cores 2
"""

import argparse
import csv
import statistics
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--csv", required=True)
    p.add_argument("--png", required=True)
    p.add_argument("--cores", type=int, required=True)
    p.add_argument("--title", default="")
    args = p.parse_args()
    runs = defaultdict(list)
    with open(args.csv) as f:
        for r in csv.DictReader(f):
            runs[(r["rule"], int(r["workers"]))].append(float(r["examples_per_s"]))
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for rule, color in (("sync", "tab:blue"), ("async", "tab:cyan")):
        ns = sorted(n for (r, n) in runs if r == rule)
        if not ns:
            continue
        med = [statistics.median(runs[(rule, n)]) for n in ns]
        ax.plot(ns, med, marker="o", color=color, label=f"dsgd {rule} (median)")
        for n in ns:
            ax.scatter([n] * len(runs[(rule, n)]), runs[(rule, n)], color=color, s=10, alpha=0.5)
        if 1 in ns:
            one = med[ns.index(1)]
            ax.plot(ns, [n * one for n in ns], color=color, linestyle=":", linewidth=1,
                    label=f"{rule}: linear from 1 worker")
            ax.axhline(args.cores * one, color=color, linestyle="--", linewidth=1,
                       label=f"{rule}: {args.cores} cores x 1 worker")
    # Linear scaling runs off the chart long before the machine's ceiling matters: show up to a
    # little above the ceiling and the runs.
    top = max([v for vs in runs.values() for v in vs] +
              [args.cores * statistics.median(runs[(r, 1)]) for r in ("sync", "async") if (r, 1) in runs])
    ax.set_ylim(0, 1.2 * top)
    ax.set_xlabel("worker processes (1 ps)")
    ax.set_ylabel("training examples/s, all workers")
    ax.set_xticks(sorted({n for (_, n) in runs}))
    ax.set_title(args.title or f"Fashion-MNIST MLP, batch 64 per worker, {args.cores} cores")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
