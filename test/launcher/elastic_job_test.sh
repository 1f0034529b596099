#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# elastic_job_test: the main job (dsgd-train, the Fashion-MNIST MLP, sync) as an elastic
# job under dsgd-launch --workers 2:3 (docs/reliability.md, "Elastic workers"): it starts with
# worker:0 (the chief) and worker:1; once it trains, SIGUSR1 to the launcher adds worker:2 in the
# free slot; once the steps go on with it, worker:1 is killed with SIGKILL and leaves. The job
# must end at its accuracy target with every membership change logged by the ps and the
# launcher with its count, the joiner's pushes taken, and the launcher exiting 0.
# With RULE ssp the same under bounded staleness (a joiner's pushes are applied on arrival; its
# steps of its own show it trained).
#   elastic_job_test.sh DSGD_LAUNCH MAIN_JOB [RULE EPOCHS TARGET]
set -u
launch=$1 job=$2 rule=${3:-sync} epochs=${4:-1} target=${5:-0.80}
log=$(mktemp)
logdir=$(mktemp -d)
trap 'kill "$lp" 2>/dev/null; rm -rf "$log" "$logdir"' EXIT
fail() {
  echo "elastic_job_test: $*"
  sed 's/^/  | /' "$log" | grep -v "pass .* over its shard" | tail -40
  exit 1
}
# wait_for PATTERN SECONDS: until the log has a line matching PATTERN (grep -E), or fail.
wait_for() {
  local deadline=$((SECONDS + $2))
  until grep -qE "$1" "$log"; do
    kill -0 "$lp" 2>/dev/null || fail "the launcher exited before the log showed /$1/"
    ((SECONDS < deadline)) || fail "no line /$1/ within $2 s"
    sleep 0.2
  done
}

start=$SECONDS
OMP_NUM_THREADS=1 "$launch" --ps 1 --workers 2:3 --timeout 170 -- "$job" --model mlp --rule "$rule" \
  --epochs "$epochs" --target "$target" --log-steps 25 --logdir "$logdir" --save-secs 0 >"$log" 2>&1 &
lp=$!

wait_for '^\[launcher\] worker:1 .* pid [0-9]+$' 30
grep -q '^\[launcher\] worker:2 .* pid' "$log" && fail "worker:2 started with the job; only MIN (2) should"
wait_for '^\[worker:0\] step [0-9]+ ' 90  # training with two members
kill -USR1 "$lp"
wait_for '^\[ps:0\] ps:0: worker:2 joined; 3 workers \(at least 2, at most 3\)$' 30
wait_for '^\[launcher\] worker:2 joined; 3 workers running \(--workers 2:3\)$' 5
# A sync step closes only with every member's push: the global step going on past the join
# (two progress lines later) means the joiner's gradients are averaged in.
joined_at=$(grep -nE '^\[ps:0\] ps:0: worker:2 joined' "$log" | head -1 | cut -d: -f1)
deadline=$((SECONDS + 60))
until (($(tail -n +"$joined_at" "$log" | grep -cE '^\[worker:0\] step [0-9]+ ') >= 2)); do
  kill -0 "$lp" 2>/dev/null || fail "the launcher exited before two steps after the join"
  ((SECONDS < deadline)) || fail "the global step did not go on within 60 s of worker:2 joining"
  sleep 0.2
done
kill -USR1 "$lp"  # a fourth worker is beyond MAX: refused by name
wait_for '^\[launcher\] cannot add a worker: every one of the 3 worker slots is running' 5
pid1=$(sed -nE 's/^\[launcher\] worker:1 [^ ]+ pid ([0-9]+)$/\1/p' "$log" | head -1)
[ -n "$pid1" ] || fail "no pid for worker:1 in the launcher's log"
kill -9 "$pid1"
wait_for '^\[ps:0\] ps:0: worker:1 left \(connection lost\); 2 workers \(at least 2, at most 3\)$' 30
wait_for '^\[launcher\] worker:1 left \(killed by signal 9\); 2 workers running \(--workers 2:3\)$' 5
wait "$lp"
rc=$?
lp=
((rc == 0)) || fail "the launcher exited with status $rc (the chief below --target $target, or a task failed)"
grep -qE '^\[worker:0\] final test accuracy ' "$log" || fail "no final accuracy from the chief"
steps2=$(sed -nE 's/^\[worker:2\] worker:2 done: ([0-9]+) steps of its own.*/\1/p' "$log")
[ -n "$steps2" ] && ((steps2 > 0)) || fail "worker:2 did not train (its done line: '${steps2}')"
grep -qE '^\[launcher\] every task exited with status 0 but the 1 worker\(s\) that left the job$' "$log" ||
  fail "the launcher's last word does not say that one worker left"
# ps:0's "membership/workers" summaries (TensorBoard event records: u64 length, u32 crc, an
# Event proto, u32 crc), in order: 1 and 2 as the first two register, 3 at the join, 2 at the
# leave, then the finishes.
counts=$(python3 - "$logdir" <<'PY'
import glob, struct, sys
def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        f, t = key >> 3, key & 7
        if t == 0: v, i = varint(b, i)
        elif t == 1: v, i = b[i:i + 8], i + 8
        elif t == 5: v, i = b[i:i + 4], i + 4
        elif t == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else: return
        yield f, v
def varint(b, i):
    r = s = 0
    while True:
        r |= (b[i] & 127) << s; s += 7; i += 1
        if b[i - 1] < 128: return r, i
out = []
for path in glob.glob(sys.argv[1] + "/events.out.tfevents.*.ps0"):
    data = open(path, "rb").read()
    at = 0
    while at + 12 <= len(data):
        n = struct.unpack("<Q", data[at:at + 8])[0]
        event = data[at + 12:at + 12 + n]
        at += 16 + n
        for f, summary in fields(event):
            if f != 5: continue
            for g, value in fields(summary):
                kv = dict(fields(value))
                if kv.get(1) == b"membership/workers": out.append(str(int(struct.unpack("<f", kv[2])[0])))
print(" ".join(out))
PY
)
echo "elastic_job_test: membership/workers in ps:0's summaries: $counts"
[[ "$counts" == "1 2 3 2"* ]] || fail "ps:0's membership/workers summaries are '$counts', expected 1 2 3 2 then the finishes"
grep -E '^\[worker:0\] final test accuracy |^\[ps:0\] ps:0: worker:[0-9] (joined|left)' "$log"
echo "elastic_job_test: passed in $((SECONDS - start)) s (worker:2 took $steps2 steps of its own)"
