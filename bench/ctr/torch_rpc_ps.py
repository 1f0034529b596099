# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""dsgd-ctr's Wide & Deep on a torch.distributed.rpc parameter server, for bench/ctr.

bench/compare/peers.py's RPC parameter server (TensorPipe, one ParameterServer object per ps
process, gradients pushed and values answered in the same call, sync steps by
@rpc.functions.async_execution futures) extended to the embedding tables, as PyTorch's
"Implementing a Parameter Server Using Distributed RPC Framework" tutorial shapes it:

  tables    row r = key mod R lives on ps r mod P at r div P: the wide table (R x 1, FTRL or
            Adagrad) and the deep one (R x 16, Adagrad)
  MLP       its six variables placed greedily by bytes over the ps tasks (dsgd's placement), Adagrad
  a step    a worker pulls the rows of its batch's unique keys from each ps (one call a ps),
            computes the batch on them (autograd on the pulled rows), then pushes one call a ps:
            the rows' gradients and that ps's MLP gradients; the answer is the ps's new MLP values
  rules     hybrid: the rows are applied at once (async), the MLP waits for every worker's
            gradients of the step and averages them (sync); sync: the rows wait and average too

  dsgd-launch --ps P --workers 2 -- python torch_rpc_ps.py --train F.ctr --test G.ctr --rule hybrid
"""

import sys
import threading
import time

import numpy as np

import ctr_common as cc
import torch_models as tm


class ParameterServer:
    """One ps task: its rows of both tables with their optimizer state, and its MLP variables."""

    def __init__(self, torch, args, ps, shards, workers):
        self.torch, self.args, self.workers = torch, args, workers
        local = (args.rows - ps + shards - 1) // shards  # the rows r < R with r mod P = ps
        self.wide = torch.zeros(local, 1)
        self.deep = torch.from_numpy(cc.truncated_normal(local, cc.DIM, cc.DIM ** -0.5, args.seed + 1 + 1000 * ps))
        if args.wide_optimizer == "ftrl":
            self.wide_opt = tm.SparseFtrl(torch, self.wide, args.wide_lr)
        else:
            self.wide_opt = RowAdagrad(torch, self.wide, args.wide_lr)
        self.deep_opt = RowAdagrad(torch, self.deep, args.lr)
        mine = [i for i, owner in enumerate(placement(args)) if owner == ps]
        values = cc.glorot_mlp(args.dense_features + args.fields * cc.DIM, seed=args.seed)
        self.dense_ids = mine
        self.dense = [torch.from_numpy(np.ascontiguousarray(values[i].T) if values[i].ndim == 2 else values[i])
                      for i in mine]
        self.dense_acc = [torch.full_like(p, 0.1) for p in self.dense]
        self.lock = threading.Lock()
        self.pending = []  # the step's futures
        self.dense_sum = None
        self.table_parts = []  # sync tables: (wide rows, grads, deep rows, grads) of the step

    def pull(self, wide_rows, deep_rows):
        with self.lock:
            return self.wide[wide_rows], self.deep[deep_rows]

    def apply_tables(self, wide_rows, wide_grads, deep_rows, deep_grads, scale=1.0):
        self.wide_opt.apply(wide_rows, wide_grads * scale)
        self.deep_opt.apply(deep_rows, deep_grads * scale)

    def apply_dense(self):
        torch = self.torch
        with torch.no_grad():
            for w, acc, g in zip(self.dense, self.dense_acc, self.dense_sum):
                g /= self.workers
                acc.add_(g * g)
                w.sub_(self.args.lr * g / (acc.sqrt() + 1e-7))


class RowAdagrad:
    """Adagrad (initial accumulator 0.1) on the rows of a table."""

    def __init__(self, torch, table, lr):
        self.table, self.lr = table, lr
        self.acc = torch.full_like(table, 0.1)

    def apply(self, rows, g):
        acc = self.acc[rows] + g * g
        self.acc[rows] = acc
        self.table[rows] -= self.lr * g / (acc.sqrt() + 1e-7)


def placement(args):
    """The MLP variable i's ps: greedy by bytes, largest first (dsgd's greedy_by_bytes)."""
    widths = (args.dense_features + args.fields * cc.DIM, *cc.HIDDEN, 1)
    sizes = []
    for a, b in zip(widths[:-1], widths[1:]):
        sizes += [a * b, b]
    load = [0] * args.ps
    owner = [0] * len(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        p = min(range(args.ps), key=lambda p: load[p])
        owner[i] = p
        load[p] += sizes[i]
    return owner


def merge_rows(torch, rows, grads):
    """Sums the gradients of equal rows: (unique rows, summed gradients)."""
    rows = torch.cat(rows)
    grads = torch.cat(grads)
    unique, inverse = torch.unique(rows, return_inverse=True)
    out = torch.zeros(len(unique), grads.shape[1])
    out.index_add_(0, inverse, grads)
    return unique, out


PS = None


def ps_pull(wide_rows, deep_rows):
    return PS.pull(wide_rows, deep_rows)


def ps_push(wide_rows, wide_grads, deep_rows, deep_grads, dense_grads):
    """A worker's gradients of one step; answers this ps's MLP values once the step is complete."""
    import torch
    future = torch.futures.Future()
    with PS.lock:
        if PS.args.rule == "sync":
            PS.table_parts.append((wide_rows, wide_grads, deep_rows, deep_grads))
        else:
            PS.apply_tables(wide_rows, wide_grads, deep_rows, deep_grads)
        if PS.dense_sum is None:
            PS.dense_sum = [g.clone() for g in dense_grads]
        else:
            for s, g in zip(PS.dense_sum, dense_grads):
                s.add_(g)
        PS.pending.append(future)
        if len(PS.pending) == PS.workers:
            if PS.table_parts:
                parts = PS.table_parts
                wr, wg = merge_rows(torch, [p[0] for p in parts], [p[1] for p in parts])
                dr, dg = merge_rows(torch, [p[2] for p in parts], [p[3] for p in parts])
                PS.apply_tables(wr, wg, dr, dg, 1.0 / PS.workers)
                PS.table_parts = []
            PS.apply_dense()
            result = [p.clone() for p in PS.dense]
            waiting, PS.pending, PS.dense_sum = PS.pending, [], None
            for f in waiting:
                f.set_result(result)
    return future


def ps_dense():
    with PS.lock:
        return [p.clone() for p in PS.dense]


class Worker:
    """A worker's view of the ps tasks: pulls and pushes split by row owner."""

    def __init__(self, torch, rpc, args, shards, net):
        self.torch, self.rpc, self.args, self.shards, self.net = torch, rpc, args, shards, net
        self.owner = placement(args)
        self.params = list(net.parameters())

    def split(self, rows):
        """Per ps: (positions in rows, local rows)."""
        P = self.shards
        if P == 1:
            return [(None, rows)]
        out = []
        for p in range(P):
            at = np.flatnonzero(rows % P == p)
            out.append((at, rows[at] // P))
        return out

    def pull(self, wide_u, deep_u):
        torch, P = self.torch, self.shards
        ws, ds = self.split(wide_u), self.split(deep_u)
        futures = [self.rpc.rpc_async(f"ps{p}", ps_pull,
                                      args=(torch.from_numpy(ws[p][1]), torch.from_numpy(ds[p][1])))
                   for p in range(P)]
        wide = torch.empty(len(wide_u), 1)
        deep = torch.empty(len(deep_u), cc.DIM)
        for p, f in enumerate(futures):
            w, d = f.wait()
            if ws[p][0] is None:
                wide, deep = w, d
            else:
                wide[ws[p][0]] = w
                deep[ds[p][0]] = d
        return wide, deep, ws, ds

    def push(self, ws, wide_grad, ds, deep_grad):
        torch = self.torch
        grads = [p.grad for p in self.params]
        futures = []
        for p in range(self.shards):
            wg = wide_grad if ws[p][0] is None else wide_grad[ws[p][0]]
            dg = deep_grad if ds[p][0] is None else deep_grad[ds[p][0]]
            mine = [grads[i] for i, o in enumerate(self.owner) if o == p]
            futures.append(self.rpc.rpc_async(f"ps{p}", PUSH, args=(torch.from_numpy(ws[p][1]), wg,
                                                                     torch.from_numpy(ds[p][1]), dg, mine)))
        with torch.no_grad():
            for p, f in enumerate(futures):
                values = f.wait()
                for i, v in zip([i for i, o in enumerate(self.owner) if o == p], values):
                    self.params[i].copy_(v)


PUSH = None


def main():
    global PS, PUSH
    args = cc.arguments(__doc__, rules=("hybrid", "sync"))
    torch = tm.setup()
    import torch.distributed.rpc as rpc

    # The decorated function must be the module's attribute on every task: RPC sends it by name.
    PUSH = rpc.functions.async_execution(ps_push)
    globals()["ps_push"] = PUSH
    cluster, kind, index = cc.task_from_environment()
    workers = len(cluster["worker"])
    shards = len(cluster.get("ps", []))
    if shards < 1 or kind not in ("ps", "worker"):
        cc.die("torch_rpc_ps.py: run with dsgd-launch --ps P --workers N")
    args.ps = shards
    rank = index if kind == "ps" else shards + index
    options = rpc.TensorPipeRpcBackendOptions(init_method=f"tcp://{cluster['ps'][0]}", num_worker_threads=8,
                                              rpc_timeout=600)
    if kind == "ps":
        PS = ParameterServer(torch, args, index, shards, workers)
        rpc.init_rpc(f"ps{index}", rank=rank, world_size=shards + workers, rpc_backend_options=options)
        rpc.shutdown()  # waits for every worker to finish
        return
    rpc.init_rpc(f"worker{index}", rank=rank, world_size=shards + workers, rpc_backend_options=options)
    mlp = tm.mlp(torch, args.dense_features + args.fields * cc.DIM, args.seed)
    worker = Worker(torch, rpc, args, shards, mlp)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    reader = cc.ShardReader(args.train, args.batch, index, workers)
    steps = cc.steps_per_worker(args, workers)
    progress = cc.Progress(args, workers * args.batch, f"torch_rpc_ps {args.rule}")

    def forward(dense, keys, wide, deep, wi, di):
        n = len(keys)
        w = wide[wi].reshape(n, -1).sum(1)
        e = deep[di].reshape(n, -1)
        return w + mlp(torch.cat([torch.from_numpy(dense), e], 1)).reshape(-1)

    def score(dense, keys):
        wu, wi = np.unique(tm.rows_of(cc.wide_keys(keys), args.rows), return_inverse=True)
        du, di = np.unique(tm.rows_of(keys, args.rows), return_inverse=True)
        wide, deep, _, _ = worker.pull(wu, du)
        with torch.no_grad():
            return forward(dense, keys, wide, deep, torch.from_numpy(wi.reshape(-1)),
                           torch.from_numpy(di.reshape(-1))).numpy()

    evaluate = lambda: cc.evaluate(score, args.test)
    progress.start = progress.interval_start = time.perf_counter()
    for step in range(1, steps + 1):
        (y, dense, keys), input_s = cc.timed(reader.next)
        progress.input_time(input_s)
        wu, wi = np.unique(tm.rows_of(cc.wide_keys(keys), args.rows), return_inverse=True)
        du, di = np.unique(tm.rows_of(keys, args.rows), return_inverse=True)
        wide, deep, ws, ds = worker.pull(wu, du)
        wide.requires_grad_(True)
        deep.requires_grad_(True)
        for p in mlp.parameters():
            p.grad = None
        loss = loss_fn(forward(dense, keys, wide, deep, torch.from_numpy(wi.reshape(-1)),
                               torch.from_numpy(di.reshape(-1))), torch.from_numpy(y))
        (loss * len(y)).backward()  # the summed loss, as dsgd-ctr
        worker.push(ws, wide.grad, ds, deep.grad)  # answers the averaged MLP of this step
        if index == 0:
            progress.step(step, loss.item(), evaluate)
    if index == 0:
        progress.finish(steps, evaluate, workers, shards)
    rpc.shutdown()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
