# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""Draws dsgd_bench_push_pull's CSV rows: push + pull against a raw-socket ping-pong of the same
bytes (raw seconds / dsgd seconds, ratio of the medians; 1.0 = as fast as raw, higher is
faster) for each variant, by message size.

  python plot.py CSV PNG
"""

import csv
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABELS = {"dsgd": "defaults (on one host: payloads through shared memory)",
          "dsgd_ring16m": "shared memory, 16 MiB rings",
          "dsgd_tcp": "TCP only (as between hosts), no payload CRC",
          "dsgd_tcp_crc": "TCP with payload CRC-32C (the default between hosts)",
          "dsgd_tcp_whole": "TCP, pushes applied whole",
          "dsgd_tcp_chunk4m": "TCP, 4 MiB chunks",
          "dsgd_tls": "TLS 1.3"}


def main(path, png):
    times = defaultdict(list)
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["workload"] == "push_pull":
                times[(r["variant"], int(r["bytes"]))].append(float(r["seconds"]))
    sizes = sorted({b for (_, b) in times})
    fig, ax = plt.subplots(figsize=(8, 4.8))
    for v, label in LABELS.items():
        points = [(b, statistics.median(times[("raw", b)]) / statistics.median(times[(v, b)]))
                  for b in sizes if (v, b) in times]
        if points:
            ax.plot([b / 2**20 for b, _ in points], [q for _, q in points], marker="o", label=label,
                    linestyle="-" if v in ("dsgd", "dsgd_tcp", "dsgd_tcp_crc", "dsgd_tls") else ":")
    ax.axhline(1.0, color="black", linewidth=1)
    ax.axhline(0.9, color="gray", linestyle="--", linewidth=1, label="target: 0.9 x raw")
    ax.set_xscale("log", base=2)
    ax.set_xticks([b / 2**20 for b in sizes], [f"{b / 2**20:g}" for b in sizes])
    ax.set_xlabel("bytes pushed and pulled (MiB)")
    ax.set_ylabel("raw-socket ping-pong time / dsgd time")
    ax.set_title("Push + pull of one variable, 1 worker and 1 ps over loopback")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py CSV PNG")
    main(sys.argv[1], sys.argv[2])
