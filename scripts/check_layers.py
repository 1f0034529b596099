#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Checks the include directions of include/dsgd/ (docs/code_organization.md, "Layers"):
#   1. a header includes dsgd headers only of its own layer or of the layers ALLOWED lists for it;
#   2. a policy header (device, optim, update, compress, placement) includes nothing but the
#      concepts.hpp of another policy family: no policy knows a concrete policy of another;
#   3. no header includes a .cuh unless it is a .cuh itself;
#   4. the umbrella dsgd.hpp includes every public host header (all but detail/, impl/, the ps's
#      request handlers in server/requests/, model/, which needs BLAS, cluster/mpi.hpp, which
#      needs MPI, adapt/, whose headers need the library they adapt (Eigen, libtorch), and .cuh);
#   5. nothing outside adapt/ includes adapt/: the library never needs a user's model library.
# Prints one line per violation (file, line, what it includes, the rule) and exits 1 if any.
#   scripts/check_layers.py [include-dir]
import pathlib
import re
import sys

# Layer of a header: its first folder under include/dsgd/, "core" for the files at the top and
# for detail/, "top" for the headers that compose everything.
TOP = {"dsgd.hpp", "trainer.hpp"}
CORE = {"config.hpp", "error.hpp", "version.hpp", "fwd.hpp"}

# What each layer may include besides itself. Dependencies point one way: a layer lists only
# layers below it (DESIGN.md, "The shape").
ALLOWED = {
    "core": set(),
    "device": {"core"},
    "data": {"core"},
    "tensor": {"device", "core"},
    "optim": {"device", "core"},
    # Embedding tables (DESIGN.md, "Embedding tables"): the ps's hash tables of rows with their
    # admission and eviction, and the worker's lookups and combiners; rows are updated by optim's
    # row optimizers.
    "embedding": {"optim", "device", "tensor", "core"},
    "update": {"embedding", "optim", "device", "tensor", "core"},
    "compress": {"device", "core"},
    # placement::pinned reads TF device strings ("/job:ps/task:0"), cluster/device_spec.hpp.
    "placement": {"cluster", "tensor", "core"},
    "cluster": {"device", "core"},
    "transport": {"cluster", "core"},
    "checkpoint": {"embedding", "placement", "tensor", "core"},
    # Adapters present a user's model (Eigen, libtorch) as variables: they may use everything
    # below the trainer, and nothing includes them (rule 5).
    "adapt": {"train", "collective", "server", "client", "protocol", "transport", "checkpoint", "update", "embedding",
              "compress", "optim", "placement", "cluster", "tensor", "device", "data", "core"},
    "model": {"tensor", "device", "optim", "core"},
    # The wire protocol between ps tasks and workers lies below both; the ps side (server) and
    # the worker side (client) never include each other.
    "protocol": {"transport", "compress", "placement", "cluster", "tensor", "device", "core"},
    "server": {"protocol", "transport", "checkpoint", "update", "embedding", "compress", "optim",
               "placement", "cluster", "tensor", "device", "core"},
    "client": {"protocol", "transport", "checkpoint", "embedding", "compress", "optim", "placement",
               "cluster", "tensor", "device", "core"},
    # The worker side's collectives among the replicas themselves (rings over a transport, the
    # sharded update): no ps takes part, so neither the ps side nor the ps protocol is below it.
    "collective": {"transport", "checkpoint", "optim", "placement", "tensor", "cluster", "device", "core"},
    "train": {"collective", "server", "client", "protocol", "transport", "checkpoint", "update", "embedding",
              "compress", "optim", "placement", "cluster", "tensor", "device", "data", "core"},
    "top": None,  # anything
}
POLICIES = {"device", "optim", "update", "compress", "placement"}
# Public headers that need a dependency the core does not (their own targets): not in dsgd.hpp.
NEEDS_MORE = {"cluster/mpi.hpp"}
INCLUDE = re.compile(r'^\s*#\s*include\s*<dsgd/([^>]+)>')


def layer_of(rel: str) -> str:
    parts = rel.split("/")
    if len(parts) == 1:
        if parts[0] in TOP:
            return "top"
        if parts[0] in CORE:
            return "core"
        return "unknown"
    if parts[0] == "detail":
        return "core"
    return parts[0]


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                        pathlib.Path(__file__).resolve().parent.parent / "include") / "dsgd"
    problems = []
    headers = sorted(p for p in root.rglob("*") if p.suffix in (".hpp", ".cuh"))
    if not headers:
        print(f"check_layers: no headers under {root}")
        return 1
    for path in headers:
        rel = path.relative_to(root).as_posix()
        mine = layer_of(rel)
        if mine == "unknown":
            problems.append(f"{rel}: a header at the top of include/dsgd/ that is neither core "
                            f"({', '.join(sorted(CORE))}) nor top ({', '.join(sorted(TOP))})")
            continue
        if mine not in ALLOWED:
            problems.append(f"{rel}: folder '{mine}' is no layer of check_layers.py's table")
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            theirs = layer_of(target)
            where = f"{rel}:{number}: includes <dsgd/{target}>"
            if target.endswith(".cuh") and path.suffix != ".cuh":
                problems.append(f"{where}, a .cuh, from a .hpp (only nvcc can compile it)")
            allowed = ALLOWED[mine]
            if theirs != mine and allowed is not None and theirs not in allowed:
                problems.append(f"{where}: layer '{mine}' may include only "
                                f"{', '.join(sorted(allowed | {mine}))}, not '{theirs}'")
            if theirs == "adapt" and mine != "adapt":
                problems.append(f"{where}: nothing outside adapt/ may include an adapter (it needs a "
                                f"third-party library)")
            if (mine in POLICIES and theirs in POLICIES and theirs != mine and
                    not target.endswith("/concepts.hpp")):
                problems.append(f"{where}: a {mine} policy header may include only the concepts.hpp "
                                f"of another policy family, not a concrete {theirs} policy")
    umbrella = root / "dsgd.hpp"
    if umbrella.exists():
        included = {m.group(1) for line in umbrella.read_text().splitlines()
                    if (m := INCLUDE.match(line))}
        for path in headers:
            rel = path.relative_to(root).as_posix()
            parts = rel.split("/")
            public = (path.suffix == ".hpp" and rel != "dsgd.hpp" and "detail" not in parts
                      and "impl" not in parts and "requests" not in parts and parts[0] not in ("model", "adapt")
                      and rel not in NEEDS_MORE)
            if public and rel not in included:
                problems.append(f"dsgd.hpp: does not include the public header <dsgd/{rel}>")
    else:
        problems.append("dsgd.hpp: the umbrella header is missing")
    for p in problems:
        print(p)
    print(f"check_layers: {len(headers)} headers, {len(problems)} violations")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
