#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""Turns the CSV rows of dsgd_bench_fan_in into the markdown tables of docs/benchmarks.md and
docs/design.md: medians over the repetitions of pushes/s and GB/s through the ps (both
directions: S bytes pushed and S pulled per worker and step), each dsgd variant as a ratio to
the same-run raw-socket server; the servers' CPU per push and memory per connection; and the
fit of the cost model (CPU per push = c + b x bytes per ps task, memory per connection m) with
its prediction against every measured point.

  table.py FILE.csv [FILE.csv ...]"""
import csv
import re
import statistics
import sys
from collections import defaultdict


def size(n):
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n / 1024:g} KiB" if n >= 1024 else f"{n} B"


def load(paths):
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                for k in ("workers", "ps", "bytes", "threads", "rep", "steps", "rss_idle_kb", "rss_connected_kb",
                          "rss_end_kb"):
                    r[k] = int(r[k])
                for k in ("seconds", "server_cpu_s"):
                    r[k] = float(r[k])
                rows.append(r)
    return rows


def summarise(rows):
    """(rule, variant, workers, ps, bytes) -> medians and the per-repetition values."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r["rule"], r["variant"], r["workers"], r["ps"], r["bytes"])].append(r)
    out = {}
    for key, rs in groups.items():
        rule, variant, w, p, b = key
        pushes = [r["workers"] * r["steps"] / r["seconds"] for r in rs]
        out[key] = {
            "reps": len(rs),
            "steps": rs[0]["steps"],
            "threads": rs[0]["threads"],
            "pushes": statistics.median(pushes),
            "pushes_by_rep": {r["rep"]: p_ for r, p_ in zip(rs, pushes)},
            "gbs": statistics.median(2 * b * r["workers"] * r["steps"] / r["seconds"] / 1e9 for r in rs),
            "step_ms": statistics.median(r["seconds"] / r["steps"] * 1e3 for r in rs),
            # CPU of one ps task per push it receives (each push goes to every ps task)
            "cpu_us": statistics.median(r["server_cpu_s"] / (r["workers"] * r["steps"] * p) * 1e6 for r in rs),
            "cpu_step_ms": statistics.median(r["server_cpu_s"] / (r["steps"] * p) * 1e3 for r in rs),
            "busy": statistics.median(r["server_cpu_s"] / (r["seconds"] * p) for r in rs),
            "rss_idle": statistics.median(r["rss_idle_kb"] for r in rs) / p,
            "rss_connected": statistics.median(r["rss_connected_kb"] for r in rs) / p,
            "rss_end": statistics.median(r["rss_end_kb"] for r in rs) / p,
        }
    return out


def ratio(m, key, variant):
    raw = m.get((key[0], "raw") + key[2:])
    mine = m.get((key[0], variant) + key[2:])
    if not raw or not mine:
        return "-"
    paired = [mine["pushes_by_rep"][k] / raw["pushes_by_rep"][k] for k in mine["pushes_by_rep"] if k in raw["pushes_by_rep"]]
    return f"{mine['pushes'] / raw['pushes']:.2f} ({statistics.median(paired):.2f})"


def dsgd_variants(m):
    """The dsgd variants in @p m: dsgd_tcp, then dsgd, each before its "_<N>t" forms (a ps on N threads)."""
    def order(v):
        base, threads = re.fullmatch(r"(dsgd_tcp|dsgd)(?:_(\d+)t)?", v).groups()
        return (base != "dsgd_tcp", int(threads or 1))
    return sorted({k[1] for k in m if k[1] != "raw"}, key=order)


def fan_in_table(m, ps=1):
    keys = sorted(k for k in m if k[3] == ps and k[1] == "raw")
    if not keys:
        return
    reps = max(v["reps"] for v in m.values())
    variants = dsgd_variants(m)
    print(f"\nFan-in through {ps} ps task(s), medians of {reps} repetitions; pushes/s = W x steps / s, GB/s = "
          "2 x S x W x steps / s (pushed and pulled); ratio = dsgd pushes/s / raw pushes/s (in brackets the median "
          "of the per-repetition ratios); CPU = the server's CPU time per push (per exchange for raw)\n")
    head = "| rule | S | W | raw pushes/s | raw GB/s | raw CPU µs |"
    rule = "|---|---|---:|---:|---:|---:|"
    for v in variants:
        head += f" {v} pushes/s | GB/s | ratio | ps CPU µs |"
        rule += "---:|---:|---:|---:|"
    print(head)
    print(rule)
    for k in sorted(keys, key=lambda k: (k[0] != "async", k[4], k[2])):
        raw = m[k]
        line = f"| {k[0]} | {size(k[4])} | {k[2]} | {raw['pushes']:,.0f} | {raw['gbs']:.2f} | {raw['cpu_us']:.1f} |"
        for v in variants:
            d = m.get((k[0], v) + k[2:])
            line += " - | - | - | - |" if not d else (
                f" {d['pushes']:,.0f} | {d['gbs']:.2f} | {ratio(m, k, v)} | {d['cpu_us']:.1f} |")
        print(line)


def fit(m, variant="dsgd_tcp", rule="async"):  # noqa: used by fit_model
    """Least squares of CPU per push (µs) = c + b x (S / P) over every point of @p variant, each
    weighted by 1 / measured^2 (so that the relative error is what is minimised: the 4 KiB points
    fix c, the 4 MiB ones b)."""
    pts = [(k[4] / k[3], v["cpu_us"]) for k, v in m.items() if k[1] == variant and k[0] == rule]
    if len(pts) < 2:
        return None
    w = [1 / y ** 2 for _, y in pts]
    sw = sum(w)
    mx = sum(wi * x for wi, (x, _) in zip(w, pts)) / sw
    my = sum(wi * y for wi, (_, y) in zip(w, pts)) / sw
    sxx = sum(wi * (x - mx) ** 2 for wi, (x, _) in zip(w, pts))
    if sxx == 0:
        return my, 0.0
    b = sum(wi * (x - mx) * (y - my) for wi, (x, y) in zip(w, pts)) / sxx
    return my - b * mx, b


def simulation_table(m, variant="dsgd_tcp"):
    keys = sorted((k for k in m if k[1] == variant and (k[2] > 32 or k[3] > 1)), key=lambda k: (k[0], k[4], k[3], k[2]))
    if not keys:
        return
    print(f"\nMany workers ({variant}): per step, on each ps task; CPU per push = one ps task's CPU per push it "
          "receives; memory per connection = (RSS after the repetitions - RSS listening) / W, per ps task\n")
    print("| rule | S | P | W | step ms | ps CPU ms/step | ps busy | CPU µs/push | raw CPU µs | "
          "RSS listening MiB | RSS end MiB | KiB/connection |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in keys:
        d = m[k]
        raw = m.get((k[0], "raw") + k[2:])
        per = (d["rss_end"] - d["rss_idle"]) / k[2]
        print(f"| {k[0]} | {size(k[4])} | {k[3]} | {k[2]} | {d['step_ms']:.2f} | {d['cpu_step_ms']:.2f} | "
              f"{d['busy']:.0%} | {d['cpu_us']:.1f} | {raw['cpu_us']:.1f} | {d['rss_idle'] / 1024:.1f} | "
              f"{d['rss_end'] / 1024:.1f} | {per:.1f} |" if raw else "")


def memory_slope(m, variant="dsgd_tcp"):
    """KiB per connection from the RSS of one ps task at the largest and smallest W of equal S, P."""
    by = defaultdict(list)
    for k, v in m.items():
        if k[1] == variant:
            by[(k[0], k[3], k[4])].append((k[2], v["rss_end"]))
    out = []
    for key, pts in sorted(by.items()):
        pts.sort()
        if len(pts) >= 2 and pts[-1][0] > pts[0][0]:
            out.append((key, pts[0][0], pts[-1][0], (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0])))
    return out


def c_of(w, c0, c1):
    """Per-push CPU (µs) at W connections: c0 up to 32 (the connections' state in cache), c1 from
    1,024 on (measured there), log-linear in between."""
    import math
    f = min(max(math.log2(max(w, 1) / 32) / 5, 0.0), 1.0)
    return c0 + (c1 - c0) * f


def fit_model(m, variant="dsgd_tcp"):
    """c0 and b from the points of W <= 32 (async, weighted least squares), c1 from W = 1,024:
    the median over its points of (CPU per push - b x S / P)."""
    small = {k: v for k, v in m.items() if k[2] <= 32}
    f = fit(small, variant)
    if not f:
        return None
    c0, b = f
    big = [v["cpu_us"] - b * k[4] / k[3] for k, v in m.items() if k[1] == variant and k[2] >= 1024]
    c1 = statistics.median(big) if big else c0
    return c0, c1, b


def model_table(m, c0, c1, b, variant="dsgd_tcp"):
    print(f"\nModel: one ps task's CPU per step = W x (c(W) + b x S / P); c(W) = c0 = {c0:.1f} µs up to 32 "
          f"workers, c1 = {c1:.1f} µs from 1,024 on, log-linear between; b = {b * 1e3:.3f} ns per byte of S "
          "(fitted: c0 and b on async W <= 32, c1 on W = 1,024); predicted vs measured\n")
    print("| rule | S | P | W | predicted ms/step | measured ms/step | measured / predicted |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for k in sorted((k for k in m if k[1] == variant), key=lambda k: (k[0], k[4], k[3], k[2])):
        pred = k[2] * (c_of(k[2], c0, c1) + b * k[4] / k[3]) / 1e3
        meas = m[k]["cpu_step_ms"]
        print(f"| {k[0]} | {size(k[4])} | {k[3]} | {k[2]} | {pred:.3f} | {meas:.3f} | {meas / pred:.2f} |")


def threads_table(m):
    """Each "_<N>t" variant against its one-thread form, same configuration and run."""
    pairs = sorted({(k[1], re.sub(r"_\d+t$", "", k[1])) for k in m if re.search(r"_\d+t$", k[1])})
    if not pairs:
        return
    print("\nA ps on N threads against the same ps on one (serving_options::threads): pushes/s of N threads / "
          "pushes/s of one (in brackets the median of the per-repetition ratios), and the ps's CPU per push of each\n")
    print("| rule | S | P | W | variant | pushes/s ratio | CPU µs one thread | CPU µs N threads |")
    print("|---|---|---:|---:|---|---:|---:|---:|")
    for k in sorted((k for k in m if k[1] == pairs[0][1] or any(k[1] == b for _, b in pairs)),
                    key=lambda k: (k[0] != "async", k[4], k[3], k[2], k[1])):
        for threaded, base in pairs:
            if base != k[1] or (k[0], threaded) + k[2:] not in m:
                continue
            t = m[(k[0], threaded) + k[2:]]
            paired = [t["pushes_by_rep"][r] / m[k]["pushes_by_rep"][r] for r in t["pushes_by_rep"]
                      if r in m[k]["pushes_by_rep"]]
            print(f"| {k[0]} | {size(k[4])} | {k[3]} | {k[2]} | {threaded} | {t['pushes'] / m[k]['pushes']:.2f} "
                  f"({statistics.median(paired):.2f}) | {m[k]['cpu_us']:.1f} | {t['cpu_us']:.1f} |")


def main(paths):
    m = summarise(load(paths))
    threads_table(m)
    for p in sorted({k[3] for k in m}):
        if any(k[2] <= 32 for k in m if k[3] == p):
            fan_in_table({k: v for k, v in m.items() if k[2] <= 32}, p)
    simulation_table(m)
    f = fit_model(m)
    if f:
        model_table(m, *f)
    slopes = memory_slope(m)
    if slopes:
        print("\nps RSS growth per connection, from the smallest to the largest W (KiB per connection, per ps task)\n")
        print("| rule | P | S | W from | W to | KiB/connection |")
        print("|---|---:|---|---:|---:|---:|")
        for (rule, p, s), w0, w1, kib in slopes:
            print(f"| {rule} | {p} | {size(s)} | {w0} | {w1} | {kib:.1f} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
