#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Several hosts on one machine: network namespaces joined by veth pairs to a bridge, each with
# an address of its own, so tasks in different namespaces are on different hosts to the
# transport (no shared memory, payload CRCs on, as between machines).
#
#   scripts/netns_hosts.sh up NAME N [--rate R] [--delay D] [--loss L]
#       makes hosts NAME-h1 .. NAME-hN (namespaces) with addresses 10.213.S.1 .. 10.213.S.N/24,
#       S derived from NAME, all on a bridge in a namespace of its own (NAME-sw), so nothing of
#       the machine's own network is touched or reachable; optionally shapes every host's link
#       with tc: a rate alone (such as 10gbit) with a token bucket (tbf), a delay (such as 0.1ms)
#       or loss (such as 0.1%) with netem, which some kernels lack (exit 77 then).
#       Writes NAME's hosts file (/tmp/dsgd-netns-NAME/hosts: "ADDRESS hK", one per host),
#       which every namespace also sees as /etc/hosts (ip netns exec binds
#       /etc/netns/NS/hosts), so the hosts reach each other by name too; their resolv.conf names
#       only loopback, so no DNS query leaves a namespace.
#   scripts/netns_hosts.sh address NAME K      prints host K's address
#   scripts/netns_hosts.sh exec NAME K CMD...  runs CMD in host K
#   scripts/netns_hosts.sh shape NAME K [--rate R] [--delay D] [--loss L] | --clear
#   scripts/netns_hosts.sh down NAME           removes everything `up` made (safe to repeat)
#
# Needs root (ip netns) and iproute2; exits 77 with the reason when they are missing, which the
# tests report as skipped.
set -euo pipefail

skip() {
  echo "netns_hosts.sh: skipped: $*" >&2
  exit 77
}
usage() {
  sed -n '9,24p' "$0" >&2
  exit 2
}
(($# >= 2)) || usage
verb=$1 name=$2
shift 2
[[ $name =~ ^[a-z0-9]{1,8}$ ]] || { echo "netns_hosts.sh: NAME \"$name\" must be 1-8 lower-case letters or digits" >&2; exit 2; }
PATH=$PATH:/usr/sbin:/sbin
state=/tmp/dsgd-netns-$name
# The third octet: a hash of NAME, so two harnesses with different names do not overlap.
subnet=$(( $(printf '%s' "$name" | cksum | cut -d' ' -f1) % 200 + 20 ))
address() { echo "10.213.$subnet.$1"; }

shape_args() {
  local netem=()
  while (($#)); do
    case $1 in
      --rate) netem+=(rate "$2"); shift 2 ;;
      --delay) netem+=(delay "$2"); shift 2 ;;
      --loss) netem+=(loss "$2"); shift 2 ;;
      *) echo "netns_hosts.sh: unknown shaping option $1" >&2; exit 2 ;;
    esac
  done
  echo "${netem[@]:-}"
}

shape() {  # host, netem arguments (empty: none)
  local k=$1
  shift
  ip -n "$name-h$k" link set "v$k" up
  tc -n "$name-h$k" qdisc del dev "v$k" root 2>/dev/null || true
  (($#)) || return 0
  if [[ $# -eq 2 && $1 == rate ]]; then
    # A rate alone: a token bucket, in every kernel; a burst of 1 MiB lets a 10 Gbit/s link
    # send at full speed between the timer's ticks.
    tc -n "$name-h$k" qdisc add dev "v$k" root tbf rate "$2" burst 1mb latency 100ms
  elif ! out=$(tc -n "$name-h$k" qdisc add dev "v$k" root netem "$@" 2>&1); then
    [[ $out == *"qdisc kind is unknown"* ]] && { down; skip "this kernel has no netem qdisc (sch_netem) for delay or loss"; }
    echo "netns_hosts.sh: tc netem $*: $out" >&2
    return 1
  fi
}

down() {
  if [[ -f $state/count ]]; then
    local n
    n=$(cat "$state/count")
    for ((k = 1; k <= n; ++k)); do
      ip netns del "$name-h$k" 2>/dev/null || true
      rm -rf "/etc/netns/$name-h$k"
    done
  fi
  ip netns del "$name-sw" 2>/dev/null || true
  rm -rf "$state"
}

case $verb in
  up)
    (($# >= 1)) || usage
    n=$1
    shift
    [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 32)) || { echo "netns_hosts.sh: N=$n: expected 1-32 hosts" >&2; exit 2; }
    netem=$(shape_args "$@")
    [[ $(id -u) -eq 0 ]] || skip "needs root for ip netns (running as uid $(id -u))"
    command -v ip >/dev/null || skip "iproute2's ip is not installed"
    [[ -z $netem ]] || command -v tc >/dev/null || skip "iproute2's tc is not installed"
    down
    mkdir -p "$state"
    echo "$n" >"$state/count"
    trap 'down' ERR
    ip netns add "$name-sw" || skip "ip netns add failed (no network namespaces here?)"
    ip -n "$name-sw" link add br0 type bridge
    ip -n "$name-sw" link set br0 up
    : >"$state/hosts"
    for ((k = 1; k <= n; ++k)); do
      ip netns add "$name-h$k"
      ip -n "$name-sw" link add "p$k" type veth peer name "v$k" netns "$name-h$k"
      ip -n "$name-sw" link set "p$k" master br0 up
      ip -n "$name-h$k" addr add "$(address "$k")/24" dev "v$k"
      ip -n "$name-h$k" link set lo up
      # shellcheck disable=SC2086
      shape "$k" $netem
      echo "$(address "$k") h$k" >>"$state/hosts"
    done
    for ((k = 1; k <= n; ++k)); do
      mkdir -p "/etc/netns/$name-h$k"
      { echo "127.0.0.1 localhost"; cat "$state/hosts"; } >"/etc/netns/$name-h$k/hosts"
      # A name the hosts file lacks goes to a resolver on the host's own loopback, where nothing
      # listens: it fails at once, and no query ever leaves the namespace.
      echo "nameserver 127.0.0.1" >"/etc/netns/$name-h$k/resolv.conf"
    done
    trap - ERR
    ;;
  address) address "$1" ;;
  exec)
    k=$1
    shift
    exec ip netns exec "$name-h$k" "$@"
    ;;
  shape)
    k=$1
    shift
    if [[ ${1:-} == --clear ]]; then shape "$k"; else
      # shellcheck disable=SC2046
      shape "$k" $(shape_args "$@")
    fi
    ;;
  down) down ;;
  *) usage ;;
esac
