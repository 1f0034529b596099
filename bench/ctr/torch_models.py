# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch pieces of bench/ctr's torch peers: the Wide & Deep module, FTRL on a sparse
gradient (torch has none), and the batch's indices into the key-mod-R tables."""

import numpy as np

import ctr_common as cc


def setup():
    cc.one_thread()
    import torch
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    return torch


def rows_of(keys, rows):
    """Table rows of uint64 keys: key mod R, as int64 (what nn.Embedding indexes with)."""
    return (keys % np.uint64(rows)).astype(np.int64)


def mlp(torch, inputs, seed):
    """inputs-256-128-1 ReLU, Glorot uniform kernels (ctr_common.glorot_mlp), zero biases."""
    params = cc.glorot_mlp(inputs, seed=seed)
    layers = []
    for kernel in params[0::2]:
        layers += [torch.nn.Linear(kernel.shape[0], kernel.shape[1]), torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers[:-1])
    with torch.no_grad():
        for p, value in zip(net.parameters(), params):
            p.copy_(torch.from_numpy(np.ascontiguousarray(value.T) if value.ndim == 2 else value))
    return net


def wide_deep(torch, args):
    """Wide & Deep with its two tables as torch modules (sparse gradients)."""

    class WideDeep(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wide = torch.nn.EmbeddingBag(args.rows, 1, mode="sum", sparse=True)
            self.deep = torch.nn.Embedding(args.rows, cc.DIM, sparse=True)
            with torch.no_grad():
                self.wide.weight.zero_()
                self.deep.weight.copy_(torch.from_numpy(cc.truncated_normal(args.rows, cc.DIM, cc.DIM ** -0.5,
                                                                            args.seed + 1)))
            self.mlp = mlp(torch, args.dense_features + args.fields * cc.DIM, args.seed)

        def forward(self, dense, wide_rows, deep_rows):
            e = self.deep(deep_rows).reshape(dense.shape[0], -1)
            return self.wide(wide_rows).reshape(-1) + self.mlp(torch.cat([dense, e], 1)).reshape(-1)

    return WideDeep()


class SparseFtrl:
    """TF's FTRL (l1 = l2 = 0, power -0.5) on the rows of a sparse gradient of a R x 1 weight."""

    def __init__(self, torch, weight, lr, initial_accumulator=0.1):
        self.torch, self.weight, self.lr = torch, weight, lr
        self.n = torch.full_like(weight.data, initial_accumulator)
        self.z = torch.zeros_like(weight.data)

    def apply(self, rows, g):
        """rows: int64 [K] unique, g: [K, 1] their gradients."""
        torch = self.torch
        with torch.no_grad():
            w = self.weight.data
            n_old = self.n[rows]
            n_new = n_old + g * g
            root = n_new.sqrt()
            z = self.z[rows] + g - (root - n_old.sqrt()) / self.lr * w[rows]
            self.z[rows] = z
            self.n[rows] = n_new
            w[rows] = -z * self.lr / root

    def step(self):
        grad = self.weight.grad
        if grad is None:
            return
        grad = grad.coalesce()
        self.apply(grad.indices()[0], grad.values())

    def zero_grad(self):
        self.weight.grad = None


def adagrad(torch, params, lr):
    """TF's Adagrad (initial accumulator 0.1); torch's handles sparse gradients too."""
    return torch.optim.Adagrad(params, lr=lr, initial_accumulator_value=0.1, eps=1e-7)
