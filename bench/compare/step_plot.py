# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""Draws bench/compare/step_profile.sh's rows.csv: the time of one training step of the MLP,
split into compute (forward and backward alone, in one process) and the rest (communication
and waiting), for dsgd's sync step (push then pull), push_pull, the overlapped step and PyTorch
DDP, next to a bare gloo allreduce of the same bytes. Medians over the repetitions of the mean
of the two workers' medians.

  python step_plot.py --rows DIR/rows.csv --png docs/img/step_profile.png
"""

import argparse
import csv
import statistics
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", required=True)
    p.add_argument("--png", required=True)
    p.add_argument("--title", default="")
    args = p.parse_args()
    per_rep = defaultdict(list)  # (mode, rep) -> [first value of each task], or the DDP triple
    with open(args.rows) as f:
        for r in csv.DictReader(f):
            values = [float(r[k]) for k in "abcdefg" if r[k] not in (None, "")]
            per_rep[(r["mode"], r["rep"])].append(values)

    def median_over_reps(mode, i):
        reps = [statistics.mean(t[i] for t in tasks) for (m, _), tasks in per_rep.items() if m == mode]
        return statistics.median(reps) if reps else None

    alone = median_over_reps("local", 1)
    allreduce = median_over_reps("torch_allreduce", 0)
    bars = [("dsgd sync\n(push, then pull)", median_over_reps("sync", 0), alone),
            ("dsgd push_pull\n(dsgd-train)", median_over_reps("push_pull", 0), alone),
            ("dsgd overlapped\n(trainer::overlap)", median_over_reps("overlap", 0), alone)]
    ddp_step, ddp_compute = median_over_reps("torch_ddp", 0), median_over_reps("torch_ddp", 1)
    if ddp_step is not None:
        bars.append(("PyTorch DDP\n(gloo)", ddp_step, ddp_compute))
    bars = [b for b in bars if b[1] is not None]

    fig, ax = plt.subplots(figsize=(9, 4.8))
    names = [b[0] for b in bars]
    compute = [b[2] for b in bars]
    rest = [b[1] - b[2] for b in bars]
    ax.bar(names, compute, color="tab:gray", label="compute: dsgd forward + backward alone (1 process); DDP its step under no_sync()")
    ax.bar(names, rest, bottom=compute, color=["tab:blue"] * 3 + ["tab:red"] * (len(bars) - 3),
           label="the rest of the step: communication and waiting")
    for i, b in enumerate(bars):
        ax.text(i, b[1], f"{b[1]:.2f} ms\n(rest {b[1] - b[2]:.2f})", ha="center", va="bottom", fontsize=8)
    if allreduce is not None:
        ax.axhline(alone + allreduce, color="tab:green", linestyle="--", linewidth=1,
                   label=f"compute alone + one gloo allreduce of the same bytes ({allreduce:.2f} ms)")
    ax.set_ylabel("milliseconds per step (median)")
    ax.set_ylim(0, max(b[1] for b in bars) * 1.25)
    ax.set_title(args.title or "One step of the Fashion-MNIST MLP: 2 workers x 64 examples, 1 ps, 1 thread each")
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
