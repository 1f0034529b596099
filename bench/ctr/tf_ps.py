# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""dsgd-ctr's Wide & Deep on TensorFlow 2's ParameterServerStrategy, for bench/ctr.

As TF's "Parameter server training with ParameterServerStrategy" tutorial writes a custom
training loop: a multi-process cluster (dsgd-launch --chief gives each task its TF_CONFIG: the
chief is the coordinator, the ps and worker tasks run tf.distribute.Server, one intra- and one
inter-op thread each), the variables created in strategy.scope() and split over the ps tasks
(MinSizePartitioner), Keras layers (tf_keras, Keras 2: Keras 3 has no ParameterServerStrategy):
Embedding(R, 1) for the wide part, Embedding(R, 16) for the deep part, Dense 256-128-1; the
wide part trained by Keras' Ftrl (or Adagrad), the rest by Adagrad, both the legacy optimizers
(sparse updates of the embedding rows on the ps). The chief schedules one step a batch with a
ClusterCoordinator; each worker reads its shard of the .ctr file in a tf.data pipeline
(FixedLengthRecordDataset, decoded, crossed and hashed to rows in the pipeline, prefetched; the
shard index from a file in the worker's own directory, as the strategy's input context has none), so
input overlaps compute and "without input" equals the overall rate. ParameterServerStrategy
training is asynchronous: every worker's step applies on its own (--rule async only).

  dsgd-launch --ps P --workers 2 --chief -- python tf_ps.py --train F.ctr --test G.ctr
"""

import os
import sys
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # tf.keras is tf_keras (Keras 2)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

import ctr_common as cc  # noqa: E402


def done_file(cluster):
    """The chief creates it when the job is over; the servers poll for it and leave."""
    return os.path.join("/tmp", "tf_ps_done_" + cluster["chief"][0].replace(":", "_"))


SHARD_FILE = "tf_ps_shard_index"
# A server of 1 inter-op thread deadlocks on the first step (a worker function blocked on its
# remote reads holds the only thread): the servers get 2, each op still computes on 1 (intra-op).
INTER_OP = 2


def serve(tf, cluster, kind, index):
    if kind == "worker":
        # ParameterServerStrategy gives every worker the same dataset function (input_pipeline_id
        # is always 0): the function reads this worker's shard index from SHARD_FILE, a relative
        # path, found in the directory each worker process runs in.
        import tempfile
        here = tempfile.mkdtemp(prefix=f"tf_ps_worker{index}_")
        os.chdir(here)
        with open(SHARD_FILE, "w") as f:
            f.write(str(index))
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=INTER_OP)
    tf.distribute.Server(tf.train.ClusterSpec(cluster), job_name=kind, task_index=index, protocol="grpc",
                         config=config, start=True)
    path = done_file(cluster)
    while not os.path.exists(path):
        time.sleep(0.5)
    sys.stdout.flush()
    if kind == "worker":
        os.chdir("/")
        import shutil
        shutil.rmtree(here, True)
    os._exit(0)  # a tf.distribute.Server never returns from join()


def main():
    args = cc.arguments(__doc__, rules=("async",))
    cc.one_thread()
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    cluster, kind, index = cc.task_from_environment()
    if "chief" not in cluster or not cluster.get("ps"):
        cc.die("tf_ps.py: run with dsgd-launch --ps P --workers N --chief")
    if kind != "chief":
        return serve(tf, cluster, kind, index)
    if os.path.exists(done_file(cluster)):
        os.remove(done_file(cluster))
    try:
        run_chief(tf, args, cluster)
    finally:
        open(done_file(cluster), "w").close()
        time.sleep(2)  # the servers poll every 0.5 s
        os.remove(done_file(cluster))


def run_chief(tf, args, cluster):
    workers, shards = len(cluster["worker"]), len(cluster["ps"])
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    strategy = tf.distribute.ParameterServerStrategy(
        resolver,
        variable_partitioner=tf.distribute.experimental.partitioners.MinSizePartitioner(min_shard_bytes=256 << 10,
                                                                                        max_shards=shards))
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    wide_width = args.fields + len(cc.CROSSES) + 1
    R = args.rows
    init = cc.glorot_mlp(args.dense_features + args.fields * cc.DIM, seed=args.seed)
    keras = tf.keras
    with strategy.scope():
        wide = keras.layers.Embedding(R, 1, embeddings_initializer="zeros", name="wide")
        deep = keras.layers.Embedding(R, cc.DIM, name="deep",
                                      embeddings_initializer=keras.initializers.TruncatedNormal(stddev=cc.DIM ** -0.5,
                                                                                                seed=args.seed))
        layers = [keras.layers.Dense(k.shape[1], activation="relu" if i < len(init) // 2 - 1 else None,
                                     kernel_initializer=keras.initializers.Constant(k), bias_initializer="zeros")
                  for i, k in enumerate(init[0::2])]
        wide.build((None, wide_width))
        deep.build((None, args.fields))
        h = args.dense_features + args.fields * cc.DIM
        for layer in layers:
            layer.build((None, h))
            h = layer.units
        if args.wide_optimizer == "ftrl":
            wide_opt = keras.optimizers.legacy.Ftrl(args.wide_lr, learning_rate_power=-0.5,
                                                    initial_accumulator_value=0.1)
        else:
            wide_opt = keras.optimizers.legacy.Adagrad(args.wide_lr, initial_accumulator_value=0.1, epsilon=1e-7)
        deep_opt = keras.optimizers.legacy.Adagrad(args.lr, initial_accumulator_value=0.1, epsilon=1e-7)
    deep_vars = deep.trainable_variables + [v for layer in layers for v in layer.trainable_variables]

    def logits(dense, wide_rows, deep_rows):
        w = tf.reduce_sum(tf.reshape(wide(wide_rows), [-1, wide_width]), 1)
        h = tf.concat([dense, tf.reshape(deep(deep_rows), [-1, args.fields * cc.DIM])], 1)
        for layer in layers:
            h = layer(h)
        return w + tf.reshape(h, [-1])

    record = cc.record_dtype(args.dense_features, args.fields)
    keys_at = record.fields["keys"][1]
    total = cc.ctr_header(args.train)[3]
    salts = [int(s) for s in cc._CROSS_SALT]

    def mix64(x):
        x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, tf.constant(30, tf.uint64))) * \
            tf.constant(0xbf58476d1ce4e5b9, tf.uint64)
        x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, tf.constant(27, tf.uint64))) * \
            tf.constant(0x94d049bb133111eb, tf.uint64)
        return tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, tf.constant(31, tf.uint64)))

    def decode(raw):
        """A batch of records: (dense, wide rows, deep rows), label (model::wide_deep's wide keys, mod R)."""
        b = tf.io.decode_raw(raw, tf.uint8)
        n = tf.shape(b)[0]
        floats = tf.bitcast(tf.reshape(b[:, :4 * (2 + args.dense_features)], [n, 2 + args.dense_features, 4]),
                            tf.float32)
        keys = tf.bitcast(tf.reshape(b[:, keys_at:], [n, args.fields, 8]), tf.uint64)
        cols = [keys]
        for c, (a, bb) in enumerate(cc.CROSSES):
            kb = keys[:, bb]
            rot = tf.bitwise.bitwise_or(tf.bitwise.left_shift(kb, tf.constant(23, tf.uint64)),
                                        tf.bitwise.right_shift(kb, tf.constant(41, tf.uint64)))
            x = tf.bitwise.bitwise_xor(tf.bitwise.bitwise_xor(keys[:, a], rot), tf.constant(salts[c], tf.uint64))
            cols.append(mix64(x)[:, None])
        cols.append(tf.fill([n, 1], tf.constant(int(cc.BIAS_KEY), tf.uint64)))
        wide_keys = tf.concat(cols, 1)
        rows = lambda k: tf.cast(tf.math.floormod(k, tf.constant(R, tf.uint64)), tf.int64)
        return (floats[:, 2:], rows(wide_keys), rows(keys)), floats[:, 0]

    train = os.path.abspath(args.train)

    def dataset_fn(context):
        k = tf.strings.to_number(tf.io.read_file(SHARD_FILE), tf.int64)  # this worker's (see serve())
        begin, end = k * total // workers, (k + 1) * total // workers
        ds = tf.data.FixedLengthRecordDataset(train, record.itemsize, header_bytes=cc.HEADER_BYTES)
        ds = ds.skip(begin).take(end - begin).repeat().batch(args.batch, drop_remainder=False)
        return ds.map(decode).prefetch(2)

    @tf.function
    def per_worker_dataset_fn():
        return strategy.distribute_datasets_from_function(dataset_fn)

    dataset = coordinator.create_per_worker_dataset(per_worker_dataset_fn)
    iterator = iter(dataset)

    @tf.function
    def train_step(iterator):
        def replica_fn(batch):
            (dense, wide_rows, deep_rows), y = batch
            with tf.GradientTape() as tape:
                z = logits(dense, wide_rows, deep_rows)
                loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=z))
                # The summed loss's gradients, as dsgd-ctr (TF1 canned estimators' Reduction.SUM).
                summed = loss * tf.cast(tf.shape(y)[0], loss.dtype)
            grads = tape.gradient(summed, wide.trainable_variables + deep_vars)
            n = len(wide.trainable_variables)
            wide_opt.apply_gradients(zip(grads[:n], wide.trainable_variables))
            deep_opt.apply_gradients(zip(grads[n:], deep_vars))
            return loss

        return strategy.run(replica_fn, args=(next(iterator),))

    @tf.function
    def score_fn(dense, wide_rows, deep_rows):
        return logits(dense, wide_rows, deep_rows)

    def score(dense, keys):
        return score_fn(tf.constant(dense), tf.constant((cc.wide_keys(keys) % np.uint64(R)).astype(np.int64)),
                        tf.constant((keys % np.uint64(R)).astype(np.int64))).numpy()

    steps = workers * cc.steps_per_worker(args, workers)  # one step: one worker's batch
    progress = cc.Progress(args, args.batch, f"tf_ps {args.rule}")
    evaluate = lambda: cc.evaluate(score, args.test)
    # A warm-up step traces and builds everything (not counted): the clock starts after it.
    coordinator.schedule(train_step, args=(iterator,)).fetch()
    progress.start = progress.interval_start = time.perf_counter()
    step = 0
    while step < steps:
        chunk = min(args.log_steps or steps, steps - step)
        if progress.next_eval is not None:
            chunk = min(chunk, max(1, progress.next_eval - step))
        last = None
        for _ in range(chunk):
            last = coordinator.schedule(train_step, args=(iterator,))
        coordinator.join()
        step += chunk
        progress.step(step, float(last.fetch()), evaluate)
    progress.finish(steps, evaluate, workers, shards)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
