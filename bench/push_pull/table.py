#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""Turns the CSV rows of dsgd_bench_push_pull into the markdown tables of docs/benchmarks.md:
medians over the repetitions, and each dsgd variant as a ratio raw_seconds / dsgd_seconds
(1.0 = as fast as the raw-socket ping-pong of the same bytes; higher is faster)."""
import csv
import statistics
import sys
from collections import defaultdict


def mib(n):
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n / 1024:g} KiB" if n >= 1024 else f"{n} B"


def main(path):
    times = defaultdict(list)
    paired = defaultdict(list)  # (variant, bytes) -> raw/dsgd of the same repetition
    raw_of = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            key = (r["workload"], r["variant"], int(r["bytes"]))
            t = float(r["seconds"])
            times[key].append(t)
            if r["variant"] == "raw":
                raw_of[(r["workload"], int(r["bytes"]), r["rep"])] = t
            elif (r["workload"], int(r["bytes"]), r["rep"]) in raw_of:
                paired[key].append(raw_of[(r["workload"], int(r["bytes"]), r["rep"])] / t)
    med = {k: statistics.median(v) for k, v in times.items()}
    reps = max(len(v) for v in times.values())

    sizes = sorted({b for (w, _, b) in med if w == "push_pull"})
    order = ["dsgd", "dsgd_ring16m", "dsgd_tcp", "dsgd_tcp_crc", "dsgd_tcp_whole",
             "dsgd_tcp_chunk4m", "dsgd_tls"]
    variants = [v for v in order if any(("push_pull", v, b) in med for b in sizes)]
    print(f"Push + pull, medians of {reps} repetitions (ms); ratio = raw / dsgd "
          "(ratio of the medians; in brackets the median of the per-repetition ratios)\n")
    head = "| bytes | raw ms |"
    rule = "|---|---:|"
    for v in variants:
        head += f" {v} ms | ratio |"
        rule += "---:|---:|"
    print(head)
    print(rule)
    for b in sizes:
        raw = med[("push_pull", "raw", b)]
        line = f"| {mib(b)} | {raw * 1e3:.2f} |"
        for v in variants:
            k = ("push_pull", v, b)
            line += f" {med[k] * 1e3:.2f} | {raw / med[k]:.2f} ({statistics.median(paired[k]):.2f}) |"
        print(line)

    print("\nThe ps's local work per push+pull, measured alone on arrays of the same size (ms; "
          "GB/s of the bytes counted)\n")
    print("| bytes | SGD apply (12 B/float) | one CRC-32C pass (4 B/float) |")
    print("|---|---:|---:|")
    for b in sizes:
        cells = []
        for v, per in [("sgd_apply", 3), ("crc32c", 1)]:
            t = med.get(("local", v, b))
            cells.append(f"{t * 1e3:.2f} ({per * b / t / 1e9:.1f} GB/s)" if t else "")
        print(f"| {mib(b)} | " + " | ".join(cells) + " |")

    rt = sorted({v for (w, v, _) in med if w == "round_trip"}, key=lambda v: v != "raw")
    if rt:
        print("\nSmall-message round trip (4-byte payload), median microseconds per round trip\n")
        print("| variant | us | ratio raw / variant |")
        print("|---|---:|---:|")
        raw = next(med[k] for k in med if k[0] == "round_trip" and k[1] == "raw")
        for v in rt:
            t = next(med[k] for k in med if k[0] == "round_trip" and k[1] == v)
            print(f"| {v} | {t * 1e6:.1f} | {raw / t:.2f} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: table.py ROWS.csv")
    main(sys.argv[1])
