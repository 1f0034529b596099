# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""Reads the logs of bench/ctr/run.sh (NAME_CONFIG_rREP.log) and prints the comparison table;
writes runs.csv (one row a run) and summary.csv (one row a system and configuration).

Per run, from the chief's lines (ctr_common.py lists them; dsgd-ctr prints the same):
  examples/s        the median of the progress intervals' rates, the first (warm-up) and those
                    right after an evaluation left out: the steady rate of training alone
  without input     the same medians of the rates with the chief's input time taken out
                    (tf_ps reads in its workers' tf.data pipelines, overlapped: the same figure)
  overall           examples over the whole run's time less its evaluations (start-up excluded:
                    every system starts its clock once its variables are ready)
  time to AUC       seconds of training (evaluations taken out) to the first evaluation of the
                    whole test file at or above --target; empty when never reached
  final AUC         the exact test AUC after the last step
Per system and configuration the medians over the runs, then dsgd's examples/s over the peer's
(sync peers against dsgd_sync, the others against dsgd_hybrid).
"""

import argparse
import csv
import glob
import os
import re
import statistics

ORDER = ["dsgd_hybrid", "dsgd_sync", "torch_ddp", "torch_rpc_hybrid", "torch_rpc_sync", "torchrec", "tf_ps",
         "paddle_ps"]
REFERENCE = {"torch_ddp": "dsgd_sync", "torch_rpc_sync": "dsgd_sync", "torchrec": "dsgd_sync",
             "torch_rpc_hybrid": "dsgd_hybrid", "tf_ps": "dsgd_hybrid", "paddle_ps": "dsgd_hybrid"}
PREFIX = re.compile(r"^\[(?:worker|chief):0\] ")
PROGRESS = re.compile(r"^step\s+(\d+)\s+([\d.]+) s\s+(\d+) examples/s \(\s*(\d+) without input\)")
EVAL = re.compile(r"^(final )?\s*step\s+(\d+)\s+test auc ([\d.]+)\s+logloss ([\d.]+).*?(\d+) examples in ([\d.]+) s")
FINAL = re.compile(r"^final test auc ([\d.]+) \((.*)\)")
ERROR = re.compile(r"(Error|error:|Exception|exceeded --timeout|Traceback)")


def read_run(path, examples, target):
    rates, bare, errors = [], [], []
    after_eval = True  # the first interval is the warm-up
    last_t, eval_s = 0.0, 0.0
    reached = None
    final_auc = overall = None
    with open(path, errors="replace") as f:
        for raw in f:
            line = PREFIX.sub("", raw.rstrip("\n"))
            if ERROR.search(raw):
                errors.append(raw.strip())
            m = PROGRESS.match(line)
            if m:
                if not after_eval:
                    rates.append(float(m.group(3)))
                    bare.append(float(m.group(4)))
                after_eval = False
                last_t = float(m.group(2))
                continue
            m = EVAL.match(line.strip())
            if m:
                auc, seconds = float(m.group(3)), float(m.group(6))
                if reached is None and auc >= target and not m.group(1):
                    reached = last_t - eval_s
                if not m.group(1):
                    eval_s += seconds
                after_eval = True
                continue
            m = FINAL.match(line)
            if m:
                final_auc = float(m.group(1))
                rate = float(re.search(r"([\d.]+) examples/s", m.group(2)).group(1))
                total = examples / rate  # the whole run, its intermediate evaluations in
                overall = examples / max(1e-9, total - eval_s)
                if reached is None and final_auc >= target:
                    reached = total - eval_s
    med = lambda xs: statistics.median(xs) if xs else None
    if final_auc is not None and not rates:  # too short a run for intervals: the overall rate
        rates = bare = [overall]
    error = ""
    if final_auc is None:
        error = errors[-1] if errors else "no final line (see the log)"
    return {"rate": med(rates), "bare": med(bare), "overall": overall, "time_to_target": reached,
            "final_auc": final_auc, "error": error}


def fmt(x, spec):
    return "" if x is None else format(x, spec)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", required=True)
    p.add_argument("--target", type=float, default=0.74)
    p.add_argument("--examples", type=int, default=2000000)
    p.add_argument("--configs", default="")
    p.add_argument("--systems", default="")
    args = p.parse_args()
    runs = []
    for path in sorted(glob.glob(os.path.join(args.dir, "*_r*.log"))):
        m = re.match(r"(.+)_(\d+ps-\d+M)_r(\d+)\.log$", os.path.basename(path))
        if not m:
            continue
        system, config, rep = m.group(1), m.group(2), int(m.group(3))
        if args.configs and config not in args.configs.split(","):
            continue
        if args.systems and system not in args.systems.split(","):
            continue
        r = read_run(path, args.examples, args.target)
        r.update(system=system, config=config, rep=rep)
        runs.append(r)
    keys = ["system", "config", "rep", "rate", "bare", "overall", "time_to_target", "final_auc", "error"]
    with open(os.path.join(args.dir, "runs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, keys)
        w.writeheader()
        w.writerows(runs)

    groups = {}
    for r in runs:
        groups.setdefault((r["config"], r["system"]), []).append(r)
    summary = {}
    for (config, system), rs in groups.items():
        ok = [r for r in rs if r["final_auc"] is not None]
        med = lambda k: statistics.median([r[k] for r in ok if r[k] is not None]) if any(
            r[k] is not None for r in ok) else None
        reached = [r["time_to_target"] for r in ok if r["time_to_target"] is not None]
        summary[(config, system)] = {
            "config": config, "system": system, "runs": len(rs), "ok": len(ok), "rate": med("rate"),
            "bare": med("bare"), "overall": med("overall"),
            "time_to_target": statistics.median(reached) if len(reached) == len(ok) and ok else None,
            "final_auc": med("final_auc"), "error": "" if ok else rs[-1]["error"]}
    for s in summary.values():
        ref = summary.get((s["config"], REFERENCE.get(s["system"], "")))
        s["vs"] = ref["system"] if ref else ""
        s["dsgd_ratio"] = ref["rate"] / s["rate"] if ref and ref["rate"] and s["rate"] else None
        s["dsgd_ratio_bare"] = ref["bare"] / s["bare"] if ref and ref["bare"] and s["bare"] else None
    rows = sorted(summary.values(), key=lambda s: (s["config"], ORDER.index(s["system"])
                                                   if s["system"] in ORDER else 99))
    keys = ["config", "system", "runs", "ok", "rate", "bare", "overall", "time_to_target", "final_auc", "vs",
            "dsgd_ratio", "dsgd_ratio_bare", "error"]
    with open(os.path.join(args.dir, "summary.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, keys)
        w.writeheader()
        w.writerows(rows)

    print(f"\nmedians over the runs; time to AUC {args.target} in training seconds (evaluations out); "
          f"dsgd/peer: examples/s of {'dsgd_sync or dsgd_hybrid (vs)'} over the peer's")
    print(f"| config | system | runs ok | examples/s | without input | overall | time to AUC {args.target} | "
          f"final AUC | vs | dsgd/peer | dsgd/peer without input |")
    print("|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|")
    for s in rows:
        if not s["ok"]:
            print(f"| {s['config']} | {s['system']} | 0/{s['runs']} | failed: {s['error'][:160]} |||||||")
            continue
        print(f"| {s['config']} | {s['system']} | {s['ok']}/{s['runs']} | {fmt(s['rate'], '.0f')} | "
              f"{fmt(s['bare'], '.0f')} | {fmt(s['overall'], '.0f')} | {fmt(s['time_to_target'], '.1f')} | "
              f"{fmt(s['final_auc'], '.4f')} | {s['vs']} | {fmt(s['dsgd_ratio'], '.2f')} | "
              f"{fmt(s['dsgd_ratio_bare'], '.2f')} |")
    print(f"\n{os.path.join(args.dir, 'runs.csv')}, {os.path.join(args.dir, 'summary.csv')}")


if __name__ == "__main__":
    main()
