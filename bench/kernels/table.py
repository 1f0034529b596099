#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""Turns Google Benchmark JSON from dsgd_bench_update_kernels into a markdown table of medians.

usage: table.py RESULT.json [RESULT.json ...]   (one table per file, titled by the file name)
"""
import json
import sys


def table(path):
    with open(path) as f:
        run = json.load(f)
    ctx = run["context"]
    print(f"`{path.rsplit('/', 1)[-1]}`: {ctx['num_cpus']} CPUs, "
          f"{ctx.get('mhz_per_cpu', '?')} MHz, median of "
          f"{max(b.get('repetitions', 1) for b in run['benchmarks'])} repetitions\n")
    print("| kernel | bytes/element | threads | GB/s | same-run triad GB/s | x triad |")
    print("|---|---:|---:|---:|---:|---:|")
    for b in run["benchmarks"]:
        if b.get("aggregate_name", "median") != "median":
            continue
        name = b["run_name"].split("/")[0]
        gbps = b["bytes_per_second"] / 1e9
        triad = f"{b['triad_GBps']:.2f}" if "triad_GBps" in b else ""
        ratio = f"{b['x_triad']:.2f}" if "x_triad" in b else ""
        print(f"| {name} | {int(b['bytes_per_element'])} | {int(b['threads'])} | {gbps:.2f} "
              f"| {triad} | {ratio} |")
    print()


for path in sys.argv[1:]:
    table(path)
