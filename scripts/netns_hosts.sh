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
#       on its way out of the host (as tc does): a rate (such as 10gbit) with a token bucket (tbf),
#       a delay (such as 0.1ms) and loss (such as 0.1%) with netem where the kernel has it, and
#       otherwise (or with DSGD_NETNS_USERSPACE_LINK=1) through scripts/netns_link.cpp, a userspace
#       forwarder that joins the host to the bridge by two tap devices instead of a veth pair and
#       delays (and drops) each frame from the host; a rate with it stays a tbf on the host's tap.
#       The forwarder is $DSGD_NETNS_LINK, or built from its source with ${CXX:-c++} (cached in
#       /tmp/dsgd-netns-link), run at real-time priority (DSGD_NETNS_LINK_REALTIME=0: not); it
#       costs a link some throughput and round trip (docs/benchmarks.md, "Across hosts").
#       Writes NAME's hosts file (/tmp/dsgd-netns-NAME/hosts: "ADDRESS hK", one per host),
#       which every namespace also sees as /etc/hosts (ip netns exec binds
#       /etc/netns/NS/hosts), so the hosts reach each other by name too; their resolv.conf names
#       only loopback, so no DNS query leaves a namespace.
#   scripts/netns_hosts.sh address NAME K      prints host K's address
#   scripts/netns_hosts.sh exec NAME K CMD...  runs CMD in host K
#   scripts/netns_hosts.sh shape NAME K [--rate R] [--delay D] [--loss L] | --clear
#       reshapes host K's link (a forwarder is started, restarted or stopped as needed; its
#       frames in flight are lost, which TCP retransmits)
#   scripts/netns_hosts.sh down NAME           removes everything `up` made, forwarders included
#                                              (safe to repeat)
#
# Needs root (ip netns) and iproute2, and for delay or loss without netem /dev/net/tun and a C++20
# compiler (or $DSGD_NETNS_LINK); exits 77 with the reason when they are missing, which the tests
# report as skipped.
set -euo pipefail

skip() {
  echo "netns_hosts.sh: skipped: $*" >&2
  exit 77
}
usage() {
  sed -n '9,31p' "$0" >&2
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

# Shaping options to "RATE DELAY LOSS" ("-" for none), checked.
shape_args() {
  local rate=- delay=- loss=-
  while (($#)); do
    (($# >= 2)) || { echo "netns_hosts.sh: $1 needs a value" >&2; exit 2; }
    case $1 in
      --rate) rate=$2 ;;
      --delay) delay=$2 ;;
      --loss) loss=$2 ;;
      *) echo "netns_hosts.sh: unknown shaping option $1" >&2; exit 2 ;;
    esac
    [[ $2 =~ ^[0-9A-Za-z.%]+$ ]] || { echo "netns_hosts.sh: $1 \"$2\": expected a value such as 10gbit, 0.1ms or 0.1%" >&2; exit 2; }
    shift 2
  done
  echo "$rate $delay $loss"
}

# Whether this kernel has netem (probed once per NAME, on the switch namespace's loopback).
have_netem() {
  [[ ${DSGD_NETNS_USERSPACE_LINK:-0} == 1 ]] && return 1
  if [[ ! -f $state/netem ]]; then
    if tc -n "$name-sw" qdisc add dev lo root netem delay 1ms 2>/dev/null; then
      tc -n "$name-sw" qdisc del dev lo root
      echo yes >"$state/netem"
    else
      echo no >"$state/netem"
    fi
  fi
  [[ $(cat "$state/netem") == yes ]]
}

# The forwarder's binary: $DSGD_NETNS_LINK, or built from scripts/netns_link.cpp once per source.
link_tool() {
  if [[ -n ${DSGD_NETNS_LINK:-} ]]; then
    [[ -x $DSGD_NETNS_LINK ]] || { echo "netns_hosts.sh: DSGD_NETNS_LINK=$DSGD_NETNS_LINK is not an executable" >&2; return 1; }
    echo "$DSGD_NETNS_LINK"
    return
  fi
  local src cxx sum bin
  src=$(dirname "$0")/netns_link.cpp cxx=${CXX:-c++}
  command -v "$cxx" >/dev/null || return 77
  sum=$(cksum <"$src" | cut -d' ' -f1)
  bin=/tmp/dsgd-netns-link/netns_link-$sum
  if [[ ! -x $bin ]]; then
    mkdir -p /tmp/dsgd-netns-link
    "$cxx" -std=c++20 -O2 -o "$bin.$$" "$src" >&2 || return 1
    mv -f "$bin.$$" "$bin"
  fi
  echo "$bin"
}

# Host K's link: a veth pair (vK in the host, pK on the bridge), or two taps with a forwarder.
plumb() {  # host, veth|tap
  local k=$1 kind=$2
  if [[ $kind == veth ]]; then
    ip -n "$name-sw" link add "p$k" type veth peer name "v$k" netns "$name-h$k"
  else
    ip -n "$name-h$k" tuntap add dev "v$k" mode tap
    ip -n "$name-sw" tuntap add dev "p$k" mode tap
  fi
  ip -n "$name-sw" link set "p$k" master br0 up
  ip -n "$name-h$k" addr add "$(address "$k")/24" dev "v$k"
  ip -n "$name-h$k" link set "v$k" up
  echo "$kind" >"$state/link-$k"
}
unplumb() {  # host
  local k=$1
  stop_forwarder "$k"
  ip -n "$name-h$k" link del "v$k" 2>/dev/null || true
  ip -n "$name-sw" link del "p$k" 2>/dev/null || true
  rm -f "$state/link-$k"
}

stop_forwarder() {  # host
  local f=$state/forwarder-$1.pid pid
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  # Only a process this harness started: its command line names its own taps.
  if tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q -- "--a /run/netns/$name-h$1:v$1 "; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}
start_forwarder() {  # host, delay, loss ("-": none)
  local k=$1 delay=$2 loss=$3 tool log=$state/forwarder-$1.log rc=0
  tool=$(link_tool) || rc=$?
  ((rc == 0)) || { ((rc == 77)) && { down; skip "no netem qdisc for delay or loss, and no C++ compiler (${CXX:-c++}) to build the userspace link (or set DSGD_NETNS_LINK)"; }; return 1; }
  local args=(--a "/run/netns/$name-h$k:v$k" --b "/run/netns/$name-sw:p$k" --seed "$k")
  [[ $delay == - ]] || args+=(--delay-ab "$delay")
  [[ $loss == - ]] || args+=(--loss-ab "$loss")
  [[ ${DSGD_NETNS_LINK_REALTIME:-1} == 1 ]] || args+=(--no-realtime)
  # Its own session, stdin closed and output in a file: no caller's pipe is held open by it.
  setsid "$tool" "${args[@]}" </dev/null >"$log" 2>&1 &
  echo $! >"$state/forwarder-$k.pid"
  for _ in $(seq 100); do
    grep -q '^ready$' "$log" && return 0
    kill -0 "$(cat "$state/forwarder-$k.pid")" 2>/dev/null || break
    sleep 0.05
  done
  echo "netns_hosts.sh: host $k's userspace link did not start:" >&2
  cat "$log" >&2
  return 1
}

shape() {  # host, rate, delay, loss ("-": none)
  local k=$1 rate=${2:--} delay=${3:--} loss=${4:--} kind=veth
  if [[ $delay != - || $loss != - ]] && ! have_netem; then
    [[ -c /dev/net/tun ]] || { down; skip "no netem qdisc for delay or loss, and no /dev/net/tun for the userspace link"; }
    kind=tap
  fi
  if [[ $(cat "$state/link-$k" 2>/dev/null) != "$kind" ]]; then
    unplumb "$k"
    plumb "$k" "$kind"
  fi
  stop_forwarder "$k"
  tc -n "$name-h$k" qdisc del dev "v$k" root 2>/dev/null || true
  if [[ $kind == tap ]]; then
    start_forwarder "$k" "$delay" "$loss"
    delay=- loss=-
  fi
  local netem=()
  [[ $delay == - ]] || netem+=(delay "$delay")
  [[ $loss == - ]] || netem+=(loss "$loss")
  if ((${#netem[@]})); then
    [[ $rate == - ]] || netem+=(rate "$rate")
    tc -n "$name-h$k" qdisc add dev "v$k" root netem "${netem[@]}"
  elif [[ $rate != - ]]; then
    # A token bucket, in every kernel; a burst of 1 MiB lets a 10 Gbit/s link send at full speed
    # between the timer's ticks.
    tc -n "$name-h$k" qdisc add dev "v$k" root tbf rate "$rate" burst 1mb latency 100ms
  fi
}

down() {
  if [[ -f $state/count ]]; then
    local n
    n=$(cat "$state/count")
    for ((k = 1; k <= n; ++k)); do
      # The forwarder first: it holds the namespaces its taps are in.
      stop_forwarder "$k"
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
    shaping=$(shape_args "$@")
    [[ $(id -u) -eq 0 ]] || skip "needs root for ip netns (running as uid $(id -u))"
    command -v ip >/dev/null || skip "iproute2's ip is not installed"
    [[ $shaping == "- - -" ]] || command -v tc >/dev/null || skip "iproute2's tc is not installed"
    down
    mkdir -p "$state"
    echo "$n" >"$state/count"
    # Whatever fails from here (a command under set -e, a forwarder that does not start) leaves
    # nothing behind: no namespace, no forwarder.
    trap 'rc=$?; trap - EXIT; ((rc == 0)) || down; exit "$rc"' EXIT
    ip netns add "$name-sw" || skip "ip netns add failed (no network namespaces here?)"
    ip -n "$name-sw" link add br0 type bridge
    ip -n "$name-sw" link set br0 up
    : >"$state/hosts"
    for ((k = 1; k <= n; ++k)); do
      ip netns add "$name-h$k"
      ip -n "$name-h$k" link set lo up
      # shellcheck disable=SC2086
      shape "$k" $shaping
      echo "$(address "$k") h$k" >>"$state/hosts"
    done
    for ((k = 1; k <= n; ++k)); do
      mkdir -p "/etc/netns/$name-h$k"
      { echo "127.0.0.1 localhost"; cat "$state/hosts"; } >"/etc/netns/$name-h$k/hosts"
      # A name the hosts file lacks goes to a resolver on the host's own loopback, where nothing
      # listens: it fails at once, and no query ever leaves the namespace.
      echo "nameserver 127.0.0.1" >"/etc/netns/$name-h$k/resolv.conf"
    done
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
    [[ -f $state/link-$k ]] || { echo "netns_hosts.sh: $name has no host $k (up first)" >&2; exit 2; }
    if [[ ${1:-} == --clear ]]; then shape "$k"; else
      shaping=$(shape_args "$@")
      # shellcheck disable=SC2086
      shape "$k" $shaping
    fi
    ;;
  down) down ;;
  *) usage ;;
esac
