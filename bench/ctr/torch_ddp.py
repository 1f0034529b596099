# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""dsgd-ctr's Wide & Deep on PyTorch DistributedDataParallel (gloo), for bench/ctr.

Every process holds the whole model, the tables included: nn.EmbeddingBag (wide, R x 1, summed
over the example's 29 wide keys) and nn.Embedding (deep, R x 16), both sparse=True as PyTorch's
docs recommend for large tables, so that DDP allreduces (gloo: allgathers) only the rows a batch
touched. The deep table and the MLP train with torch.optim.Adagrad (sparse for the table); the
wide table with FTRL (torch_models.SparseFtrl: torch has no FTRL) on the averaged sparse gradient,
or with Adagrad under --wide-optimizer adagrad. Synchronous by construction (one global step is
both workers' batches, averaged). No ps tasks: start it with

  dsgd-launch --ps 0 --workers 2 -- python torch_ddp.py --train F.ctr --test G.ctr [--rows R]
"""

import sys
import time

import ctr_common as cc
import torch_models as tm


def main():
    args = cc.arguments(__doc__)
    torch = tm.setup()
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    cluster, kind, index = cc.task_from_environment()
    workers = len(cluster["worker"])
    if kind != "worker" or cluster.get("ps"):
        cc.die("torch_ddp.py: run with dsgd-launch --ps 0 (workers only)")
    dist.init_process_group("gloo", init_method=f"tcp://{cluster['worker'][0]}", rank=index, world_size=workers)
    net = tm.wide_deep(torch, args)
    model = DistributedDataParallel(net)  # broadcasts rank 0's values
    if args.wide_optimizer == "ftrl":
        wide = tm.SparseFtrl(torch, net.wide.weight, args.wide_lr)
        rest = [p for n, p in net.named_parameters() if not n.startswith("wide.")]
        optimizers = [wide, tm.adagrad(torch, rest, args.lr)]
    else:
        optimizers = [tm.adagrad(torch, [net.wide.weight], args.wide_lr),
                      tm.adagrad(torch, [p for n, p in net.named_parameters() if not n.startswith("wide.")], args.lr)]
    loss_fn = torch.nn.BCEWithLogitsLoss()
    reader = cc.ShardReader(args.train, args.batch, index, workers)
    steps = cc.steps_per_worker(args, workers)
    progress = cc.Progress(args, workers * args.batch, "torch_ddp sync")

    def score(dense, keys):
        with torch.no_grad():
            return net(torch.from_numpy(dense), torch.from_numpy(tm.rows_of(cc.wide_keys(keys), args.rows)),
                       torch.from_numpy(tm.rows_of(keys, args.rows))).numpy()

    evaluate = lambda: cc.evaluate(score, args.test)
    dist.barrier()
    progress.start = progress.interval_start = time.perf_counter()
    for step in range(1, steps + 1):
        (y, dense, keys), input_s = cc.timed(reader.next)
        progress.input_time(input_s)
        wide_rows = torch.from_numpy(tm.rows_of(cc.wide_keys(keys), args.rows))
        deep_rows = torch.from_numpy(tm.rows_of(keys, args.rows))
        for o in optimizers:
            o.zero_grad()
        loss = loss_fn(model(torch.from_numpy(dense), wide_rows, deep_rows), torch.from_numpy(y))
        (loss * len(y)).backward()  # the summed loss, as dsgd-ctr; DDP averages the gradients (the tables' as sparse tensors) over the workers
        for o in optimizers:
            o.step()
        if index == 0:
            progress.step(step, loss.item(), evaluate)
    dist.barrier()
    if index == 0:
        progress.finish(steps, evaluate, workers, 0)
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
