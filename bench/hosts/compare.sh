#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# The 1.86M-parameter MLP (784-1024-1024-10) trained by 2 workers across network-namespace
# hosts (scripts/netns_hosts.sh, one task per host) whose links are shaped, dsgd against
# PyTorch on the same model, batch, optimizer, schedule and threads (one per process):
#   dsgd_sync          2 ps + 2 workers, sync, no compression
#   dsgd_sync_bf16     the same, pushes and pulls as bf16
#   dsgd_sync_top_k    the same, pushes as top_k(0.01) with error feedback, pulls as bf16
#   dsgd_sync_colocated, dsgd_sync_bf16_colocated, dsgd_sync_top_k_colocated
#                      as dsgd_sync, dsgd_sync_bf16 and dsgd_sync_top_k on 2 hosts, ps:k beside worker:k (as
#                      ps-lite and BytePS deploy): the hosts and links DDP has
#   dsgd_local_colocated, dsgd_local_bf16_colocated
#                      local SGD on those 2 hosts (--rule local --local-steps 8: one average
#                      every 8 steps), without compression and with bf16 both ways
#   torch_ddp          DDP over gloo, 2 workers
#   torch_ddp_fp16     the same with DDP's fp16_compress_hook
#   torch_rpc_sync     the PyTorch RPC parameter server, 1 ps + 2 workers, TensorPipe over TCP
#                      only (its cma channel would reach across namespaces, not across machines)
# Every host's outgoing link is shaped alike: a rate (a token bucket) and a delay (netem, or
# the harness's userspace forwarder without it). Per link, systems interleaved within each
# repetition so that a noisy neighbour hits them alike; bench/compare/summarize.py then gives
# each system's median examples/s and time to 0.88 (and to 0.87), and dsgd / peer ratios of the
# medians, in DIR/LINK/summary_0.88.md (and _0.87).
# Needs root (ip netns) and iproute2; PyTorch is Debian's python3-torch (setup.sh installs it).
#   bench/hosts/compare.sh [--reps N] [--epochs E] [--links "10gbit+0.1ms 1gbit+0.2ms"]
#                          [--only SYSTEM]... [--out DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
reps=1 epochs=5 links="10gbit+0.1ms 1gbit+0.2ms" only="" out=""
while (($#)); do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --links) links=$2; shift 2 ;;
    --only) only="$only $2"; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "compare.sh: unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "compare.sh: needs root for network namespaces" >&2; exit 2; }
"$root/scripts/setup.sh"
build=${BUILD:-"$root/build-compare"}
[[ -n ${BUILD:-} ]] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target dsgd-train dsgd-launch >/dev/null
example=$build/tools/dsgd-train launch=$build/tools/dsgd-launch harness=$root/scripts/netns_hosts.sh
py=/usr/bin/python3  # Debian's, with python3-torch (the same 1.13 as libtorch-dev)
peers=$root/bench/compare/peers.py
out=${out:-"$build/hosts_compare"}
mkdir -p "$out"
trap '"$harness" down hc >/dev/null 2>&1 || true' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_WAIT_POLICY=passive PYTHONWARNINGS=ignore
common=(--epochs "$epochs" --hidden 1024,1024)

# hosts LINK NAME PS NODES CHIEF_HOST COMMAND...: the cluster of PS ps tasks and 2 workers on
# NODES namespace hosts (dsgd-launch --nnodes: task k, ps tasks first, on host k mod NODES), on
# links shaped as LINK.
hosts() {
  local link=$1 name=$2 ps=$3 n=$4 chief=$5 part shape=() pids=() k list=""
  shift 5
  for part in ${link//+/ }; do
    case $part in
      *bit) shape+=(--rate "$part") ;;
      *s) shape+=(--delay "$part") ;;
      *) echo "compare.sh: link $link: $part is neither a rate (1gbit) nor a delay (0.2ms)" >&2; exit 2 ;;
    esac
  done
  for ((k = 1; k <= n; ++k)); do list+="${list:+,}h$k"; done
  "$harness" up hc "$n" "${shape[@]}" >/dev/null
  for ((k = 1; k <= n; ++k)); do
    # gloo and TensorPipe bind to the interface named here, not to what the host name resolves to.
    local address iface
    address=$("$harness" address hc "$k")
    iface=$("$harness" exec hc "$k" ip -o -4 addr show | awk -v a="$address" '$4 ~ "^" a "/" {print $2}')
    "$harness" exec hc "$k" env -u TF_CONFIG DSGD_CLUSTER_TOKEN=bench GLOO_SOCKET_IFNAME="$iface" \
      TP_SOCKET_IFNAME="$iface" "$launch" --nnodes "$n" \
      --node-rank $((k - 1)) --hosts "$list" --port-base 2222 --ps "$ps" --workers 2 --timeout 1800 -- \
      "$@" "${common[@]}" --csv "$out/$name.csv" >"$out/$name.log.h$k" 2>&1 &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  cp "$out/$name.log.h$chief" "$out/$name.log"
  "$harness" down hc >/dev/null
  ((rc == 0)) || echo "   ($name: exit status $rc; see $out/$name.log.h*)"
}

wanted() { [[ -z $only ]] || [[ " $only " == *" $1 "* ]]; }

for link in $links; do
  dir="$out/${link//[^a-z0-9.]/_}"
  mkdir -p "$dir"
  for ((rep = 1; rep <= reps; ++rep)); do
    run() {  # SYSTEM PS NODES CHIEF_HOST COMMAND...
      local system=$1
      shift
      wanted "$system" || return 0
      echo "== $link, $system (rep $rep)"
      hosts "$link" "${link//[^a-z0-9.]/_}/${system}_r$rep" "$@"
      tail -1 "$dir/${system}_r$rep.csv" 2>/dev/null | sed 's/^/   last evaluation: /'
    }
    top_k=(--compress "top_k(0.01)" --pull-compress bf16)
    run dsgd_sync 2 4 3 "$example" --rule sync
    run dsgd_sync_bf16 2 4 3 "$example" --rule sync --compress bf16 --pull-compress bf16
    run dsgd_sync_top_k 2 4 3 "$example" --rule sync "${top_k[@]}"
    run dsgd_sync_colocated 2 2 1 "$example" --rule sync
    run dsgd_sync_bf16_colocated 2 2 1 "$example" --rule sync --compress bf16 --pull-compress bf16
    run dsgd_sync_top_k_colocated 2 2 1 "$example" --rule sync "${top_k[@]}"
    run dsgd_local_colocated 2 2 1 "$example" --rule local --local-steps 8
    run dsgd_local_bf16_colocated 2 2 1 "$example" --rule local --local-steps 8 --compress bf16 --pull-compress bf16
    run torch_ddp 0 2 1 "$py" "$peers" ddp
    run torch_ddp_fp16 0 2 1 "$py" "$peers" ddp --fp16-hook
    run torch_rpc_sync 1 3 2 "$py" "$peers" rpc --rule sync --tcp-only
  done
  for target in 0.88 0.87; do
    echo "## $link, time to $target"
    "$py" "$root/bench/compare/summarize.py" --dir "$dir" --target "$target"
    mv "$dir/summary.md" "$dir/summary_$target.md"
  done
done
