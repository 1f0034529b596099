# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""What every peer of bench/ctr shares: the .ctr reader, the wide keys, the initial values, the
exact AUC, FTRL, and the progress lines that run.sh reads (dsgd-ctr's own format).

The job is dsgd-ctr's (tools/ctr, model/wide_deep.hpp): Wide & Deep on D dense floats and F
hashed 64-bit ids per example.

  wide      one float per key: the example's F ids, its crosses (pairs of fields mixed into one
            64-bit key) and a bias key; the sum is the wide logit. FTRL (lr min(0.2, 1/sqrt(keys
            per example)), power -0.5, initial accumulator 0.1), weights from 0
  deep      16 floats per id (truncated normal, stddev 1/sqrt(16)), with the dense features the
            input of an MLP 429-256-128-1 (ReLU, Glorot uniform kernels, zero biases); Adagrad
            lr 0.05, initial accumulator 0.1
  loss      mean sigmoid cross-entropy of wide + deep; 512 examples per worker and step
  tables    key mod --rows rows (a peer's fixed-size table; dsgd's tables take any 64-bit key)
  data      worker k of K reads the contiguous records [k N / K, (k + 1) N / K) of --train in
            order, in a loop (dsgd's ctr_file_reader); the chief scores every record of --test

Progress lines (the chief), as dsgd-ctr prints them (T: seconds since the clock started,
evaluations included; an interval's rate leaves the evaluations out):
  step N  T s  X examples/s (Y without input)  loss L
  step N  test auc A  logloss B  M examples in S s
  final step N  test auc A  logloss B  M examples in S s
  final test auc A (SYSTEM, W workers, P ps, N global steps, X examples/s)
"""

import argparse
import json
import os
import sys
import time

import numpy as np

HEADER_BYTES = 64
MAGIC = b"DSGDCTR1"
BIAS_KEY = np.uint64(0x7769646562696173)  # "widebias", model::wide_deep::bias_key
CROSSES = ((5, 8), (13, 16))  # the click stream teacher's: C6 x C9, C14 x C17
BATCH = 512
DIM = 16
HIDDEN = (256, 128)
EVAL_BATCH = 4096


def one_thread():
    """One compute thread in this process (set before the frameworks start their pools)."""
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "CPU_NUM"):
        os.environ[v] = "1"


# ------------------------------------------------------------------------------------ data


def ctr_header(path):
    """(dense_features, fields, flags, examples) of a .ctr file."""
    with open(path, "rb") as f:
        h = f.read(HEADER_BYTES)
    if len(h) < HEADER_BYTES or h[:8] != MAGIC:
        raise SystemExit(f"{path}: not a .ctr file (magic {h[:8]!r})")
    version, dense, fields, flags = np.frombuffer(h, "<u4", 4, 8)
    examples = int(np.frombuffer(h, "<u8", 1, 24)[0])
    if version != 1:
        raise SystemExit(f"{path}: .ctr version {version}, expected 1")
    return int(dense), int(fields), int(flags), examples


def record_dtype(dense, fields):
    keys_at = (4 * (2 + dense) + 7) // 8 * 8
    return np.dtype({"names": ["label", "prob", "dense", "keys"],
                     "formats": ["<f4", "<f4", ("<f4", (dense,)), ("<u8", (fields,))],
                     "offsets": [0, 4, 8, keys_at], "itemsize": keys_at + 8 * fields})


def open_ctr(path):
    """The records of a .ctr file as a read-only numpy memmap (nothing is read yet)."""
    dense, fields, _, n = ctr_header(path)
    return np.memmap(path, dtype=record_dtype(dense, fields), mode="r", offset=HEADER_BYTES, shape=(n,))


class ShardReader:
    """Shard k of K of a .ctr file, contiguous records, in batches, looping (ctr_file_reader)."""

    def __init__(self, path, batch, shard=0, shards=1, loop=True):
        self.records = open_ctr(path)
        n = len(self.records)
        self.begin, self.end = shard * n // shards, (shard + 1) * n // shards
        self.batch, self.loop, self.cursor = batch, loop, self.begin

    def next(self):
        """(labels f32 [B], dense f32 [B, D], keys u64 [B, F]) copied out of the file; None at the end."""
        if self.cursor >= self.end:
            if not self.loop:
                return None
            self.cursor = self.begin
        r = self.records[self.cursor:min(self.cursor + self.batch, self.end)]
        self.cursor += len(r)
        return np.array(r["label"]), np.array(r["dense"]), np.array(r["keys"])


def test_batches(path):
    reader = ShardReader(path, EVAL_BATCH, loop=False)
    while True:
        b = reader.next()
        if b is None:
            return
        yield b


def mix64(x):
    """The splitmix64 finaliser (dsgd::detail::mix64) on a uint64 array."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
        return x ^ (x >> np.uint64(31))


_CROSS_SALT = [mix64(np.array([0x63726f7373 + c], np.uint64))[0] for c in range(len(CROSSES))]


def rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def wide_keys(keys):
    """[B, F + crosses + 1] uint64: the ids, the crosses, the bias key (model::wide_deep::wide_keys)."""
    crosses = [mix64(keys[:, a] ^ rotl(keys[:, b], 23) ^ _CROSS_SALT[c]) for c, (a, b) in enumerate(CROSSES)]
    bias = np.full(len(keys), BIAS_KEY, np.uint64)
    return np.concatenate([keys] + [c[:, None] for c in crosses] + [bias[:, None]], axis=1)


def wide_lr(fields):
    return min(0.2, 1.0 / np.sqrt(fields + len(CROSSES) + 1))


# --------------------------------------------------------------------------- initial values


def glorot_mlp(inputs, hidden=HIDDEN, seed=1):
    """[kernel0 (in x out), bias0, ...] of the MLP inputs-hidden-1: Glorot uniform, zero biases."""
    rng = np.random.default_rng(seed)
    widths = (inputs, *hidden, 1)
    params = []
    for fan_in, fan_out in zip(widths[:-1], widths[1:]):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        params.append(rng.uniform(-limit, limit, size=(fan_in, fan_out)).astype(np.float32))
        params.append(np.zeros(fan_out, np.float32))
    return params


def truncated_normal(rows, dim, stddev, seed=2):
    """rows x dim float32 of N(0, stddev) redrawn past 2 stddev (TF's truncated_normal)."""
    rng = np.random.default_rng(seed)
    out = rng.standard_normal((rows, dim), dtype=np.float32)
    bad = np.abs(out) > 2
    while bad.any():
        out[bad] = rng.standard_normal(int(bad.sum()), dtype=np.float32)
        bad = np.abs(out) > 2
    out *= stddev
    return out


# ---------------------------------------------------------------------------------- metrics


def auc(scores, labels):
    """Exact ROC AUC by ranking (ties get their average rank): the Mann-Whitney statistic."""
    scores = np.asarray(scores, np.float64)
    labels = np.asarray(labels) > 0.5
    order = np.argsort(scores, kind="mergesort")
    s = scores[order]
    ranks = np.empty(len(s), np.float64)
    # Average rank of each run of equal scores.
    starts = np.r_[0, np.flatnonzero(np.diff(s)) + 1]
    ends = np.r_[starts[1:], len(s)]
    avg = (starts + ends + 1) / 2.0  # 1-based ranks starts+1 .. ends
    ranks[order] = np.repeat(avg, ends - starts)
    pos = int(labels.sum())
    neg = len(labels) - pos
    if pos == 0 or neg == 0:
        return float("nan")
    return float((ranks[labels].sum() - pos * (pos + 1) / 2.0) / (pos * neg))


def logloss(logits, labels):
    z = np.asarray(logits, np.float64)
    y = np.asarray(labels, np.float64)
    return float(np.mean(np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))))


def evaluate(score_batch, path):
    """(auc, logloss, examples, seconds) of score_batch(dense, keys) -> logits over every test record."""
    t = time.perf_counter()
    logits, labels = [], []
    for y, dense, keys in test_batches(path):
        logits.append(np.asarray(score_batch(dense, keys), np.float32).reshape(-1))
        labels.append(y)
    z, y = np.concatenate(logits), np.concatenate(labels)
    return auc(z, y), logloss(z, y), len(y), time.perf_counter() - t


# --------------------------------------------------------------------------------- the run


def arguments(description, rules=("sync",), extra=None):
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train", "--train-file", dest="train", required=True,
                   help="a .ctr file of training examples (--train-file: paddle's launcher reads --train as its own)")
    p.add_argument("--test", required=True, help="a .ctr file of test examples (every one is scored)")
    p.add_argument("--examples", type=int, default=0, help="training examples over all workers [one pass]")
    p.add_argument("--rows", type=int, default=1_000_000, help="rows of each table: key mod R [1000000]")
    p.add_argument("--rule", choices=rules, default=rules[0])
    p.add_argument("--batch", type=int, default=BATCH)
    p.add_argument("--lr", type=float, default=0.05, help="the deep part's Adagrad rate [0.05]")
    p.add_argument("--wide-optimizer", choices=["ftrl", "adagrad"], default="ftrl",
                   help="the wide part's optimizer [ftrl]; adagrad uses --wide-lr too")
    p.add_argument("--wide-lr", type=float, default=0.0, help="[FTRL: min(0.2, 1/sqrt(29)); Adagrad: --lr]")
    p.add_argument("--log-steps", type=int, default=100, help="a progress line every N global steps")
    p.add_argument("--eval-steps", type=int, default=0, help="a test evaluation every N global steps (0: at the end)")
    p.add_argument("--seed", type=int, default=1)
    if extra:
        extra(p)
    args = p.parse_args()
    dense, fields, _, n = ctr_header(args.train)
    args.dense_features, args.fields = dense, fields
    if args.examples <= 0:
        args.examples = n
    if args.wide_lr <= 0:
        args.wide_lr = wide_lr(fields) if args.wide_optimizer == "ftrl" else args.lr
    return args


def steps_per_worker(args, workers):
    return max(1, -(-args.examples // (workers * args.batch)))


def task_from_environment():
    """(cluster, job, index) from TF_CONFIG (dsgd-launch)."""
    config = json.loads(os.environ["TF_CONFIG"])
    return config["cluster"], config["task"]["type"], int(config["task"]["index"])


class Progress:
    """The chief's progress and evaluation lines; eval time is excluded from its intervals."""

    def __init__(self, args, examples_per_step, system, printing=True):
        """printing=False: the same evaluations at the same steps, without the lines (a rank
        that takes part in a collective evaluation)."""
        self.args, self.per_step, self.system = args, examples_per_step, system
        self.printing = printing
        self.start = self.interval_start = time.perf_counter()
        self.interval_from = 0
        self.input_s = 0.0
        self.loss, self.batches = 0.0, 0
        self.eval_s = 0.0
        self.next_log = args.log_steps
        self.next_eval = args.eval_steps or None

    def input_time(self, seconds):
        self.input_s += seconds

    def step(self, step, loss, evaluate_fn):
        """After global step @p step of this worker (loss of its batch)."""
        self.loss += float(loss)
        self.batches += 1
        if self.args.log_steps and step >= self.next_log:
            now = time.perf_counter()
            seconds = now - self.interval_start
            examples = (step - self.interval_from) * self.per_step
            self.print(f"step {step:6d}  {now - self.start:7.1f} s  {examples / seconds:8.0f} examples/s "
                  f"({examples / max(1e-9, seconds - self.input_s):8.0f} without input)  "
                  f"loss {self.loss / max(1, self.batches):.4f}", flush=True)
            self.next_log = step + self.args.log_steps
            self.interval_from, self.interval_start = step, time.perf_counter()
            self.input_s, self.loss, self.batches = 0.0, 0.0, 0
        if self.next_eval is not None and step >= self.next_eval:
            self.report(step, evaluate_fn, final=False)
            self.next_eval = step + self.args.eval_steps
            self.interval_start += self.last_eval_s  # the interval runs on from where it was

    def print(self, *a, **k):
        if self.printing:
            print(*a, **k)

    def report(self, step, evaluate_fn, final):
        a, l, n, s = evaluate_fn()
        self.last_eval_s = s
        self.eval_s += s
        self.final_auc = a
        self.print(f"{'final' if final else '     '} step {step:6d}  test auc {a:.4f}  logloss {l:.4f}  "
              f"{n} examples in {s:.1f} s", flush=True)

    def finish(self, step, evaluate_fn, workers, ps):
        # As dsgd-ctr counts: the intermediate evaluations are in (summarize.py takes them out).
        seconds = time.perf_counter() - self.start
        self.report(step, evaluate_fn, final=True)
        self.print(f"final test auc {self.final_auc:.4f} ({self.system}, {workers} workers, {ps} ps, "
              f"{step} global steps, {step * self.per_step / seconds:.0f} examples/s)", flush=True)


def timed(fn):
    """(fn(), seconds)."""
    t = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t


def die(message):
    print(message, file=sys.stderr, flush=True)
    raise SystemExit(1)
