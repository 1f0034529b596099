# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""dsgd-ctr's Wide & Deep on PaddlePaddle's parameter server (fleet, the_one_ps), for bench/ctr.

As Paddle's parameter-server guide writes a CTR job: a static program, fleet.init(is_collective=
False), a DistributedStrategy (a_sync False: sync; a_sync True: async; a_sync with k_steps: geo),
the tables as paddle.static.nn.sparse_embedding (sparse tables on the servers, any 64-bit id:
the raw keys, no key mod R), the MLP's variables dense on the servers, fleet.distributed_optimizer
over Adagrad (Paddle's PS has no FTRL: the wide table trains with Adagrad), the servers running
fleet.run_server(), the trainers exe.run() per batch after fleet.init_worker(). Trainer 0
scores the test file with its program's current values.

  python -m paddle.distributed.launch --server_num 1 --worker_num 2 paddle_ps.py \\
      --train F.ctr --test G.ctr --rule sync|async|geo --wide-optimizer adagrad
"""

import os
import sys
import time

import numpy as np

import ctr_common as cc


def extra(p):
    p.add_argument("--k-steps", type=int, default=100, help="geo: local steps")
    p.add_argument("--paddle-optimizer", choices=["adagrad", "adam", "sgd"], default="adagrad")


def OPTIMIZER(paddle, args):
    """Adagrad, as every system trains (--paddle-optimizer for the ones Paddle's legacy IR builds)."""
    if args.paddle_optimizer == "adam":
        return paddle.optimizer.Adam(learning_rate=args.lr)
    if args.paddle_optimizer == "sgd":
        return paddle.optimizer.SGD(learning_rate=args.lr)
    return paddle.optimizer.Adagrad(learning_rate=args.lr, initial_accumulator_value=0.1, epsilon=1e-7)


def main():
    args = cc.arguments(__doc__, rules=("async", "sync", "geo"),
                        extra=extra)
    cc.one_thread()
    import paddle
    import paddle.distributed.fleet as fleet

    core = paddle.base.core
    missing = [n for n in ("DistFleetWrapper", "CommContext", "PSHost") if not hasattr(core, n)]
    if missing:  # the_one_ps needs them: a build without WITH_PSCORE lacks them
        print(f"paddle_ps.py: this Paddle build ({paddle.__version__}) has no parameter-server core: "
              f"paddle.base.core lacks {', '.join(missing)}", file=sys.stderr, flush=True)
    paddle.enable_static()  # the parameter server trains programs (FLAGS_enable_pir_api=0: the legacy IR)
    fleet.init(is_collective=False)
    workers = fleet.worker_num()
    strategy = fleet.DistributedStrategy()
    strategy.a_sync = args.rule != "sync"
    if args.rule == "geo":
        strategy.a_sync_configs = {"k_steps": args.k_steps}
    wide_width = args.fields + len(cc.CROSSES) + 1
    stddev = cc.DIM ** -0.5

    dense = paddle.static.data("dense", [None, args.dense_features], "float32")
    ids = paddle.static.data("ids", [None, args.fields], "int64")
    wide_ids = paddle.static.data("wide_ids", [None, wide_width], "int64")
    label = paddle.static.data("label", [None, 1], "float32")
    # sparse_embedding (the lookup_table op) looks up ids of shape [N, 1].
    wide = paddle.static.nn.sparse_embedding(
        paddle.reshape(wide_ids, [-1, 1]), size=[args.rows, 1],
        param_attr=paddle.ParamAttr(name="wide", initializer=paddle.nn.initializer.Constant(0.0)))
    deep = paddle.static.nn.sparse_embedding(
        paddle.reshape(ids, [-1, 1]), size=[args.rows, cc.DIM],
        param_attr=paddle.ParamAttr(name="deep", initializer=paddle.nn.initializer.TruncatedNormal(0.0, stddev)))
    h = paddle.concat([dense, paddle.reshape(deep, [-1, args.fields * cc.DIM])], axis=1)
    init = cc.glorot_mlp(args.dense_features + args.fields * cc.DIM, seed=args.seed)
    for layer, kernel in enumerate(init[0::2]):
        h = paddle.static.nn.fc(h, kernel.shape[1], activation="relu" if layer < len(init) // 2 - 1 else None,
                                weight_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Assign(kernel)),
                                bias_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(0.0)))
    # The wide logit, a sum: paddle.sum and paddle.matmul have no legacy-IR form in Paddle 3.3.
    logit = paddle.mean(paddle.reshape(wide, [-1, wide_width]), axis=1, keepdim=True) * float(wide_width) + h
    # The summed loss, as dsgd-ctr (TF1 canned estimators' Reduction.SUM); paddle.sum has no
    # legacy-IR form, so the mean times the batch.
    loss = paddle.mean(paddle.nn.functional.binary_cross_entropy_with_logits(logit, label)) * float(args.batch)
    optimizer = OPTIMIZER(paddle, args)
    optimizer = fleet.distributed_optimizer(optimizer, strategy)
    optimizer.minimize(loss)

    if fleet.is_server():
        fleet.init_server()
        fleet.run_server()
        return

    index = fleet.worker_index()
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    fleet.init_worker()
    main_program = paddle.static.default_main_program()
    test_program = main_program.clone(for_test=True)

    def feed(dense_x, keys, y=None):
        out = {"dense": dense_x, "ids": keys.view(np.int64), "wide_ids": cc.wide_keys(keys).view(np.int64)}
        if y is not None:
            out["label"] = y.reshape(-1, 1)
        return out

    def score(dense_x, keys):
        return exe.run(test_program, feed=feed(dense_x, keys, np.zeros(len(keys), np.float32)), fetch_list=[logit])[0]

    reader = cc.ShardReader(args.train, args.batch, index, workers)
    steps = cc.steps_per_worker(args, workers)
    progress = cc.Progress(args, workers * args.batch, f"paddle_ps {args.rule}")
    evaluate = lambda: cc.evaluate(score, args.test)
    fleet.barrier_worker()
    progress.start = progress.interval_start = time.perf_counter()
    for step in range(1, steps + 1):
        (y, dense_x, keys), input_s = cc.timed(reader.next)
        progress.input_time(input_s)
        (value,) = exe.run(main_program, feed=feed(dense_x, keys, y), fetch_list=[loss])
        if index == 0:
            progress.step(step, float(np.asarray(value).reshape(-1)[0]), evaluate)
    if index == 0:
        progress.finish(steps, evaluate, workers, int(os.environ.get("PADDLE_PSERVER_NUMS", "1")))
    fleet.stop_worker()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
