# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""Reads the per-run CSV files of bench/compare/cnn.sh and writes cnn_runs.csv and cnn_summary.md.

Every run's chief wrote one line per evaluation (04_libtorch_cnn --csv, cnn_peers.py --csv):
  examples/s     examples trained by all workers between the first and the last evaluation over
                 the wall time between them (start-up and the first pass's warm-up left out, the
                 evaluations in between left in for every system alike); a run of several
                 processes at once (NAME_rREP_K.csv, the two solos of dsgd_solo_x2) adds theirs
  time to target wall time of the first evaluation at or above --target, from when the variables
                 were ready
  efficiency     the 2-worker examples/s over twice the same framework's solo examples/s
                 (dsgd_solo for dsgd_*, torch_solo for torch_*); for dsgd_solo_x2, two solos at
                 once, it is what the two cores allow two processes with no communication at all
  per step       the chief's forward and backward, and what follows them (the update, dsgd's
                 push_pull, the RPC push and pull; DDP's allreduce is inside its backward), in ms
Per system the medians over runs, then dsgd / best peer ratios of the medians.
"""

import argparse
import csv
import glob
import os
import re
import statistics

from summarize import fmt, median

ORDER = ["dsgd_sync", "torch_ddp", "torch_rpc_sync", "dsgd_async", "torch_rpc_async",
         "dsgd_solo", "torch_solo", "dsgd_solo_x2"]
SOLO_OF = {"dsgd": "dsgd_solo", "torch": "torch_solo"}
BATCH = 64


def workers_of(system):
    return 1 if "solo" in system else 2


def read_points(path):
    """[(wall_s, examples, accuracy, compute_s, step_s)] of one process's CSV."""
    with open(path) as f:
        return [(float(r["wall_s"]), int(r["examples"]), float(r["test_accuracy"]), float(r["compute_s"]),
                 float(r["step_s"])) for r in csv.DictReader(f)]


def run_metrics(system, parts, target):
    """The metrics of one run from its processes' points (one part unless several ran at once)."""
    rate, steps = 0.0, []
    for points in parts:
        first, last = points[0], points[-1]
        span = last[0] - first[0]
        rate += (last[1] - first[1]) / span if span > 0 else last[1] / last[0]
        per_pass = points[0][1] / workers_of(system) / BATCH  # the chief's steps in one pass
        steps += [(p[3] / per_pass, p[4] / per_pass) for p in points[1:] or points]
    points = parts[0]
    return {
        "examples_per_s": rate,
        "time_to_target_s": next((p[0] for p in points if p[2] >= target), None),
        "final_accuracy": points[-1][2],
        "epochs": len(points),
        "compute_ms": 1e3 * statistics.median(s[0] for s in steps),
        "step_ms": 1e3 * statistics.median(s[1] for s in steps),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", required=True)
    p.add_argument("--target", type=float, default=0.90)
    args = p.parse_args()
    grouped = {}
    for path in sorted(glob.glob(os.path.join(args.dir, "*_r*.csv"))):
        m = re.fullmatch(r"(.+)_r(\d+)(?:_\d+)?\.csv", os.path.basename(path))
        points = read_points(path) if m else []
        if points:
            grouped.setdefault((m.group(1), int(m.group(2))), []).append(points)
    runs = {}
    for (system, rep), parts in sorted(grouped.items()):
        runs.setdefault(system, []).append((rep, run_metrics(system, parts, args.target)))
    systems = [s for s in ORDER if s in runs] + sorted(s for s in runs if s not in ORDER)

    with open(os.path.join(args.dir, "cnn_runs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["system", "rep", "examples_per_s", "time_to_target_s", "final_accuracy", "epochs",
                    "compute_ms_per_step", "step_ms_per_step"])
        for s in systems:
            for rep, r in runs[s]:
                w.writerow([s, rep, f"{r['examples_per_s']:.1f}", fmt(r["time_to_target_s"], ".2f"),
                            f"{r['final_accuracy']:.4f}", r["epochs"], f"{r['compute_ms']:.2f}", f"{r['step_ms']:.2f}"])

    med = {}
    for s in systems:
        rs = [r for _, r in runs[s]]
        med[s] = {
            "runs": len(rs),
            "reached": sum(r["time_to_target_s"] is not None for r in rs),
            "examples_per_s": median([r["examples_per_s"] for r in rs]),
            # A run that never reached the target counts as infinitely slow in the median.
            "time_to_target_s": statistics.median([r["time_to_target_s"] or float("inf") for r in rs]),
            "final_accuracy": median([r["final_accuracy"] for r in rs]),
            "epochs": median([r["epochs"] for r in rs]),
            "compute_ms": median([r["compute_ms"] for r in rs]),
            "step_ms": median([r["step_ms"] for r in rs]),
        }
    for s in systems:
        solo = med.get(SOLO_OF.get(s.split("_")[0], ""))
        two = workers_of(s) == 2 or s.endswith("_x2")
        med[s]["efficiency"] = (med[s]["examples_per_s"] / (2 * solo["examples_per_s"])
                                if two and solo and solo["examples_per_s"] else None)

    def reached(m):
        t = m["time_to_target_s"]
        return ("not reached" if t == float("inf") else f"{t:.1f} s") + f" ({m['reached']}/{m['runs']})"

    lines = [f"| system | runs | epochs | examples/s (median) | time to {args.target} (median, reached/runs) | "
             "final accuracy (median) | efficiency | per step: compute / after it (ms, chief) |",
             "|---|---|---|---|---|---|---|---|"]
    for s in systems:
        m = med[s]
        lines.append(f"| {s} | {m['runs']} | {m['epochs']:g} | {m['examples_per_s']:.0f} | {reached(m)} | "
                     f"{m['final_accuracy']:.4f} | {fmt(m['efficiency'], '.3f')} | "
                     f"{m['compute_ms']:.2f} / {m['step_ms']:.2f} |")
    ratio_lines = []
    for mine, peers in (("dsgd_sync", ["torch_ddp", "torch_rpc_sync"]), ("dsgd_async", ["torch_rpc_async"])):
        peers = [q for q in peers if q in med]
        if mine not in med or not peers:
            continue
        best = max(peers, key=lambda q: med[q]["examples_per_s"])
        a, b = med[mine], med[best]
        eps = a["examples_per_s"] / b["examples_per_s"]
        eff = a["efficiency"] - b["efficiency"] if a["efficiency"] is not None and b["efficiency"] is not None else None
        ta, tb = a["time_to_target_s"], b["time_to_target_s"]
        tt = tb / ta if ta != float("inf") and tb != float("inf") else None
        ratio_lines.append(f"| {mine} / {best} (best peer) | {eps:.2f} | {fmt(eff, '+.3f')} | {fmt(tt, '.2f')} |")
    if ratio_lines:
        lines += ["", f"| dsgd against the best peer (medians) | examples/s ratio | efficiency difference | "
                      f"speed to {args.target} (peer time / dsgd time) |", "|---|---|---|---|"] + ratio_lines
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.dir, "cnn_summary.md"), "w") as f:
        f.write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
