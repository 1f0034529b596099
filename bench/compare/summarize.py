# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""Reads the per-run CSV files of bench/compare/run.sh and writes runs.csv and summary.md.

Per run, from the chief's evaluations (one per epoch of the schedule, 60000 examples each):
  examples/s     examples trained between the first and the last evaluation over the wall time
                 between them: start-up and the first epoch's warm-up are left out; the
                 evaluations in between are left in for every system alike; eval_share says
                 how much of that time they took
  time to target wall time of the first evaluation at or above --target (clock started once the
                 variables were ready), empty when never reached
  final / best   test accuracy at the last evaluation / the best one
Per system the medians over runs, then dsgd / peer ratios of the medians.
"""

import argparse
import csv
import glob
import os
import re
import statistics

TRAIN_EXAMPLES = 60000
ORDER = ["dsgd_sync", "dsgd_sync_bf16", "dsgd_sync_top_k", "dsgd_sync_colocated",
         "dsgd_sync_bf16_colocated", "dsgd_sync_top_k_colocated", "dsgd_local_colocated",
         "dsgd_local_bf16_colocated",
         "torch_ddp", "torch_ddp_fp16", "torch_rpc_sync", "tf_ps_sync",
         "dsgd_async", "torch_rpc_async", "tf_ps_async", "dsgd_local"]


def steps_per_epoch(rule, workers, batch=64):
    shard = (TRAIN_EXAMPLES + workers - 1) // workers
    batches = (shard + batch - 1) // batch
    aggregated = workers if rule == "sync" else 1
    return (batches * workers + aggregated - 1) // aggregated


def read_run(path):
    """[(wall_s, epochs_done, eval_s or None, accuracy)] of one run's CSV (dsgd's or peers.py's)."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    points = []
    for r in rows:
        if "rule" in r:  # dsgd-train --csv
            per_epoch = steps_per_epoch(r["rule"], int(r["workers"]))
            eval_s = float(r["eval_s"]) if r.get("eval_s") else None  # older CSVs lack it
        else:  # peers.py --csv
            per_epoch = int(r["steps_per_epoch"])
            eval_s = float(r["eval_s"])
        if r.get("examples_per_step"):
            # What a global step trained, whatever the rule and batch: local SGD's averages K
            # local steps of every worker (an epoch of it is a whole number of averages, more
            # than 60000 examples: 65536 at K = 64), sync's and allreduce's one batch of each.
            epochs = int(r["global_step"]) * int(r["examples_per_step"]) / TRAIN_EXAMPLES
        elif r.get("rule") != "local":  # CSVs before the column: batch 64
            epochs = int(r["global_step"]) / per_epoch
        else:  # and local SGD's: the epoch it names, up to 9% short at K = 64
            epochs = float(r["epoch"])
        points.append((float(r["wall_s"]), epochs, eval_s, float(r["test_accuracy"])))
    return points


def run_metrics(points, target):
    first, last = points[0], points[-1]
    span = last[0] - first[0]
    examples = (last[1] - first[1]) * TRAIN_EXAMPLES
    evals = [p[2] for p in points[1:]]
    eval_share = sum(evals) / span if span > 0 and None not in evals else None
    reached = next((p[0] for p in points if p[3] >= target), None)
    return {
        "examples_per_s": examples / span if span > 0 else None,
        "eval_share": eval_share,
        "time_to_target_s": reached,
        "final_accuracy": last[3],
        "best_accuracy": max(p[3] for p in points),
        "epochs": last[1],
        "wall_s": last[0],
    }


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--dir", required=True)
    p.add_argument("--target", type=float, default=0.88)
    args = p.parse_args()
    runs = {}
    for path in sorted(glob.glob(os.path.join(args.dir, "*_r*.csv"))):
        m = re.fullmatch(r"(.+)_r(\d+)\.csv", os.path.basename(path))
        points = read_run(path)
        if not m or not points:
            continue
        runs.setdefault(m.group(1), []).append((int(m.group(2)), run_metrics(points, args.target)))
    systems = [s for s in ORDER if s in runs] + sorted(s for s in runs if s not in ORDER)

    with open(os.path.join(args.dir, "runs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["system", "rep", "examples_per_s", "eval_share", "time_to_target_s", "final_accuracy",
                    "best_accuracy", "epochs", "wall_s"])
        for s in systems:
            for rep, r in sorted(runs[s], key=lambda x: x[0]):
                w.writerow([s, rep, fmt(r["examples_per_s"], ".1f"), fmt(r["eval_share"], ".4f"),
                            fmt(r["time_to_target_s"], ".2f"), f"{r['final_accuracy']:.4f}",
                            f"{r['best_accuracy']:.4f}", f"{r['epochs']:.2f}", f"{r['wall_s']:.2f}"])

    med = {}
    for s in systems:
        rs = [r for _, r in runs[s]]
        med[s] = {
            "runs": len(rs),
            "reached": sum(r["time_to_target_s"] is not None for r in rs),
            "examples_per_s": median([r["examples_per_s"] for r in rs]),
            "eval_share": median([r["eval_share"] for r in rs]),
            # A run that never reached the target counts as infinitely slow in the median.
            "time_to_target_s": statistics.median([r["time_to_target_s"] or float("inf") for r in rs]),
            "final_accuracy": median([r["final_accuracy"] for r in rs]),
            "final_range": (min(r["final_accuracy"] for r in rs), max(r["final_accuracy"] for r in rs)),
            "best_accuracy": median([r["best_accuracy"] for r in rs]),
            "epochs": median([r["epochs"] for r in rs]),
        }
    lines = [f"| system | runs | examples/s (median) | time to {args.target} (median, reached/runs) | "
             "final accuracy (median; min-max) | best accuracy (median) | eval share |",
             "|---|---|---|---|---|---|---|"]
    for s in systems:
        m = med[s]
        t = m["time_to_target_s"]
        lines.append(f"| {s} | {m['runs']} | {fmt(m['examples_per_s'], '.0f')} | "
                     f"{'not reached' if t == float('inf') else format(t, '.1f') + ' s'} ({m['reached']}/{m['runs']}) | "
                     f"{m['final_accuracy']:.4f}; {m['final_range'][0]:.4f}-{m['final_range'][1]:.4f} | "
                     f"{m['best_accuracy']:.4f} | "
                     f"{fmt(m['eval_share'] and 100 * m['eval_share'], '.1f')}{'' if m['eval_share'] is None else ' %'} |")
    ratio_lines = []
    for mine in systems:
        if not mine.startswith("dsgd"):
            continue
        for peer in systems:
            if peer.startswith("dsgd"):
                continue
            a, b = med[mine], med[peer]
            eps = a["examples_per_s"] / b["examples_per_s"] if a["examples_per_s"] and b["examples_per_s"] else None
            ta, tb = a["time_to_target_s"], b["time_to_target_s"]
            tt = tb / ta if ta != float("inf") and tb != float("inf") else None
            ratio_lines.append(f"| {mine} / {peer} | {fmt(eps, '.2f')} | {fmt(tt, '.2f')} |")
    if ratio_lines:
        lines += ["", f"| ratio of medians | examples/s (dsgd / peer) | speed to {args.target} (peer time / dsgd time) |",
                  "|---|---|---|"] + ratio_lines
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.dir, "summary.md"), "w") as f:
        f.write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
