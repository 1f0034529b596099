# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""The Fashion-MNIST MLP of dsgd-train on PyTorch and TensorFlow, for bench/compare.

Every process is started by dsgd-launch, which gives it TF_CONFIG (the cluster and this task),
exactly as it starts dsgd-train. The work is the same as dsgd-train's:

  model     784-256-128-10 (--hidden 1024,1024: 784-1024-1024-10), ReLU, softmax cross-entropy;
            kernels Glorot uniform, biases zero, drawn once from seed --seed (default 0; every
            system starts from the same kind of point)
  data      /usr/share/datasets/fashion-mnist (DSGD_FASHION_MNIST_DIR overrides), pixels / 255;
            worker k of n trains on examples k, k + n, ..., reshuffled every pass (seed 1000 + k + 100 * --seed),
            64 per batch, the last batch of a pass short
  optimizer momentum 0.9 (v <- 0.9 v + g, w <- w - lr v) on the averaged (sync) or single
            (async) gradient, lr = base * decay ^ floor(step / steps_per_epoch)
  schedule  an epoch is about one pass over the training set in global steps: 469 for sync
            (a step averages both workers' batches), 938 for async (a step is one batch)
  stopping  every worker trains until the global step reaches epochs * steps_per_epoch
  eval      the chief (worker 0) computes the accuracy on the full 10k test set each time the
            global step crosses an epoch; the clock starts once the variables are ready

  python peers.py ddp       --epochs E   # torch DistributedDataParallel, gloo, --ps 0 --workers 2
  python peers.py rpc       --rule sync|async   # torch.distributed.rpc ps, --ps 1 --workers 2
  python peers.py tf        --rule sync|async   # tf.compat.v1 between-graph, --ps 1 --workers 2

The chief writes --csv: system,epoch,wall_s,global_step,steps_per_epoch,eval_s,test_accuracy.
"""

import argparse
import gzip
import json
import os
import sys
import time

import numpy as np

TRAIN_EXAMPLES = 60000


def data_dir():
    return os.environ.get("DSGD_FASHION_MNIST_DIR") or "/usr/share/datasets/fashion-mnist"


def read_idx(name):
    """One IDX file (gzip) as a numpy array: images as float32 / 255, labels as int64."""
    path = os.path.join(data_dir(), name)
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic = int.from_bytes(raw[0:4], "big")
    dims = magic & 0xFF
    if magic >> 8 != 0x08 or dims not in (1, 3):
        raise ValueError(f"{path}: not an unsigned-byte IDX file (magic {magic:#x})")
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims)
    if body.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says {shape}, body has {body.size} bytes")
    if dims == 1:
        return body.astype(np.int64)
    return body.reshape(shape[0], shape[1] * shape[2]).astype(np.float32) / 255.0


def load(split):
    prefix = "train" if split == "train" else "t10k"
    return read_idx(f"{prefix}-images-idx3-ubyte.gz"), read_idx(f"{prefix}-labels-idx1-ubyte.gz")


def initial_parameters(widths=(784, 256, 128, 10), seed=0):
    """[kernel0 (in x out), bias0, kernel1, bias1, ...]: Glorot uniform kernels, zero biases."""
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(widths[:-1], widths[1:]):
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        params.append(rng.uniform(-limit, limit, size=(fan_in, fan_out)).astype(np.float32))
        params.append(np.zeros(fan_out, dtype=np.float32))
    return params


class Batches:
    """dsgd-train's shuffled_batches: shard k of n, reshuffled every pass, a short last batch."""

    def __init__(self, images, labels, batch, shard, shards, seed):
        self.images, self.labels, self.batch = images, labels, batch
        self.order = np.arange(shard, len(labels), shards)
        self.rng = np.random.default_rng(seed)
        self.rng.shuffle(self.order)
        self.cursor = 0

    def next(self):
        if self.cursor == len(self.order):
            self.rng.shuffle(self.order)
            self.cursor = 0
        idx = self.order[self.cursor:self.cursor + self.batch]
        self.cursor += len(idx)
        return self.images[idx], self.labels[idx]


def steps_per_epoch(rule, workers, batch):
    shard = (TRAIN_EXAMPLES + workers - 1) // workers
    batches = (shard + batch - 1) // batch
    aggregated = workers if rule == "sync" else 1
    return (batches * workers + aggregated - 1) // aggregated


def learning_rate(args, step, per_epoch):
    return args.lr * args.decay ** (step // per_epoch)


class CsvLog:
    def __init__(self, path, system):
        self.system = system
        self.file = open(path, "w") if path else None
        if self.file:
            self.file.write("system,epoch,wall_s,global_step,steps_per_epoch,eval_s,test_accuracy\n")
            self.file.flush()

    def close(self):
        if self.file:
            self.file.close()

    def write(self, epoch, wall, step, per_epoch, eval_s, accuracy):
        print(f"epoch {epoch:2d}  {wall:7.1f} s  step {step:6d}  "
              f"{step / per_epoch * TRAIN_EXAMPLES / wall:7.0f} examples/s  eval {eval_s:.2f} s  "
              f"test accuracy {accuracy:.4f}", flush=True)
        if self.file:
            self.file.write(f"{self.system},{epoch},{wall:.3f},{step},{per_epoch},{eval_s:.3f},{accuracy:.4f}\n")
            self.file.flush()


def task_from_environment():
    config = json.loads(os.environ["TF_CONFIG"])
    return config["cluster"], config["task"]["type"], int(config["task"]["index"])


# ----------------------------------------------------------------------------------- PyTorch


def torch_setup():
    import torch
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    return torch


def widths(args):
    """The layer widths: 784 inputs, the --hidden widths, 10 classes."""
    return (784, *args.hidden, 10)


def torch_model(torch, params):
    layers = []
    for kernel in params[0::2]:
        layers += [torch.nn.Linear(kernel.shape[0], kernel.shape[1]), torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers[:-1])  # no ReLU after the output layer
    with torch.no_grad():
        for p, value in zip(net.parameters(), torch_layout(params)):
            p.copy_(torch.from_numpy(value))
    return net


def torch_layout(params):
    """nn.Linear keeps its weight as out x in: transpose the kernels."""
    return [np.ascontiguousarray(p.T) if p.ndim == 2 else p for p in params]


def torch_accuracy(torch, net, test):
    with torch.no_grad():
        return float((net(test[0]).argmax(1) == test[1]).float().mean())


def run_ddp(args):
    torch = torch_setup()
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    cluster, kind, index = task_from_environment()
    workers = len(cluster["worker"])
    if kind != "worker" or cluster.get("ps"):
        raise SystemExit("peers.py ddp: run with dsgd-launch --ps 0 (workers only)")
    dist.init_process_group("gloo", init_method=f"tcp://{cluster['worker'][0]}", rank=index,
                            world_size=workers)
    images, labels = load("train")
    test = tuple(torch.from_numpy(a) for a in load("test"))
    net = torch_model(torch, initial_parameters(widths(args), args.seed))
    model = DistributedDataParallel(net)  # broadcasts rank 0's parameters
    if args.fp16_hook:  # the gradients cross the wire as fp16 and are widened after the allreduce
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = Batches(images, labels, args.batch, index, workers, 1000 + index + 100 * args.seed)
    per_epoch = steps_per_epoch("sync", workers, args.batch)
    log = CsvLog(args.csv if index == 0 else None, "ddp_fp16" if args.fp16_hook else "ddp")
    dist.barrier()
    start = time.perf_counter()
    for step in range(args.epochs * per_epoch):
        x, y = batches.next()
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(args, step, per_epoch)
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()  # the gradients are averaged over the workers here
        optimizer.step()
        if index == 0 and (step + 1) % per_epoch == 0:
            t = time.perf_counter()
            accuracy = torch_accuracy(torch, net, test)
            now = time.perf_counter()
            log.write((step + 1) // per_epoch, now - start, step + 1, per_epoch, now - t, accuracy)
    dist.barrier()
    dist.destroy_process_group()


class ParameterServer:
    """The ps of the RPC peer: the variables, their velocities and the global step."""

    def __init__(self, torch, args, workers, params=None):
        """Holds @p params, or else the MLP of args.hidden drawn from args.seed."""
        import threading
        self.torch, self.args, self.workers = torch, args, workers
        if params is None:
            params = [torch.from_numpy(p) for p in torch_layout(initial_parameters(widths(args), args.seed))]
        self.params = params
        self.velocity = [torch.zeros_like(p) for p in self.params]
        self.step = 0
        self.per_epoch = steps_per_epoch(args.rule, workers, args.batch)
        self.lock = threading.Lock()
        self.pending = []  # sync: (gradients, future) of this step
        self.sum = None

    def apply(self, grads, scale):
        lr = learning_rate(self.args, self.step, self.per_epoch)
        with self.torch.no_grad():
            for w, v, g in zip(self.params, self.velocity, grads):
                v.mul_(self.args.momentum).add_(g, alpha=scale)
                w.sub_(v, alpha=lr)
        self.step += 1

    def snapshot(self):
        return [p.clone() for p in self.params], self.step


PS = None


def ps_pull():
    with PS.lock:
        return PS.snapshot()


def ps_push_async(grads):
    with PS.lock:
        PS.apply(grads, 1.0)
        return PS.snapshot()


def ps_push_sync(grads):
    """Adds this worker's gradients; the last of the step averages, applies and answers all."""
    import torch
    future = torch.futures.Future()
    with PS.lock:
        if PS.sum is None:
            PS.sum = [g.clone() for g in grads]
        else:
            for s, g in zip(PS.sum, grads):
                s.add_(g)
        PS.pending.append(future)
        if len(PS.pending) == PS.workers:
            PS.apply(PS.sum, 1.0 / PS.workers)
            result = PS.snapshot()
            waiting, PS.pending, PS.sum = PS.pending, [], None
            for f in waiting:
                f.set_result(result)
    return future


def run_rpc(args):
    global PS
    torch = torch_setup()
    import torch.distributed.rpc as rpc

    # The decorated function must be the module's attribute on every task: RPC sends it by name.
    globals()["ps_push_sync"] = rpc.functions.async_execution(ps_push_sync)
    cluster, kind, index = task_from_environment()
    workers = len(cluster["worker"])
    if len(cluster.get("ps", [])) != 1 or kind not in ("ps", "worker"):
        raise SystemExit("peers.py rpc: run with dsgd-launch --ps 1 --workers N")
    rank = 0 if kind == "ps" else 1 + index
    # --tcp-only: TensorPipe's TCP transport and basic channel alone. Network-namespace "hosts"
    # share one kernel, where its cma channel (process_vm_readv) would carry the tensors beside
    # the shaped link, which no two machines can do.
    transports = {"_transports": ["uv"], "_channels": ["basic"]} if args.tcp_only else {}
    options = rpc.TensorPipeRpcBackendOptions(init_method=f"tcp://{cluster['ps'][0]}", num_worker_threads=8,
                                              **transports)
    if kind == "ps":
        PS = ParameterServer(torch, args, workers)
    rpc.init_rpc("ps" if kind == "ps" else f"worker{index}", rank=rank, world_size=1 + workers,
                 rpc_backend_options=options)
    if kind == "ps":
        rpc.shutdown()  # waits for every worker to finish
        return
    push = globals()["ps_push_sync"] if args.rule == "sync" else ps_push_async
    images, labels = load("train")
    test = tuple(torch.from_numpy(a) for a in load("test"))
    net = torch_model(torch, initial_parameters(widths(args), args.seed))
    loss_fn = torch.nn.CrossEntropyLoss()
    batches = Batches(images, labels, args.batch, index, workers, 1000 + index + 100 * args.seed)
    per_epoch = steps_per_epoch(args.rule, workers, args.batch)
    last_step = args.epochs * per_epoch
    log = CsvLog(args.csv if index == 0 else None, f"torch_rpc_{args.rule}")
    values, step = rpc.rpc_sync("ps", ps_pull)
    start = time.perf_counter()
    next_eval = 1
    while step < last_step:
        with torch.no_grad():
            for p, v in zip(net.parameters(), values):
                p.copy_(v)
        x, y = batches.next()
        net.zero_grad(set_to_none=True)
        loss_fn(net(torch.from_numpy(x)), torch.from_numpy(y)).backward()
        values, step = rpc.rpc_sync("ps", push, args=([p.grad for p in net.parameters()],))
        if index == 0 and step >= next_eval * per_epoch:
            with torch.no_grad():
                for p, v in zip(net.parameters(), values):
                    p.copy_(v)
            t = time.perf_counter()
            accuracy = torch_accuracy(torch, net, test)
            now = time.perf_counter()
            epoch = min(step // per_epoch, args.epochs)
            log.write(epoch, now - start, step, per_epoch, now - t, accuracy)
            next_eval = epoch + 1
    rpc.shutdown()


# -------------------------------------------------------------------------------- TensorFlow


def run_tf(args):
    import tensorflow as tf
    v1 = tf.compat.v1
    v1.disable_eager_execution()
    cluster, kind, index = task_from_environment()
    workers = len(cluster["worker"])
    if len(cluster.get("ps", [])) < 1 or kind not in ("ps", "worker"):
        raise SystemExit("peers.py tf: run with dsgd-launch --ps N --workers N")
    spec = tf.train.ClusterSpec({"ps": cluster["ps"], "worker": cluster["worker"]})
    config = v1.ConfigProto(inter_op_parallelism_threads=1, intra_op_parallelism_threads=1,
                            device_filters=["/job:ps", f"/job:{kind}/task:{index}"])
    server = tf.distribute.Server(spec, job_name=kind, task_index=index, config=config)

    def done_queue():
        # The ps exits once every worker has put one token here (a TF1 ps otherwise never returns).
        with v1.device("/job:ps/task:0"):
            return v1.FIFOQueue(workers, tf.int32, shared_name="compare_done")

    if kind == "ps":
        queue = done_queue()
        with v1.Session(server.target, config=config) as sess:
            for _ in range(workers):
                sess.run(queue.dequeue())
        return

    per_epoch = steps_per_epoch(args.rule, workers, args.batch)
    last_step = args.epochs * per_epoch
    init = initial_parameters(widths(args), args.seed)
    with v1.device(v1.train.replica_device_setter(worker_device=f"/job:worker/task:{index}", cluster=spec)):
        global_step = v1.train.get_or_create_global_step()
        weights = [tf.Variable(p, name=f"p{i}") for i, p in enumerate(init)]
        x = v1.placeholder(tf.float32, [None, 784])
        y = v1.placeholder(tf.int64, [None])
        h = x
        layers = len(init) // 2
        for layer in range(layers):
            h = tf.matmul(h, weights[2 * layer]) + weights[2 * layer + 1]
            if layer < layers - 1:
                h = tf.nn.relu(h)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h))
        correct = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(h, 1), y), tf.float32))
        lr = v1.train.exponential_decay(args.lr, global_step, per_epoch, args.decay, staircase=True)
        optimizer = v1.train.MomentumOptimizer(lr, args.momentum)
        hooks = []
        if args.rule == "sync":
            optimizer = v1.train.SyncReplicasOptimizer(optimizer, replicas_to_aggregate=workers,
                                                       total_num_replicas=workers)
            hooks.append(optimizer.make_session_run_hook(index == 0))
        train_op = optimizer.minimize(loss, global_step=global_step)
    done = done_queue().enqueue(1)
    images, labels = load("train")
    test_x, test_y = load("test")
    batches = Batches(images, labels, args.batch, index, workers, 1000 + index + 100 * args.seed)
    log = CsvLog(args.csv if index == 0 else None, f"tf_ps_{args.rule}")
    # A sync step of a worker blocks until the others' gradients arrive: after the last step
    # one worker may wait for a step that never comes, so every step has a deadline.
    step_options = v1.RunOptions(timeout_in_ms=60000)
    with v1.train.MonitoredTrainingSession(master=server.target, is_chief=index == 0, hooks=hooks,
                                           config=config, save_checkpoint_secs=None,
                                           save_summaries_steps=None, save_summaries_secs=None,
                                           log_step_count_steps=None) as sess:
        step = sess.run(global_step)
        start = time.perf_counter()
        next_eval = 1
        while step < last_step:
            bx, by = batches.next()
            try:
                _, step = sess.run([train_op, global_step], {x: bx, y: by}, options=step_options)
            except tf.errors.DeadlineExceededError:
                break
            if index == 0 and step >= next_eval * per_epoch:
                t = time.perf_counter()
                accuracy = float(sess.run(correct, {x: test_x, y: test_y}))
                now = time.perf_counter()
                epoch = min(step // per_epoch, args.epochs)
                log.write(epoch, now - start, step, per_epoch, now - t, accuracy)
                next_eval = epoch + 1
        sess.run_step_fn(lambda step_context: step_context.session.run(done))
        # Closing a session with SyncReplicasOptimizer's queue runner can block for good once the
        # other workers are gone; everything this task had to say is written, so leave now.
        log.close()
        sys.stdout.flush()
        os._exit(0)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("system", choices=["ddp", "rpc", "tf"])
    p.add_argument("--rule", choices=["sync", "async"], default="sync")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--decay", type=float, default=0.7)
    p.add_argument("--csv", default="")
    p.add_argument("--seed", type=int, default=0, help="initial draws and data order (default 0)")
    p.add_argument("--hidden", type=lambda v: [int(w) for w in v.split(",")], default=[256, 128],
                   help="widths of the hidden layers, e.g. 1024,1024 (default 256,128)")
    p.add_argument("--fp16-hook", action="store_true",
                   help="ddp: DDP's fp16_compress_hook (gradients allreduced as fp16)")
    p.add_argument("--tcp-only", action="store_true",
                   help="rpc: TensorPipe over TCP only, as between machines (no shared-memory or cma channel)")
    args = p.parse_args()
    if args.tcp_only and args.system != "rpc":
        p.error("--tcp-only is a TensorPipe setting: rpc only")
    if args.fp16_hook and args.system != "ddp":
        p.error("--fp16-hook is a DDP communication hook: ddp only")
    if not args.hidden or min(args.hidden) < 1:
        p.error("--hidden: expected positive widths separated by commas, e.g. 1024,1024")
    if args.system == "ddp" and args.rule != "sync":
        p.error("ddp is synchronous only")
    {"ddp": run_ddp, "rpc": run_rpc, "tf": run_tf}[args.system](args)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
