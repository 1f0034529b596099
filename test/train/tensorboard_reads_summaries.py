# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""Reads the event file that write_scalars writes (scalars and histograms) with TensorBoard itself.

Usage: tensorboard_reads_summaries.py WRITE_SCALARS LOGDIR

Installs the `tensorboard` package from PyPI if it is missing; exits 77 (CTest's skip) if it
cannot be installed, 1 on any mismatch.
"""
import importlib
import math
import shutil
import struct
import subprocess
import sys

SKIP = 77


def ensure_tensorboard():
    try:
        importlib.import_module("tensorboard")
        return True
    except ImportError:
        pass
    print("tensorboard is not installed; running: python3 -m pip install --quiet tensorboard")
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "tensorboard"])
    if result.returncode != 0:
        return False
    importlib.invalidate_caches()
    try:
        importlib.import_module("tensorboard")
        return True
    except ImportError:
        return False


def f32(x):
    """x rounded to float32, as the C++ side stores it."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    tool, logdir = sys.argv[1], sys.argv[2]
    if not ensure_tensorboard():
        print("SKIP: the tensorboard package is not available and could not be installed")
        return SKIP

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.tensorflow_stub import pywrap_tensorflow

    shutil.rmtree(logdir, ignore_errors=True)
    path = subprocess.run([tool, logdir], check=True, capture_output=True, text=True).stdout.strip()

    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    # Every record through TensorBoard's own TFRecord reader, which checks both masked CRCs
    # and raises DataLossError on a mismatch (EventAccumulator would only log it and stop).
    reader = pywrap_tensorflow.PyRecordReader_New(path.encode())
    events = []
    while True:
        try:
            reader.GetNext()
        except Exception as e:  # OutOfRangeError at the end; DataLossError is a failure
            check(type(e).__name__ == "OutOfRangeError", "record %d: %r" % (len(events), e))
            break
        events.append(event_pb2.Event.FromString(reader.record()))
    check(len(events) == 1 + 100 + 10 + 3, "expected 114 events, read %d" % len(events))
    check(events and events[0].file_version == "brain.Event:2", "first event is not the version")

    acc = EventAccumulator(logdir, size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    tags = sorted(acc.Tags()["scalars"])
    check(tags == ["accuracy", "loss", "lr"], "scalar tags are %s" % tags)

    expected = {
        "loss": [(s, f32(1.0 / (1.0 + s))) for s in range(100)],
        "accuracy": [(s, f32(s / 100.0)) for s in range(0, 100, 10)],
        "lr": [(s, 0.125) for s in range(0, 100, 10)],
    }
    for tag, want in expected.items():
        got = [(e.step, e.value) for e in acc.Scalars(tag)] if tag in tags else []
        check(len(got) == len(want), "%s: %d values, expected %d" % (tag, len(got), len(want)))
        for (gs, gv), (ws, wv) in zip(got, want):
            # float32 1/(1+s) computed in C++ may differ from the float64-then-rounded value
            # by one ulp, so compare to float32 precision.
            check(gs == ws and abs(gv - wv) <= 1e-7 * max(1.0, abs(wv)),
                  "%s: (%d, %r), expected (%d, %r)" % (tag, gs, gv, ws, wv))
    wall = [e.wall_time for e in acc.Scalars("loss")] if "loss" in tags else []
    check(all(b >= a for a, b in zip(wall, wall[1:])), "wall times go backwards")

    # Histograms: TensorBoard's HistogramValue against figures computed here from the same
    # float32 values, with 30 equal-width buckets (left, right] from min to max.
    htags = sorted(acc.Tags()["histograms"])
    check(htags == ["bias", "weights"], "histogram tags are %s" % htags)

    def expected_histogram(values, buckets=30):
        lo, hi = min(values), max(values)
        if lo == hi:
            buckets = 1
        width = (hi - lo) / buckets
        limits = [lo + width * (b + 1) for b in range(buckets)]
        limits[-1] = hi
        counts = [0.0] * buckets
        for v in values:
            counts[next(b for b, limit in enumerate(limits) if v <= limit)] += 1
        return lo, hi, float(len(values)), math.fsum(values), math.fsum(v * v for v in values), limits, counts

    want_histograms = {
        "weights": [(s, [f32(math.sin(i) * (1.0 + s / 50.0)) for i in range(1000)]) for s in (0, 50)],
        "bias": [(99, [-0.25])],
    }
    for tag, want in want_histograms.items():
        got = acc.Histograms(tag) if tag in htags else []
        check(len(got) == len(want), "%s: %d histograms, expected %d" % (tag, len(got), len(want)))
        for event, (step, values) in zip(got, want):
            h = event.histogram_value
            lo, hi, num, total, squares, limits, counts = expected_histogram(values)
            check(event.step == step, "%s: step %d, expected %d" % (tag, event.step, step))
            check((h.min, h.max, h.num) == (lo, hi, num),
                  "%s@%d: min, max, num %r, expected %r" % (tag, step, (h.min, h.max, h.num), (lo, hi, num)))
            # The C++ side sums in order; fsum is exact: allow the rounding of 1000 additions.
            check(abs(h.sum - total) <= 1e-9 * max(1.0, squares) and abs(h.sum_squares - squares) <= 1e-9 * squares,
                  "%s@%d: sum %r, sum_squares %r, expected %r, %r" % (tag, step, h.sum, h.sum_squares, total, squares))
            check(list(h.bucket_limit) == limits, "%s@%d: bucket limits %r" % (tag, step, list(h.bucket_limit)))
            check(list(h.bucket) == counts, "%s@%d: bucket counts %r, expected %r" % (tag, step, list(h.bucket), counts))

    import tensorboard
    print("tensorboard %s read %d events from %s" % (tensorboard.__version__, len(events), path))
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
