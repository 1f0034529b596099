#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Prints the table of docs/embeddings.md from dsgd_bench_embedding_hash_table's JSON output:
# the median rows per second of each operation and map, each against robin_map's in the same
# run, and bytes per row against the raw row (8 + 4 x dim).
#   dsgd_bench_embedding_hash_table --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
#       --benchmark_format=json > out.json && bench/embedding/table.py out.json
import json
import sys


def main() -> int:
    with open(sys.argv[1]) as f:
        runs = json.load(f)["benchmarks"]
    median = {}
    for r in runs:
        if r.get("aggregate_name", "median") == "median":
            # "update/robin_map/16/min_time:0.500": the name without the run's settings
            name = "/".join(p for p in r["run_name"].split("/") if ":" not in p)
            median[name] = r
    print("| operation | map | dim | rows/s (median) | vs robin_map | bytes/row | vs raw (8 + 4 dim) |")
    print("|---|---|---|---|---|---|---|")
    for name, r in median.items():
        op, table, dim = name.split("/")
        base = median.get(f"{'update' if op == 'train' else op}/robin_map/{dim}")  # train: the push's bare map
        ratio = r["items_per_second"] / base["items_per_second"] if base else float("nan")
        bytes_row = f"{r['bytes_per_row']:.1f}" if "bytes_per_row" in r else ""
        vs_raw = f"{r['vs_raw']:.2f}x" if "vs_raw" in r else ""
        print(f"| {op} | {table} | {dim} | {r['items_per_second'] / 1e6:.1f} M | {ratio:.2f}x | {bytes_row} | {vs_raw} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
