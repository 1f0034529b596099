# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""Reads the event file that write_scalars writes with TensorBoard itself.

Usage: tensorboard_reads_summaries.py WRITE_SCALARS LOGDIR

Installs the `tensorboard` package from PyPI if it is missing; exits 77 (CTest's skip) if it
cannot be installed, 1 on any mismatch.
"""
import importlib
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
    check(len(events) == 1 + 100 + 10, "expected 111 events, read %d" % len(events))
    check(events and events[0].file_version == "brain.Event:2", "first event is not the version")

    acc = EventAccumulator(logdir, size_guidance={"scalars": 0})
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

    import tensorboard
    print("tensorboard %s read %d events from %s" % (tensorboard.__version__, len(events), path))
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
