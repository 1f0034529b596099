#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""Turns Google Benchmark JSON from dsgd_bench_update_rules into the markdown tables of
docs/benchmarks.md (medians over the repetitions).

usage: table.py RESULT.json [RESULT.json ...]

Per file and shard size: one row per rule and optimizer, one cell per worker count holding
"gradient GB/s absorbed / x triad", then the model's ceiling of x triad; then the share of the
workers' time spent inside pull(); then the pull_only (snapshot copy) rows.
"""
import json
import sys
from collections import defaultdict


def size(n):
    return f"{n >> 20} Mi floats ({4 * n >> 20} MiB)" if n >= 1 << 20 else \
        f"{n >> 10} Ki floats ({4 * n >> 10} KiB)"


def ceiling(values):
    lo, hi = min(values), max(values)
    return f"{lo:.2f}" if abs(hi - lo) < 0.005 else f"{lo:.2f}-{hi:.2f}"


def tables(path):
    with open(path) as f:
        run = json.load(f)
    ctx = run["context"]
    rows = defaultdict(dict)  # (elements, rule, optimizer) -> workers -> benchmark
    reps = 1
    for b in run["benchmarks"]:
        if b.get("aggregate_name", "median") != "median":
            continue
        reps = max(reps, b.get("repetitions", 1))
        rule, opt, elements, workers = b["run_name"].split("/")[:4]
        rows[(int(elements.split(":")[1]), rule, opt)][int(workers.split(":")[1])] = b
    print(f"`{path.rsplit('/', 1)[-1]}`: {ctx['num_cpus']} CPUs, kernel threads "
          f"{ctx.get('kernel_threads', '?')}, load average "
          f"{', '.join(f'{x:.1f}' for x in ctx.get('load_avg', []))} at the start, median of {reps} repetitions\n")
    workers = sorted({w for r in rows.values() for w in r})
    for elements in sorted({k[0] for k in rows}):
        keys = [k for k in rows if k[0] == elements]
        triads = [b["triad_GBps"] for k in keys for b in rows[k].values() if "triad_GBps" in b]
        print(f"Shard of {size(elements)}; same-run triad {min(triads):.1f} to {max(triads):.1f} GB/s. "
              f"Cells: gradient GB/s absorbed / x triad.\n")
        print("| rule | optimizer | " + " | ".join(f"W={w}" for w in workers) + " | model ceiling |")
        print("|---|---|" + "---:|" * (len(workers) + 1))
        for k in keys:
            if k[1] == "pull_only":
                continue
            cells = []
            for w in workers:
                b = rows[k].get(w)
                cells.append(f"{b['bytes_per_second'] / 1e9:.2f} / {b['x_triad']:.2f}" if b else "")
            model = ceiling([b["model_x_triad"] for b in rows[k].values()])
            print(f"| {k[1]} | {k[2]} | " + " | ".join(cells) + f" | {model} |")
        print()
        print(f"Share of the workers' time inside pull() (waiting included), shard of {size(elements)}:\n")
        print("| rule | optimizer | " + " | ".join(f"W={w}" for w in workers) + " |")
        print("|---|---|" + "---:|" * len(workers))
        for k in keys:
            if k[1] == "pull_only":
                continue
            cells = [f"{rows[k][w]['pull_share']:.2f}" if w in rows[k] and "pull_share" in rows[k][w] else ""
                     for w in workers]
            print(f"| {k[1]} | {k[2]} | " + " | ".join(cells) + " |")
        print()
    snap = sorted(k for k in rows if k[1] == "pull_only")
    if snap:
        print("pull_only: snapshot bytes delivered per second / x triad (model ceiling 0.50).\n")
        print("| shard | " + " | ".join(f"W={w}" for w in workers) + " |")
        print("|---|" + "---:|" * len(workers))
        for k in snap:
            cells = [f"{rows[k][w]['bytes_per_second'] / 1e9:.2f} / {rows[k][w]['x_triad']:.2f}"
                     if w in rows[k] else "" for w in workers]
            print(f"| {size(k[0])} | " + " | ".join(cells) + " |")
        print()


for p in sys.argv[1:]:
    tables(p)
