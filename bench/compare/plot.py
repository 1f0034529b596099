# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""Draws bench/compare's runs: test accuracy against wall time for every run of every system
(left) and the median examples/s per system with the runs as dots (right)."""

import argparse
import glob
import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from summarize import ORDER, read_run, run_metrics, median  # noqa: E402

COLORS = {"dsgd_sync": "tab:blue", "dsgd_async": "tab:cyan", "torch_ddp": "tab:red",
          "torch_rpc_sync": "tab:orange", "torch_rpc_async": "gold", "tf_ps_sync": "tab:green",
          "tf_ps_async": "yellowgreen"}


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--dir", required=True)
    p.add_argument("--png", required=True)
    p.add_argument("--target", type=float, default=0.88)
    args = p.parse_args()
    runs = {}
    for path in sorted(glob.glob(os.path.join(args.dir, "*_r*.csv"))):
        m = re.fullmatch(r"(.+)_r(\d+)\.csv", os.path.basename(path))
        points = read_run(path)
        if m and points:
            runs.setdefault(m.group(1), []).append(points)
    systems = [s for s in ORDER if s in runs] + sorted(s for s in runs if s not in ORDER)

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [3, 2]})
    for s in systems:
        for i, points in enumerate(runs[s]):
            left.plot([q[0] for q in points], [q[3] for q in points], marker="o", markersize=3,
                      color=COLORS.get(s), alpha=0.8, label=s if i == 0 else None)
    left.axhline(args.target, color="gray", linestyle="--", linewidth=1)
    left.set_xlabel("wall time since the variables were ready (s)")
    left.set_ylabel("test accuracy (10k test set)")
    left.set_ylim(0.80, 0.90)
    left.set_title("Fashion-MNIST MLP, 2 workers x batch 64, 1 thread per process")
    left.grid(alpha=0.3)
    left.legend(fontsize=8, loc="lower right")

    rates = [[run_metrics(points, args.target)["examples_per_s"] for points in runs[s]] for s in systems]
    right.bar(range(len(systems)), [median(r) or 0 for r in rates], color=[COLORS.get(s) for s in systems])
    for i, r in enumerate(rates):
        right.plot([i] * len(r), [v or 0 for v in r], "k.", markersize=4)
    right.set_xticks(range(len(systems)))
    right.set_xticklabels(systems, rotation=30, ha="right", fontsize=8)
    right.set_ylabel("training examples/s, all workers (median; dots: runs)")
    right.set_title("throughput")
    right.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.png)), exist_ok=True)
    fig.savefig(args.png, dpi=110)
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
