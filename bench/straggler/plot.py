#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""Summarises the straggler runs of run.sh and plots test accuracy against wall time.

Reads DIR/<scenario>.csv (one line per evaluation, written by dsgd-train --csv), writes
DIR/summary.csv, prints a Markdown table and draws the four straggler scenarios into --png.

  plot.py --dir DIR --png FILE [--target 0.88]
"""
import argparse
import csv
import os
import sys

# Scenario file names, in table order, with their labels.
SCENARIOS = [
    ("sync", "sync (3 of 3)"),
    ("backup", "sync, 1 backup (2 of 3)"),
    ("async", "async"),
    ("ssp", "SSP, bounded_staleness S = 2"),
    ("verify_async_1ps", "async, no straggler, 2 workers, 1 ps"),
    ("verify_ssp_2ps", "SSP, no straggler, 2 workers, 2 ps"),
]
STRAGGLER = {"sync", "backup", "async", "ssp"}
BATCH = 64


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{path}: no evaluations (did the run fail? see its .log)")
    for line, r in enumerate(rows, start=2):
        try:
            r["wall_s"] = float(r["wall_s"])
            r["global_step"] = int(r["global_step"])
            r["test_accuracy"] = float(r["test_accuracy"])
            r["epoch"] = int(r["epoch"])
            r["workers"] = int(r["workers"])
            r["backup"] = int(r["backup"])
        except (KeyError, ValueError) as e:
            raise ValueError(f"{path}:{line}: bad row ({e})") from e
    return rows


def summarise(name, label, rows, target):
    last = rows[-1]
    reached = next((r for r in rows if r["test_accuracy"] >= target), None)
    # Gradients a step applies: sync averages workers - backup of them, async/SSP one.
    per_step = last["workers"] - last["backup"] if last["rule"] == "sync" else 1
    steps_per_s = last["global_step"] / last["wall_s"]
    return {
        "scenario": name,
        "label": label,
        "epochs": last["epoch"],
        "wall_s": round(last["wall_s"], 1),
        "global_steps": last["global_step"],
        "steps_per_s": round(steps_per_s, 1),
        "examples_per_s": round(steps_per_s * per_step * BATCH),
        "time_to_target_s": round(reached["wall_s"], 1) if reached else "",
        "epoch_at_target": reached["epoch"] if reached else "",
        "final_accuracy": round(last["test_accuracy"], 4),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--png", required=True)
    ap.add_argument("--target", type=float, default=0.88)
    args = ap.parse_args()

    runs = {}
    for name, label in SCENARIOS:
        path = os.path.join(args.dir, name + ".csv")
        if os.path.exists(path):
            runs[name] = (label, read_rows(path))
    if not runs:
        sys.exit(f"plot.py: no scenario CSV files in {args.dir}")

    summary = [summarise(n, label, rows, args.target) for n, (label, rows) in runs.items()]
    with open(os.path.join(args.dir, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(summary[0].keys()))
        w.writeheader()
        w.writerows(summary)

    print(f"| scenario | global steps/s | examples applied/s | time to {args.target} | final accuracy (epochs, wall) |")
    print("|---|---:|---:|---:|---:|")
    for s in summary:
        t = (f"{s['time_to_target_s']} s (epoch {s['epoch_at_target']})" if s["time_to_target_s"] != ""
             else f"not reached in {s['epochs']} epochs")
        print(f"| {s['label']} | {s['steps_per_s']} | {s['examples_per_s']} | {t} | "
              f"{s['final_accuracy']:.4f} ({s['epochs']}, {s['wall_s']} s) |")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    for name, (label, rows) in runs.items():
        if name not in STRAGGLER:
            continue
        ax.plot([r["wall_s"] for r in rows], [r["test_accuracy"] for r in rows], marker="o",
                markersize=3, label=label)
    ax.axhline(args.target, color="grey", linestyle="--", linewidth=1)
    ax.text(0, args.target + 0.002, f"{args.target}", color="grey", va="bottom")
    ax.set_xlabel("wall time since the variables were ready (s)")
    ax.set_ylabel("test accuracy (chief, after each epoch)")
    ax.set_ylim(0.80, 0.90)
    ax.set_xlim(left=0)
    ax.set_title("Fashion-MNIST MLP, 1 ps + 3 workers, worker:2 three times slower")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(args.png)), exist_ok=True)
    fig.savefig(args.png)
    print(f"\nplot: {args.png}")


if __name__ == "__main__":
    main()
