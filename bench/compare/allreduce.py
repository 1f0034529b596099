# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's side of bench/compare/step_profile.sh: a gloo allreduce of the MLP's gradient bytes.

Run by dsgd-launch with 2 workers and no ps (it takes the address of worker 0 from TF_CONFIG,
as peers.py does); one thread per process:

  dsgd-launch --ps 0 --workers 2 -- python allreduce.py [--iters 1000] [--warmup 50] [--ddp-steps 400]

1. allreduce: torch.distributed.all_reduce (SUM, backend gloo, 127.0.0.1) of one float32
   tensor of 235,146 elements (784x256 + 256 + 256x128 + 128 + 128x10 + 10, the parameters of
   784-256-128-10), timed one call at a time after --warmup calls and a barrier.
2. ddp (skipped with --ddp-steps 0): peers.py's DistributedDataParallel step (zero_grad,
   forward, cross-entropy, backward with the gradient allreduce, SGD momentum step) on a fixed
   random batch of 64, against the same step under model.no_sync() (no allreduce), in
   alternating blocks of 50 so that load from elsewhere falls on both alike.

Every rank prints CSV rows of medians in milliseconds:
  profile,torch_allreduce,worker:K,ITERS,MEDIAN_MS
  profile,torch_ddp,worker:K,STEPS,STEP_MS,COMPUTE_MS,COMM_MS
where COMM_MS is the DDP step's median minus the no_sync step's median.
"""

import argparse
import json
import os
import statistics
import time

PARAMETERS = 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10  # 235,146 floats


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iters", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--ddp-steps", type=int, default=400, help="steps of each kind (0: no DDP part)")
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args()

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    config = json.loads(os.environ["TF_CONFIG"])
    cluster, index = config["cluster"], int(config["task"]["index"])
    if config["task"]["type"] != "worker" or cluster.get("ps") or len(cluster["worker"]) != 2:
        raise SystemExit("allreduce.py: run with dsgd-launch --ps 0 --workers 2")
    dist.init_process_group("gloo", init_method=f"tcp://{cluster['worker'][0]}", rank=index, world_size=2)
    task = f"worker:{index}"

    grads = torch.ones(PARAMETERS, dtype=torch.float32)
    for _ in range(args.warmup):
        dist.all_reduce(grads)
    dist.barrier()
    times = []
    for _ in range(args.iters):
        grads.fill_(1.0)
        t = time.perf_counter()
        dist.all_reduce(grads)
        times.append(time.perf_counter() - t)
    if grads[0].item() != 2.0 or grads[-1].item() != 2.0:
        raise SystemExit(f"allreduce.py: the sum of two ones came back as {grads[0].item()}")
    print(f"profile,torch_allreduce,{task},{args.iters},{1000 * statistics.median(times):.4f}", flush=True)

    if args.ddp_steps > 0:
        torch.manual_seed(index)
        net = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
                                  torch.nn.ReLU(), torch.nn.Linear(128, 10))
        assert sum(q.numel() for q in net.parameters()) == PARAMETERS
        model = DistributedDataParallel(net)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        loss_fn = torch.nn.CrossEntropyLoss()
        x = torch.rand(args.batch, 784)
        y = torch.randint(0, 10, (args.batch,))

        def step():
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            optimizer.step()

        def timed(n, local):
            out = []
            for _ in range(n):
                t = time.perf_counter()
                if local:
                    with model.no_sync():
                        step()
                else:
                    step()
                out.append(time.perf_counter() - t)
            return out

        timed(50, False)
        timed(50, True)
        dist.barrier()
        synced, local = [], []
        block = 50
        for _ in range(max(1, args.ddp_steps // block)):
            synced += timed(block, False)
            local += timed(block, True)
        s, c = 1000 * statistics.median(synced), 1000 * statistics.median(local)
        print(f"profile,torch_ddp,{task},{len(synced)},{s:.4f},{c:.4f},{s - c:.4f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
