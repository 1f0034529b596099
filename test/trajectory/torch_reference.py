# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""The reference trajectory of test/trajectory: one PyTorch process trains the Fashion-MNIST
MLP with momentum SGD, and writes where it started and what it did, so that dsgd can be started
from the same point on the same data order and checked against it (trajectory_job.cpp).

  python3 torch_reference.py --out DIR [--steps 50] [--hidden 1024,1024] [--batch 128] [--parts 2]

Writes, all little-endian:
  init.bin    the initial parameters, float32, in dsgd's order and layout: for each layer its
              kernel (inputs x outputs, row-major; Glorot uniform from numpy's seed 0, as
              bench/compare/peers.py draws them) then its bias (zeros)
  order.bin   int32 training-set indices, --batch per step, --steps steps (a permutation of
              the training set from seed 7): two workers of a sync job each take one half
  losses.bin  float32, the mean loss of each step's batch, computed before its update
  final.bin   float32, the parameters after the last step, as init.bin
  meta.txt    "hidden=... steps=... batch=... lr=... momentum=..."

One thread, no dropout, no weight decay: torch.optim.SGD(lr, momentum) on the mean of the
--parts parts' mean gradients, each part's computed on its own, as DistributedDataParallel with
that many workers does and as dsgd's sync_average does (the sum of the workers' gradients times
1/workers). --parts 1 takes the batch's mean gradient whole instead: the same number in exact
arithmetic, other roundings in floats, and at this learning rate the difference grows (docs/
convergence.md, "Same start, same result").
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "compare"))
import peers  # noqa: E402  (the data reader and initial draws of the comparison)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--hidden", default="1024,1024")
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--parts", type=int, default=2)
    args = p.parse_args()
    if args.parts < 1 or args.batch % args.parts:
        p.error(f"--parts {args.parts}: expected a divisor of --batch {args.batch}")
    try:
        import torch
    except ImportError as e:
        print(f"torch_reference.py: skipped: no PyTorch for {sys.executable} ({e}); "
              "Debian: apt-get install python3-torch", file=sys.stderr)
        sys.exit(77)
    torch.set_num_threads(1)
    hidden = [int(w) for w in args.hidden.split(",")]
    widths = (784, *hidden, 10)
    os.makedirs(args.out, exist_ok=True)

    params = peers.initial_parameters(widths)
    images, labels = peers.load("train")
    order = np.random.default_rng(7).permutation(len(labels))[: args.steps * args.batch].astype(np.int32)

    def dump(name, arrays):
        with open(os.path.join(args.out, name), "wb") as f:
            for a in arrays:
                f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())

    dump("init.bin", params)
    order.astype("<i4").tofile(os.path.join(args.out, "order.bin"))
    net = peers.torch_model(torch, params)
    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = torch.nn.CrossEntropyLoss()
    losses = []
    for step in range(args.steps):
        idx = order[step * args.batch:(step + 1) * args.batch]
        optimizer.zero_grad(set_to_none=True)
        part = args.batch // args.parts
        loss = 0.0
        for k in range(args.parts):
            mine = idx[k * part:(k + 1) * part]
            loss_k = loss_fn(net(torch.from_numpy(images[mine])), torch.from_numpy(labels[mine]))
            (loss_k / args.parts).backward()  # accumulates the mean of the parts' gradients
            loss += loss_k.item() / args.parts
        optimizer.step()
        losses.append(loss)
    dump("losses.bin", [np.array(losses, dtype=np.float32)])
    final = [p.detach().numpy() for p in net.parameters()]
    dump("final.bin", [a.T if a.ndim == 2 else a for a in final])  # nn.Linear keeps out x in
    with open(os.path.join(args.out, "meta.txt"), "w") as f:
        f.write(f"hidden={args.hidden} steps={args.steps} batch={args.batch} lr={args.lr} "
                f"momentum={args.momentum} parts={args.parts} torch={torch.__version__}\n")
    print(f"torch {torch.__version__}: {args.steps} steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
