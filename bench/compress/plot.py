#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Reads accuracy.csv (bench/compress/accuracy.sh: one line per epoch of each run, columns
# rule,encoding,pull,epoch,seconds,pushed_bytes,accuracy), prints a Markdown table per run
# (final accuracy, the first epoch at the target, the bytes pushed and wall time by then) and
# draws test accuracy against bytes pushed (log scale) and against wall time, one line per
# run, as an SVG written by hand (no plotting library). Runs repeated (accuracy.sh --repeat N)
# are reduced to the median of each epoch's seconds and accuracy.
#
#   python3 bench/compress/plot.py accuracy.csv [--svg FILE]
import argparse
import csv
import math
import statistics
from collections import defaultdict

COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf", "#000000", "#aec7e8"]


def load(path):
    runs = defaultdict(lambda: defaultdict(list))
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["rule"], row["encoding"], row["pull"])
            runs[key][int(row["epoch"])].append(
                (float(row["seconds"]), int(row["pushed_bytes"]), float(row["accuracy"])))
    series = {}
    for key, epochs in runs.items():
        points = []
        for e in sorted(epochs):
            samples = epochs[e]
            points.append((e, statistics.median(s for s, _, _ in samples),
                           statistics.median(b for _, b, _ in samples),
                           statistics.median(a for _, _, a in samples), len(samples)))
        series[key] = points
    return series


def name(key):
    rule, encoding, pull = key
    return f"{rule} {encoding}" + (f", pulls {pull}" if pull != "none" else "")


def target(key):
    return 0.87 if key[1].startswith("two_bit") else 0.88


def table(series):
    print("| run | final accuracy | first at target (epoch) | bytes pushed by then | wall s by then | runs |")
    print("|---|---:|---:|---:|---:|---:|")
    for key in sorted(series):
        pts = series[key]
        hit = next((p for p in pts if p[3] >= target(key)), None)
        at = f"{target(key):.2f} ({hit[0]})" if hit else f"{target(key):.2f} (not reached)"
        by = f"{hit[2] / 1e6:,.1f} MB" if hit else "-"
        wall = f"{hit[1]:.1f}" if hit else "-"
        print(f"| {name(key)} | {pts[-1][3]:.4f} | {at} | {by} | {wall} | {pts[-1][4]} |")


def svg(series, path):
    w, h, pad_l, pad_r, pad_t, pad_b, gap = 1100, 460, 60, 20, 30, 150, 70
    panel_w = (w - pad_l - pad_r - gap) / 2
    panel_h = h - pad_t - pad_b
    lo_acc, hi_acc = 0.80, 0.90
    all_bytes = [p[2] for pts in series.values() for p in pts if p[2] > 0]
    lo_b, hi_b = math.log10(min(all_bytes)), math.log10(max(all_bytes))
    lo_b, hi_b = math.floor(lo_b), math.ceil(hi_b)
    hi_t = max(p[1] for pts in series.values() for p in pts)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>']

    def y_of(a):
        a = min(max(a, lo_acc), hi_acc)
        return pad_t + panel_h * (1 - (a - lo_acc) / (hi_acc - lo_acc))

    panels = [
        ("test accuracy against bytes pushed (both workers, log scale)", pad_l,
         lambda p: (math.log10(max(p[2], 1)) - lo_b) / (hi_b - lo_b),
         [(10 ** k, f"1e{k}") for k in range(lo_b, hi_b + 1)], lambda v: (math.log10(v) - lo_b) / (hi_b - lo_b)),
        ("test accuracy against wall time (s)", pad_l + panel_w + gap, lambda p: p[1] / hi_t,
         [(t, f"{t:g}") for t in range(0, int(hi_t) + 1, max(1, int(hi_t / 8) // 10 * 10 or 10))],
         lambda v: v / hi_t),
    ]
    for title, x0, fx, ticks, ft in panels:
        out.append(f'<text x="{x0 + panel_w / 2}" y="{pad_t - 10}" text-anchor="middle">{title}</text>')
        out.append(f'<rect x="{x0}" y="{pad_t}" width="{panel_w}" height="{panel_h}" fill="none" stroke="#444"/>')
        for k in range(0, 11):
            a = lo_acc + k * (hi_acc - lo_acc) / 10
            y = y_of(a)
            out.append(f'<line x1="{x0}" x2="{x0 + panel_w}" y1="{y}" y2="{y}" stroke="#eee"/>')
            out.append(f'<text x="{x0 - 5}" y="{y + 4}" text-anchor="end">{a:.2f}</text>')
        for v, label in ticks:
            x = x0 + panel_w * ft(v)
            out.append(f'<line x1="{x}" x2="{x}" y1="{pad_t}" y2="{pad_t + panel_h}" stroke="#eee"/>')
            out.append(f'<text x="{x}" y="{pad_t + panel_h + 15}" text-anchor="middle">{label}</text>')
        for t in (0.87, 0.88):
            y = y_of(t)
            out.append(f'<line x1="{x0}" x2="{x0 + panel_w}" y1="{y}" y2="{y}" stroke="#999" stroke-dasharray="4 3"/>')
        for i, key in enumerate(sorted(series)):
            colour = COLOURS[i % len(COLOURS)]
            dash = ' stroke-dasharray="6 3"' if key[0] == "async" else ""
            pts = " ".join(f"{x0 + panel_w * fx(p):.1f},{y_of(p[3]):.1f}" for p in series[key])
            out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="1.5"{dash}/>')
    for i, key in enumerate(sorted(series)):
        colour = COLOURS[i % len(COLOURS)]
        col, row = i % 4, i // 4
        x, y = pad_l + col * 260, h - pad_b + 45 + row * 18
        dash = ' stroke-dasharray="6 3"' if key[0] == "async" else ""
        out.append(f'<line x1="{x}" x2="{x + 24}" y1="{y - 4}" y2="{y - 4}" stroke="{colour}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{x + 30}" y="{y}">{name(key)}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("csv")
    p.add_argument("--svg", help="write the plot here")
    a = p.parse_args()
    series = load(a.csv)
    if not series:
        raise SystemExit(f"plot.py: no runs in {a.csv}")
    table(series)
    if a.svg:
        svg(series, a.svg)
        print(f"plot: {a.svg}")


if __name__ == "__main__":
    main()
