#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""The markdown table of bench/solo_limit/run.sh: medians over the repetitions.

usage: table.py DIR

DIR holds models.txt (per model: its name, hidden widths, batch per worker and epochs, as run.sh
ran them) and, per model M (small, big, deep, wide) and repetition r, M_solo_rR.log (a `profile,solo,...` row
of dsgd_bench_step_profile) and the chief's CSVs M_alone_rR.csv, M_sync_rR.csv, M_async_rR.csv
and M_local_K_rR.csv, M_allreduce_rR.csv (dsgd-train --csv: one row per evaluation), and the
peers' M_torch_ddp_rR.csv and M_torch_rpc_sync_rR.csv (bench/compare/peers.py --csv). Per run:
  examples/s          examples trained by the last evaluation over its wall time
  without evaluation  the same over that time less the chief's evaluations (eval_s)
  x 2 solo, x 2 alone that rate over twice the same repetition's baseline: step_profile's solo
                      rate (batch / its mean step) and the `alone` run's rate without evaluation
  x DDP               that rate over the same repetition's torch_ddp rate without evaluation
"""
import glob
import os
import re
import statistics
import sys
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "compare"))
import summarize  # noqa: E402  (bench/compare/summarize.py: read_run)

TARGET = 0.88


def read_models(d):
    """models.txt: name -> (label "784-...-10", batch per worker)."""
    out = {}
    path = os.path.join(d, "models.txt")
    if not os.path.exists(path):
        raise SystemExit(f"table.py: {path} is missing (written by run.sh)")
    for line in open(path):
        name, hidden, batch, _ = line.split()
        out[name] = ("784-" + hidden.replace(",", "-") + "-10", int(batch))
    return out


def solo_rate(path, batch):
    for line in open(path):
        if line.startswith("profile,solo,"):
            # mean_step_ms, the last field: a rate is examples over the whole time, which the
            # median step (step_ms) would overstate by leaving the slow steps out.
            return batch / float(line.split(",")[-1]) * 1e3
    raise SystemExit(f"table.py: {path}: no 'profile,solo,' row (did dsgd_bench_step_profile fail?)")


def run(path):
    """One run's rates from its CSV, read by bench/compare/summarize.py, which knows both formats
    and counts what was trained (local SGD's from its examples_per_step)."""
    points = summarize.read_run(path)
    if not points:
        raise SystemExit(f"table.py: {path}: no evaluation rows (see the run's .log beside it)")
    wall, epochs, _, final = points[-1]
    examples = epochs * summarize.TRAIN_EXAMPLES
    evals = sum(p[2] or 0 for p in points)
    reached = [round(p[1]) for p in points if p[3] >= TARGET]
    return {"rate": examples / wall, "rate_no_eval": examples / (wall - evals),
            "final": final, "first": reached[0] if reached else None}


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    d = sys.argv[1]
    models = read_models(d)
    runs = defaultdict(list)  # (model, system) -> [per repetition]
    for path in sorted(glob.glob(os.path.join(d, "*_solo_r*.log"))):
        model, rep = re.match(r"(\w+?)_solo_r(\d+)\.log", os.path.basename(path)).groups()
        solo = solo_rate(path, models[model][1])
        alone_csv = os.path.join(d, f"{model}_alone_r{rep}.csv")
        if not os.path.exists(alone_csv):
            continue
        alone = run(alone_csv)
        ddp_csv = os.path.join(d, f"{model}_torch_ddp_r{rep}.csv")
        ddp = run(ddp_csv)["rate_no_eval"] if os.path.exists(ddp_csv) else None
        runs[(model, "solo")].append({"rate": solo, "rate_no_eval": solo, "final": None, "first": None,
                                      "x_solo": 0.5, "x_alone": 0.5 * solo / alone["rate_no_eval"], "x_ddp": None})
        for path2 in sorted(glob.glob(os.path.join(d, f"{model}_*_r{rep}.csv"))):
            system = os.path.basename(path2)[len(model) + 1:-len(f"_r{rep}.csv")]
            r = run(path2)
            r["x_solo"] = r["rate_no_eval"] / (2 * solo)
            r["x_alone"] = r["rate_no_eval"] / (2 * alone["rate_no_eval"])
            r["x_ddp"] = r["rate_no_eval"] / ddp if ddp else None
            runs[(model, system)].append(r)

    def med(rs, key, fmt):
        xs = [r[key] for r in rs if r[key] is not None]
        return format(statistics.median(xs), fmt) if xs else "-"

    def order(key):
        model, system = key
        m = re.fullmatch(r"local_(\d+)", system)
        rank = {"solo": 0, "alone": 1, "sync": 2, "allreduce": 3, "async": 4}.get(
            system, 6 if system.startswith("torch") else 5)
        return ({"small": 0, "big": 1, "deep": 2, "wide": 3}.get(model, 4), rank, int(m.group(1)) if m else 0)

    print(f"| model (batch) | system | runs | examples/s | without evaluation | x 2 solo | x 2 alone | x DDP | "
          f"final accuracy | first epoch at {TARGET} |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for key in sorted(runs, key=order):
        rs = runs[key]
        model, system = key
        label = {"solo": "solo (step_profile)", "alone": "alone (1 worker)"}.get(
            system, system.replace("local_", "local, K = "))
        # The solo baseline trains no model to evaluate.
        first = "-" if system == "solo" else ", ".join("no" if r["first"] is None else str(r["first"]) for r in rs)
        name, batch = models.get(model, (model, 0))
        print(f"| {name} ({batch}) | {label} | {len(rs)} | {med(rs, 'rate', ',.0f')} | "
              f"{med(rs, 'rate_no_eval', ',.0f')} | {med(rs, 'x_solo', '.2f')} | {med(rs, 'x_alone', '.2f')} | "
              f"{med(rs, 'x_ddp', '.2f')} | {med(rs, 'final', '.4f')} | {first} |")


if __name__ == "__main__":
    main()
