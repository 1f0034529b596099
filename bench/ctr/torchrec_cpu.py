# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""dsgd-ctr's Wide & Deep on TorchRec (CPU: fbgemm-gpu-cpu), for bench/ctr.

The way TorchRec's docs and its DLRM example train: the tables in one EmbeddingBagCollection
(wide: R x 4, of which column 0 is the weight (fbgemm needs rows of 4k floats), pooled by sum over the example's 29 wide keys; deep: R x 16 shared by the 26
fields), built on the meta device and sharded by DistributedModelParallel over the 2 processes
(gloo; the planner picks the sharding, the batches' ids and pooled rows travel by all-to-all),
the tables' optimizer fused into the backward pass (apply_optimizer_in_backward: fbgemm's
exact Adagrad, lr 0.05 for the deep table and the wide one), the MLP data-parallel under DDP with
torch.optim.Adagrad (a KeyedOptimizerWrapper), one CombinedOptimizer over both. TorchRec has no
FTRL: the wide part trains with Adagrad (--wide-optimizer adagrad is the only choice). Sync by
construction. Evaluation is collective (the tables are sharded): every rank scores the test file,
rank 0 prints.

  dsgd-launch --ps 0 --workers 2 -- python torchrec_cpu.py --train F.ctr --test G.ctr --wide-optimizer adagrad
"""

import sys
import time

import numpy as np

import ctr_common as cc
import torch_models as tm

# fbgemm's table-batched embeddings need rows of a multiple of 4 floats: the wide table's rows
# are 4 wide, and the model reads column 0 (the other 3 get no gradient and stay 0).
WIDE_COLS = 4


def main():
    args = cc.arguments(__doc__)
    if args.wide_optimizer != "adagrad":
        cc.die("torchrec_cpu.py: TorchRec's fused optimizers have no FTRL; give --wide-optimizer adagrad")
    torch = tm.setup()
    import torch.distributed as dist
    import torchrec
    from torchrec.distributed.model_parallel import DistributedModelParallel
    from torchrec.distributed.planner import EmbeddingShardingPlanner, Topology
    from torchrec.distributed.types import ShardingEnv
    from torchrec.optim.apply_optimizer_in_backward import apply_optimizer_in_backward
    from torchrec.optim.keyed import CombinedOptimizer, KeyedOptimizerWrapper
    from torchrec.optim.optimizers import in_backward_optimizer_filter

    cluster, kind, index = cc.task_from_environment()
    workers = len(cluster["worker"])
    if kind != "worker" or cluster.get("ps"):
        cc.die("torchrec_cpu.py: run with dsgd-launch --ps 0 (workers only)")
    dist.init_process_group("gloo", init_method=f"tcp://{cluster['worker'][0]}", rank=index, world_size=workers)
    fields = [f"c{i}" for i in range(args.fields)]
    stddev = cc.DIM ** -0.5
    ebc = torchrec.EmbeddingBagCollection(
        device=torch.device("meta"),
        tables=[
            torchrec.EmbeddingBagConfig(name="wide", embedding_dim=WIDE_COLS, num_embeddings=args.rows, feature_names=["wide"],
                                        pooling=torchrec.PoolingType.SUM, init_fn=torch.nn.init.zeros_),
            torchrec.EmbeddingBagConfig(name="deep", embedding_dim=cc.DIM, num_embeddings=args.rows,
                                        feature_names=fields, pooling=torchrec.PoolingType.SUM,
                                        init_fn=lambda t: torch.nn.init.trunc_normal_(t, 0, stddev, -2 * stddev,
                                                                                      2 * stddev)),
        ])

    class WideDeep(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ebc = ebc
            self.mlp = tm.mlp(torch, args.dense_features + args.fields * cc.DIM, args.seed)

        def forward(self, dense, features):
            pooled = self.ebc(features).to_dict()
            deep = torch.cat([pooled[f] for f in fields], 1)
            return pooled["wide"][:, 0] + self.mlp(torch.cat([dense, deep], 1)).reshape(-1)

    model = WideDeep()
    apply_optimizer_in_backward(torch.optim.Adagrad, model.ebc.embedding_bags["wide"].parameters(),
                                {"lr": args.wide_lr, "eps": 1e-7})
    apply_optimizer_in_backward(torch.optim.Adagrad, model.ebc.embedding_bags["deep"].parameters(),
                                {"lr": args.lr, "eps": 1e-7})
    env = ShardingEnv.from_process_group(dist.GroupMember.WORLD)
    planner = EmbeddingShardingPlanner(topology=Topology(world_size=workers, compute_device="cpu"))
    plan = planner.collective_plan(model, None, dist.GroupMember.WORLD)
    dmp = DistributedModelParallel(module=model, env=env, device=torch.device("cpu"), plan=plan)
    if index == 0:
        print(f"torchrec plan: {plan}", flush=True)
    dense_opt = KeyedOptimizerWrapper(dict(in_backward_optimizer_filter(dmp.named_parameters())),
                                      lambda ps: tm.adagrad(torch, ps, args.lr))
    optimizer = CombinedOptimizer([dmp.fused_optimizer, dense_opt])
    loss_fn = torch.nn.BCEWithLogitsLoss()
    wide_width = args.fields + len(cc.CROSSES) + 1

    def features(keys):
        n = len(keys)
        wide = tm.rows_of(cc.wide_keys(keys), args.rows).reshape(-1)
        deep = tm.rows_of(keys, args.rows).T.reshape(-1)  # key-major: field 0 of every example, ...
        lengths = np.concatenate([np.full(n, wide_width, np.int64), np.ones(n * args.fields, np.int64)])
        return torchrec.KeyedJaggedTensor.from_lengths_sync(keys=["wide"] + fields,
                                                            values=torch.from_numpy(np.concatenate([wide, deep])),
                                                            lengths=torch.from_numpy(lengths))

    def score(dense, keys):
        with torch.no_grad():
            return dmp(torch.from_numpy(dense), features(keys)).numpy()

    reader = cc.ShardReader(args.train, args.batch, index, workers)
    steps = cc.steps_per_worker(args, workers)
    progress = cc.Progress(args, workers * args.batch, "torchrec sync", printing=index == 0)
    evaluate = lambda: cc.evaluate(score, args.test)  # every rank takes part (all-to-all)
    dist.barrier()
    progress.start = progress.interval_start = time.perf_counter()
    for step in range(1, steps + 1):
        (y, dense, keys), input_s = cc.timed(reader.next)
        progress.input_time(input_s)
        kjt = features(keys)
        optimizer.zero_grad()
        loss = loss_fn(dmp(torch.from_numpy(dense), kjt), torch.from_numpy(y))
        (loss * len(y)).backward()  # the summed loss, as dsgd-ctr; the tables' rows are updated here (fused); DDP averages the MLP's gradients
        optimizer.step()
        progress.step(step, loss.item(), evaluate)
    dist.barrier()
    progress.finish(steps, evaluate, workers, 0)
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
