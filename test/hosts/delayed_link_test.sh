#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# A ps host behind a slow link: the main job (2 ps + 2 workers, sync) across four namespace hosts
# (scripts/netns_hosts.sh, as main_job_test.sh), with every packet leaving ps:0's host h1 held
# DELAY_MS (netem, or the harness's userspace forwarder where the kernel has no netem). As
# docs/reliability.md says of a delayed link: every exchange with that ps waits the delay, no
# deadline fires while the round trip stays far below them, and the job trains to its target;
# a sync step cannot be shorter than one delay, so the job runs at most 1000 / DELAY_MS steps/s.
# Checked first: a TCP round trip from h2 to h1 takes at least the delay, to h4 far less.
#   delayed_link_test.sh DSGD_TRAIN DSGD_LAUNCH HARNESS DELAY_MS [dsgd-train options...]
# Exits 77 (skipped) without root or iproute2 (or, without netem, /dev/net/tun), 0 when every
# task exits 0 (the chief only when it reached the --target accuracy) and the bounds hold.
set -euo pipefail
example=$1 launch=$2 harness=$3 delay_ms=$4
shift 4
name=dl$(($$ % 100000))
. "$(dirname "$0")/../support/namespace_hosts.sh"
hosts_up 4
"$harness" shape "$name" 1 --delay "${delay_ms}ms" || exit $?

# The median of 5 TCP connects from h2 to a closed port of host K, in ms: the reset comes back
# after one round trip.
rtt() {
  "$harness" exec "$name" 2 bash -c '
    for i in 1 2 3 4 5; do
      t0=$EPOCHREALTIME; { : 3<>"/dev/tcp/$0/9"; } 2>/dev/null; t1=$EPOCHREALTIME
      echo "$t0 $t1"
    done' "$("$harness" address "$name" "$1")" | awk '{print ($2 - $1) * 1000}' | sort -n | sed -n 3p
}
to_h1=$(rtt 1) to_h4=$(rtt 4)
echo "delayed_link_test: round trip h2 -> h1 (delayed ${delay_ms} ms) ${to_h1} ms, h2 -> h4 ${to_h4} ms"
failed=0
awk -v a="$to_h1" -v b="$to_h4" -v d="$delay_ms" 'BEGIN { exit !(a >= d && b < d / 2) }' ||
  { echo "delayed_link_test: the link is not delayed as asked"; failed=1; }

start=$(date +%s)
launch_main_job "$launch" 600 "$example" "$@"
wait_main_job delayed_link_test
# The chief (worker:0, on h3): "final test accuracy A (sync, ..., N global steps in S s = R steps/s, ...".
final=$(grep -h "final test accuracy" "$logs/h3" || true)
echo "delayed_link_test: ${final:-no final line from the chief} (job $(($(date +%s) - start)) s)"
rate=$(sed -n 's/.* global steps in [0-9.]* s = \([0-9.]*\) steps\/s.*/\1/p' <<<"$final")
if [[ -z $rate ]]; then
  failed=1
elif ! awk -v r="$rate" -v d="$delay_ms" 'BEGIN { exit !(r <= 1000 / d) }'; then
  echo "delayed_link_test: $rate steps/s is faster than one step per delay (1000 / $delay_ms): the delay was not in the job's path"
  failed=1
fi
exit "$failed"
