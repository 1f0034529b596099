# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""The CNN of examples/04_libtorch_cnn on PyTorch, for bench/compare/cnn.sh.

Run with Debian's /usr/bin/python3 and its python3-torch (1.13.1, the build libtorch-dev
installs for 04_libtorch_cnn): both sides then run the same libtorch kernels. The work is
04_libtorch_cnn's, line for line:

  model     conv 5x5 (6, padding 2) - relu - max pool 2 - conv 5x5 (16) - relu - max pool 2 -
            dense 400-120 - relu - dense 120-10; torch's default initialisation, seed 1
            (torch.manual_seed(1) before the module is built, as 04 does)
  loss      cross entropy, the mean over the batch
  data      Debian's Fashion-MNIST idx files (peers.py reads them, DSGD_FASHION_MNIST_DIR
            overrides), pixels / 255, then (x - 0.2860) / 0.3530; worker k of n trains on
            examples k, k + n, ..., reshuffled every pass by torch.randperm from a generator
            seeded 100 + k; 60000 / n / 64 full batches of 64 per pass (the rest left out)
  optimizer momentum 0.9 (v <- 0.9 v + g, w <- w - lr v), lr = 0.04 * 0.8 ^ floor(t / E), t the
            updates applied, E those of one pass (sync, DDP, solo: batches per worker; async:
            twice that); sync and DDP apply the mean of the workers' gradients
  eval      the chief (worker 0) computes the accuracy on the 10k test images after each pass
            over its shard; the clock starts once the variables are ready

  python3 cnn_peers.py solo            # one process, no cluster
  python3 cnn_peers.py ddp             # DistributedDataParallel, gloo: dsgd-launch --ps 0 --workers 2
  python3 cnn_peers.py rpc --rule R    # torch.distributed.rpc ps (peers.py's): --ps 1 --workers 2

The chief writes --csv, the columns 04_libtorch_cnn --csv writes: system, epoch, wall_s,
global_step, steps_per_epoch, eval_s, test_accuracy, examples (trained by all workers up to that
evaluation), compute_s and step_s (the chief's seconds in forward and backward, and in the step
after them: the update, or the RPC push and pull, over that pass).
"""

import argparse
import sys
import time

import peers  # the MLP peers: data reading, the task from TF_CONFIG, the RPC parameter server

torch = peers.torch_setup()  # one intra-op and one inter-op thread
import torch.nn.functional as F  # noqa: E402


class Cnn(torch.nn.Module):
    """04_libtorch_cnn's cnn_impl."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(6, 16, 5)
        self.fc1 = torch.nn.Linear(16 * 5 * 5, 120)
        self.fc2 = torch.nn.Linear(120, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)  # 28x28 -> 14x14
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)  # 10x10 -> 5x5
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def new_net():
    torch.manual_seed(1)
    return Cnn()


def tensors(split):
    images, labels = peers.load(split)
    x = torch.from_numpy(images).view(-1, 1, 28, 28).sub(0.2860).div(0.3530)
    return x, torch.from_numpy(labels)


def accuracy(net, x, y):
    right = 0
    with torch.no_grad():
        for i in range(0, x.size(0), 1000):
            right += int((net(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum())
    return right / x.size(0)


def learning_rate(args, updates, per_epoch):
    return args.lr * args.decay ** (updates // per_epoch)


def train_passes(args, net, forward, replica, replicas, chief, step, global_step, system, per_epoch):
    """args.epochs passes over shard replica of replicas; step() after every backward()."""
    train_x, train_y = tensors("train")
    test_x, test_y = tensors("test")
    batches = train_x.size(0) // replicas // args.batch
    mine = torch.arange(replica, train_x.size(0), replicas)
    order = torch.Generator()
    order.manual_seed(100 + replica)
    csv = open(args.csv, "w") if chief and args.csv else None
    if csv:
        csv.write("system,epoch,wall_s,global_step,steps_per_epoch,eval_s,test_accuracy,examples,compute_s,step_s\n")
    if args.ready:
        args.ready()
    start = time.perf_counter()
    last = 0.0
    for e in range(1, args.epochs + 1):
        shuffled = mine[torch.randperm(mine.size(0), generator=order)]
        loss_sum = compute = stepping = 0.0  # this pass's forward and backward, and step()s
        for b in range(batches):
            t0 = time.perf_counter()
            idx = shuffled[b * args.batch:(b + 1) * args.batch]
            net.zero_grad(set_to_none=False)
            loss = F.cross_entropy(forward(train_x[idx]), train_y[idx])
            loss.backward()
            loss_sum += float(loss)
            t1 = time.perf_counter()
            step()
            compute, stepping = compute + t1 - t0, stepping + time.perf_counter() - t1
        seconds = time.perf_counter() - start
        per_step = f"(per step: compute {1e3 * compute / batches:.2f} ms, {args.step_name} {1e3 * stepping / batches:.2f} ms)"
        if chief:
            last = accuracy(net, test_x, test_y)
            done = time.perf_counter() - start
            print(f"epoch {e:2d}  {seconds:7.1f} s  step {global_step():6d}  "
                  f"{e * batches * args.batch / seconds:6.0f} examples/s (this worker)  "
                  f"loss {loss_sum / batches:.4f}  test accuracy {last:.4f}  {per_step}", flush=True)
            if csv:
                csv.write(f"{system},{e},{done:.3f},{global_step()},{per_epoch},{done - seconds:.3f},"
                          f"{last:.4f},{e * batches * args.batch * replicas},{compute:.3f},{stepping:.3f}\n")
                csv.flush()
        else:
            print(f"pass {e:2d} over its shard  {seconds:7.1f} s  loss {loss_sum / batches:.4f}  {per_step}", flush=True)
    if csv:
        csv.close()
    return last


def sgd_with_schedule(args, net, per_epoch):
    """torch.optim.SGD with the schedule set before each update (its updates counted here)."""
    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum)
    updates = [0]

    def step():
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(args, updates[0], per_epoch)
        optimizer.step()
        updates[0] += 1

    return step, lambda: updates[0]


def run_solo(args):
    net = new_net()
    per_epoch = 60000 // args.batch
    step, count = sgd_with_schedule(args, net, per_epoch)
    last = train_passes(args, net, net, 0, 1, True, step, count, "torch_solo", per_epoch)
    print(f"final test accuracy {last:.4f} (solo, one process, {count()} steps)")


def run_ddp(args):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    cluster, kind, index = peers.task_from_environment()
    workers = len(cluster["worker"])
    if kind != "worker" or cluster.get("ps"):
        raise SystemExit("cnn_peers.py ddp: run with dsgd-launch --ps 0 (workers only)")
    dist.init_process_group("gloo", init_method=f"tcp://{cluster['worker'][0]}", rank=index,
                            world_size=workers)
    net = new_net()
    model = DistributedDataParallel(net)  # broadcasts rank 0's parameters
    per_epoch = 60000 // workers // args.batch
    step, count = sgd_with_schedule(args, model, per_epoch)  # backward() averaged the gradients
    args.ready = dist.barrier
    last = train_passes(args, net, model, index, workers, index == 0, step, count, "torch_ddp", per_epoch)
    dist.barrier()
    dist.destroy_process_group()
    if index == 0:
        print(f"final test accuracy {last:.4f} (ddp, {workers} workers, {count()} steps)")


class CnnServer(peers.ParameterServer):
    """peers.py's ps (momentum, the schedule, sync averaging) holding the CNN's parameters."""

    def __init__(self, args, workers, per_epoch):
        super().__init__(torch, args, workers, [p.detach().clone() for p in new_net().parameters()])
        self.per_epoch = per_epoch


def run_rpc(args):
    import torch.distributed.rpc as rpc

    # RPC sends a function by its module and name: every task decorates peers.ps_push_sync alike.
    peers.ps_push_sync = rpc.functions.async_execution(peers.ps_push_sync)
    cluster, kind, index = peers.task_from_environment()
    workers = len(cluster["worker"])
    if len(cluster.get("ps", [])) != 1 or kind not in ("ps", "worker"):
        raise SystemExit("cnn_peers.py rpc: run with dsgd-launch --ps 1 --workers N")
    batches = 60000 // workers // args.batch
    per_epoch = batches if args.rule == "sync" else batches * workers
    options = rpc.TensorPipeRpcBackendOptions(init_method=f"tcp://{cluster['ps'][0]}", num_worker_threads=8)
    if kind == "ps":
        peers.PS = CnnServer(args, workers, per_epoch)
        rpc.init_rpc("ps", rank=0, world_size=1 + workers, rpc_backend_options=options)
        rpc.shutdown()  # waits for every worker to finish
        return
    rpc.init_rpc(f"worker{index}", rank=1 + index, world_size=1 + workers, rpc_backend_options=options)
    push = peers.ps_push_sync if args.rule == "sync" else peers.ps_push_async
    net = new_net()
    params = list(net.parameters())
    state = {"step": 0}

    def take(values, step):
        with torch.no_grad():
            for p, v in zip(params, values):
                p.copy_(v)
        state["step"] = step

    take(*rpc.rpc_sync("ps", peers.ps_pull))

    def step():
        take(*rpc.rpc_sync("ps", push, args=([p.grad for p in params],)))

    last = train_passes(args, net, net, index, workers, index == 0, step, lambda: state["step"],
                        f"torch_rpc_{args.rule}", per_epoch)
    rpc.shutdown()
    if index == 0:
        print(f"final test accuracy {last:.4f} (rpc {args.rule}, {workers} workers, 1 ps, "
              f"{state['step']} global steps)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("system", choices=["solo", "ddp", "rpc"])
    p.add_argument("--rule", choices=["sync", "async"], default="sync")
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.04)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--decay", type=float, default=0.8)
    p.add_argument("--csv", default="")
    args = p.parse_args()
    args.ready = None
    # What step() does after backward(): DDP's allreduce runs inside backward() (its hooks).
    args.step_name = {"solo": "update", "ddp": "update", "rpc": "rpc push+pull"}[args.system]
    if args.system != "rpc" and args.rule != "sync":
        p.error(f"{args.system} is synchronous only")
    {"solo": run_solo, "ddp": run_ddp, "rpc": run_rpc}[args.system](args)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
