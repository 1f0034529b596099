#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# The soak (docs/reliability.md, "Soak"): jobs of 2 ps + 4 workers under
# `dsgd-launch --max-restarts`, a killer sending SIGKILL to a random running task (ps, the chief
# worker:0, or another worker) every few seconds. Jobs:
#   sync     dsgd-train, the MLP (--model), sync with 1 backup worker, --logdir (a checkpoint
#            every 100 global steps)
#   async    dsgd-train, the MLP, async, --logdir
#   counter  test/faults/counter_job, async in monitored sessions with --pushes: exactly once
#   ctr      dsgd-ctr, Wide & Deep on the synthetic click stream (--ctr-examples), hybrid (sync
#            MLP, async tables), --logdir with a checkpoint every 200 global steps and 3
#            incremental table checkpoints between full ones; the killer kills ps tasks only
#            (they hold the tables' hash shards), and the final test AUC must be within
#            --ctr-tolerance of the undisturbed run's. Not in the default --jobs: --jobs ctr.
# For sync, async and ctr an undisturbed run of the same job comes first, in the same invocation;
# for async a second one with 2 workers too (async's accuracy depends on how many push at once).
# At the end it checks and prints, per job: the launcher exited 0 (the job completed); no task
# exited non-zero by itself (every restart followed a kill: a task that gave up on its session or
# ran into a deadline did not recover); the final test accuracy within --tolerance points of the
# undisturbed run's (async: of the range of its two; ctr: its AUC, --ctr-tolerance); the counters (each equals 4 x --pushes:
# every push applied once across the kills); no leaks: every ps incarnation's private memory and
# open file descriptors less one per live worker (sampled every 0.5 s) do not grow past the
# bounds (ctr: reported, not checked, since its tables grow with the stream's new ids up to their
# cap), no /dev/shm/dsgd-* entry is left that was not there before, and none of the job's ports
# is still listening.
# Exit status 0 when every check held, 1 otherwise, 2 on bad usage.
#
#   bench/soak/run.sh [--kills N] [--interval S] [--jobs "sync async counter ctr"] [--epochs E]
#                     [--pushes N] [--time-limit S] [--tolerance P] [--rss-mb M] [--fd-slack K]
#                     [--ctr-examples N] [--ctr-tolerance A] [--max-restarts N] [--out DIR]
#
#   --kills N        kills in all, spread over the jobs run (default 100: 40 sync, 40 async, 20
#                    counter; with other --jobs, equal shares)
#   --interval S     mean seconds between kills (each wait uniform in [S/2, 3S/2]; default 1.5)
#   --epochs E       dsgd-train epochs (default 30; the learning rate decays 0.7 per epoch): long
#                    enough that a ps incarnation outlives --leak-min-life on a fast machine,
#                    where 10 epochs ended with none measured
#   --model M        dsgd-train --model: mlp or softmax (default mlp)
#   --pushes N       counter job: pushes per worker (default 6000, 5 ms each)
#   --time-limit S   each launcher's --timeout (default 1500); the killer stops there too
#   --tolerance P    accuracy points the soaked run may be off the undisturbed one (default 0.5)
#   --ctr-examples N ctr job: training examples (default 6000000)
#   --ctr-tolerance A  ctr job: test AUC the soaked run may be off the undisturbed one (default
#                    0.002, issue 36's bound)
#   --rss-mb M       the most a ps incarnation's private memory (RssAnon) may grow, MiB (default
#                    8): median over the last third of its life against the middle third
#   --fd-slack K     the most its open fds may grow, measured the same way (default 2)
#   --leak-min-life S  only ps incarnations that lived S seconds are measured (default 20)
#   --max-restarts N dsgd-launch --max-restarts (default 1000; 0 shows the soak failing)
#   --out DIR        logs and samples (default build-rel/soak)
# BUILD=dir: the build with dsgd-train, dsgd-launch, dsgd_faults_counter_job and dsgd-ctr
# (default build-rel, configured and built here as GCC Release when absent); or LAUNCH, MAIN_JOB,
# COUNTER_JOB and CTR_JOB: the programs themselves, nothing built (soak_test). Loopback only.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
kills=100
interval=1.5
jobs="sync async counter"
epochs=30
model=mlp
min_life=20
pushes=6000
time_limit=1500
tolerance=0.5
rss_mb=8
fd_slack=2
max_restarts=1000
ctr_examples=6000000
ctr_tolerance=0.002
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --kills) kills=$2; shift 2 ;;
    --interval) interval=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --leak-min-life) min_life=$2; shift 2 ;;
    --pushes) pushes=$2; shift 2 ;;
    --time-limit) time_limit=$2; shift 2 ;;
    --tolerance) tolerance=$2; shift 2 ;;
    --rss-mb) rss_mb=$2; shift 2 ;;
    --fd-slack) fd_slack=$2; shift 2 ;;
    --max-restarts) max_restarts=$2; shift 2 ;;
    --ctr-examples) ctr_examples=$2; shift 2 ;;
    --ctr-tolerance) ctr_tolerance=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "run.sh: unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done
for j in $jobs; do
  case "$j" in sync|async|counter|ctr) ;; *) echo "run.sh: --jobs: unknown job \"$j\" (sync, async, counter, ctr)" >&2; exit 2 ;; esac
done

build=${BUILD:-"$root/build-rel"}
if [ -z "${BUILD:-}" ] && [ -z "${LAUNCH:-}" ]; then
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
  fi
  targets=(dsgd-train dsgd-launch dsgd_faults_counter_job)
  case " $jobs " in *" ctr "*) targets+=(dsgd-ctr) ;; esac
  cmake --build "$build" --target "${targets[@]}" -- -j1 >/dev/null || exit 1
fi
launch=${LAUNCH:-"$build/tools/dsgd-launch"}
main_job=${MAIN_JOB:-"$build/tools/dsgd-train"}
counter_job=${COUNTER_JOB:-"$build/test/faults/dsgd_faults_counter_job"}
ctr_job=${CTR_JOB:-"$build/tools/dsgd-ctr"}
needed=("$launch")
for j in $jobs; do
  case "$j" in sync|async) needed+=("$main_job") ;; counter) needed+=("$counter_job") ;; ctr) needed+=("$ctr_job") ;; esac
done
for f in "${needed[@]}"; do
  [ -x "$f" ] || { echo "run.sh: $f not built (BUILD=$build)" >&2; exit 1; }
done
out=${out:-"$build/soak"}
rm -rf "$out"
mkdir -p "$out"
cores=$(nproc --all)  # before OMP_NUM_THREADS, which nproc honours
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=passive
export DSGD_CLUSTER_TOKEN=dsgd-soak-token
failures=0
summary="$out/summary.txt"
: > "$summary"
report() { echo "$*" | tee -a "$summary"; }
check() {  # check NAME CONDITION-TEXT STATUS(0 ok)
  if [ "$3" -eq 0 ]; then report "  ok    $1: $2"; else report "  FAIL  $1: $2"; failures=$((failures + 1)); fi
}
now() { date +%s.%N; }

# How many kills each job gets: 40/40/20 of 100 for the three jobs, equal shares otherwise.
njobs=$(echo $jobs | wc -w)
share() {
  if [ "$jobs" = "sync async counter" ]; then
    case "$1" in sync|async) echo $((kills * 2 / 5)) ;; counter) echo $((kills - 2 * (kills * 2 / 5))) ;; esac
  else
    echo $((kills / njobs))
  fi
}

job_args() {  # the program and its arguments for job $1, logdir/session dir $2
  local common=(--model "$model" --epochs "$epochs" --seed 0 --startup-timeout 120 --recovery-timeout 300
                --logdir "$2" --save-steps 100 --save-secs 0 --summary-steps 1000)
  case "$1" in
    sync) echo "$main_job" --rule sync --backup 1 --lr 0.05 --decay 0.7 "${common[@]}" ;;
    async) echo "$main_job" --rule async --lr 0.02 --decay 0.7 "${common[@]}" ;;
    counter) echo "$counter_job" --rule async --vars 2 --steps 1000000000 --pushes "$pushes" --step-ms 5 \
                  --step-timeout-ms 60000 --session "$2" --save-steps 40 --recovery-timeout-s 300 ;;
    ctr) echo "$ctr_job" --rule hybrid --examples "$ctr_examples" --batch 256 --eval 100000 --log-steps 1000 \
              --startup-timeout 120 --recovery-timeout 300 --logdir "$2" --save-steps 200 --save-secs 0 \
              --deltas 3 --summary-steps 1000 ;;
  esac
}

# Which tasks the killer picks from for job $1 (a grep pattern on "TASK PID" lines).
victims_of() { case "$1" in ctr) echo '^ps:' ;; *) echo '.' ;; esac; }

shm_list() { ls /dev/shm 2>/dev/null | grep '^dsgd-' | sort; }

# The pids of the tasks a launcher runs now: its children, each mapped to its task by the
# launcher's "[launcher] ps:0 127.0.0.1:PORT pid N" line.
live_tasks() {  # launcher pid, log -> "TASK PID" lines
  local children
  children=$(ps -o pid= --ppid "$1" 2>/dev/null | tr -d ' ')
  [ -n "$children" ] || return 0
  for p in $children; do
    t=$(grep -a "^\[launcher\] [a-z]*:[0-9]* [^ ]* pid $p\$" "$2" | tail -1 | awk '{print $2}')
    [ -n "$t" ] && echo "$t $p"
  done
}

# Runs job $1 under the launcher with $3 workers (default 4); with $2 > 0 kills, the killer
# and the sampler run beside it. Leaves rc, wall time and counts in variables for the checks.
soak_job() {
  local name=$1 want=$2 workers=${3:-4} tag dir log samples kills_log
  tag=$([ "$want" -gt 0 ] && echo soak || echo calm)
  [ "$workers" -eq 4 ] || tag="$tag-$workers-workers"
  dir="$out/$name-$tag"
  log="$out/$name-$tag.log"
  samples="$out/$name-$tag.samples"   # "T TASK PID VMRSS_KB FDS RSSANON_KB RSSSHMEM_KB WORKERS_LIVE"
  kills_log="$out/$name-$tag.kills"  # "T TASK PID"
  : > "$samples"; : > "$kills_log"
  mkdir -p "$dir"
  shm_list > "$out/$name-$tag.shm-before"
  local restarts_opt=()
  [ "$want" -gt 0 ] && restarts_opt=(--max-restarts "$max_restarts")
  local start end
  start=$(now)
  # shellcheck disable=SC2046
  "$launch" --ps 2 --workers "$workers" --timeout "$time_limit" --kill-grace 5 "${restarts_opt[@]}" -- \
    $(job_args "$name" "$dir") > "$log" 2>&1 &
  local lpid=$!
  local done_kills=0 next_kill deadline
  deadline=$(echo "$start + $time_limit" | bc)
  next_kill=$(echo "$start + $interval * (0.5 + $RANDOM / 32768)" | bc)
  while kill -0 "$lpid" 2>/dev/null; do
    local t tasks
    t=$(now)
    tasks=$(live_tasks "$lpid" "$log")
    # Each live worker holds one connection (one fd) to every ps: the fd check nets them out.
    local workers_live
    workers_live=$(echo "$tasks" | grep -c '^worker:')
    # Samples of every live ps: RSS and open file descriptors.
    echo "$tasks" | while read -r task pid; do
      [ -n "${task:-}" ] || continue
      case "$task" in ps:*) ;; *) continue ;; esac
      mem=$(awk '/^VmRSS:/ {r = $2} /^RssAnon:/ {a = $2} /^RssShmem:/ {s = $2} END {if (r != "") print r, a, s}' \
            "/proc/$pid/status" 2>/dev/null)
      fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
      [ -n "$mem" ] && set -- $mem && echo "$t $task $pid $1 $fds $2 $3 $workers_live" >> "$samples"
    done
    # Kills only while every task is still at work: once one exited 0 the job is ending (a ps
    # restarted after the chief shut the cluster down would wait for it in vain).
    if [ "$done_kills" -lt "$want" ] && [ "$(echo "$t >= $next_kill" | bc)" = 1 ] &&
       [ "$(echo "$t < $deadline" | bc)" = 1 ] && ! grep -aq "^\[launcher\] .* exited with status 0" "$log"; then
      local n victim
      local pool
      pool=$(echo "$tasks" | grep "$(victims_of "$name")")
      n=$(echo "$pool" | grep -c .)
      if [ "$n" -gt 0 ]; then
        victim=$(echo "$pool" | sed -n "$((RANDOM % n + 1))p")
        if kill -9 "${victim#* }" 2>/dev/null; then
          echo "$t $victim" >> "$kills_log"
          done_kills=$((done_kills + 1))
        fi
      fi
      next_kill=$(echo "$t + $interval * (0.5 + $RANDOM / 32768)" | bc)
    fi
    sleep 0.5
  done
  wait "$lpid"
  job_rc=$?
  end=$(now)
  job_wall=$(echo "$end - $start" | bc)
  sleep 2  # a ring of a connection closed at the end is unlinked by then
  shm_list > "$out/$name-$tag.shm-after"
  job_kills=$done_kills
  job_log=$log
  job_samples=$samples
  job_kills_log=$kills_log
}

# The chief's final test accuracy (dsgd-train) or test AUC (dsgd-ctr).
accuracy_of() { grep -a '^\[worker:0\] final test a' "$1" | tail -1 | awk '{print $5}'; }

leak_checks() {  # name: the checks on the samples, /dev/shm and the ports of the soaked run
  local name=$1
  # Per ps incarnation (pid) that lived at least --leak-min-life s: its private memory (RssAnon:
  # the heap, where a leak grows) and open fds over the middle and the last third of its life,
  # as medians, so that warming up (the first third) and the moments a worker reconnects or a
  # checkpoint is read do not count; a leak grows with the kills and shows as the last third
  # above the middle one. The fds are counted less one per live worker (its connection), so
  # that workers coming back from their restart backoff late in a ps's life are not taken for
  # a leak. VmRSS is reported too: it also counts the pages of the shared-memory rings (4 MiB
  # each way per connection) as they are first used.
  local leaks
  leaks=$(sort -k3,3n -k1,1n "$job_samples" | awk -v rss_mb="$rss_mb" -v slack="$fd_slack" -v min_life="$min_life" '
    function median(a, n,   i, j, t) {
      for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    function finish(   k, m, n1, n3, r1, r3, f1, f3, g, f) {
      if (pid == "" || n < 6 || t[n] - t[1] < min_life) return
      m = 0; for (k = 1; k <= n; k++) { m++; rr[m] = anon[k]; ff[m] = fds[k]; vv[m] = rss[k] }
      n1 = 0; for (k = int(m / 3) + 1; k <= m - int(m / 3); k++) { n1++; a1[n1] = rr[k]; b1[n1] = ff[k] }
      n3 = 0; for (k = m - int(m / 3) + 1; k <= m; k++) { n3++; a3[n3] = rr[k]; b3[n3] = ff[k] }
      r1 = median(a1, n1); r3 = median(a3, n3); f1 = median(b1, n1); f3 = median(b3, n3)
      g = (r3 - r1) / 1024; f = f3 - f1; sampled++
      if (g > worst_rss) worst_rss = g; if (f > worst_fd) worst_fd = f
      if (t[n] - t[1] > longest) { longest = t[n] - t[1]; lt = task; lp = pid; lr1 = r1; lr3 = r3; lf1 = f1; lf3 = f3
        lv1 = vv[int(m / 3) + 1]; lv3 = vv[m] } }
    { if ($3 != pid) { finish(); pid = $3; task = $2; n = 0 }
      n++; t[n] = $1; rss[n] = $4; fds[n] = $5 - $8; anon[n] = $6 }
    END { finish(); bad = (sampled == 0 || worst_rss > rss_mb || worst_fd > slack) ? 1 : 0
      printf "%d %d %.1f %d %.0f %s %s %d %d %d %d %d %d\n", bad, sampled, worst_rss, worst_fd, longest, lt, lp, lr1, lr3,
             lf1, lf3, lv1, lv3 }')
  read -r bad n worst_rss worst_fd longest ltask lpid lrss0 lrss1 lfd0 lfd1 lvm0 lvm1 <<< "$leaks"
  # The ctr job's tables grow with the stream's new ids: its ps memory is reported, its fds checked.
  [ "$name" = ctr ] && bad=$([ "$n" -gt 0 ] && [ "${worst_fd%.*}" -le "$fd_slack" ]; echo $?)
  check "$name ps memory and fds" "$n ps incarnations of ${min_life} s or more; most growth from the middle to the last third of one: RssAnon ${worst_rss} MiB (bound $rss_mb), fds less live workers ${worst_fd} (bound $fd_slack); longest-lived $ltask pid $lpid ${longest} s: RssAnon ${lrss0} -> ${lrss1} kB, fds less live workers ${lfd0} -> ${lfd1}, VmRSS ${lvm0} -> ${lvm1} kB (a third in, at the end)" "$bad"
  local leaked
  leaked=$(comm -13 "$out/$name-soak.shm-before" "$out/$name-soak.shm-after" | wc -l)
  check "$name /dev/shm" "$(wc -l < "$out/$name-soak.shm-before") dsgd-* entries before, $(wc -l < "$out/$name-soak.shm-after") after, $leaked new ones left" "$([ "$leaked" -eq 0 ]; echo $?)"
  local ports listening=0
  ports=$(grep -ao '^\[launcher\] [a-z]*:[0-9]* 127.0.0.1:[0-9]* pid' "$job_log" | awk '{print $3}' | sed 's/.*://' | sort -u)
  for p in $ports; do
    if ss -ltnH "sport = :$p" 2>/dev/null | grep -q .; then listening=$((listening + 1)); fi
  done
  check "$name ports" "$(echo $ports | wc -w) job ports listening during the run, $listening still listening after it" "$([ "$listening" -eq 0 ]; echo $?)"
}

kill_counts() {  # by role: ps, chief (worker:0), worker (the others)
  awk '{ if ($2 ~ /^ps:/) ps++; else if ($2 == "worker:0") c++; else w++ }
       END { printf "%d kills: %d ps, %d chief, %d worker", ps + c + w, ps, c, w }' "$job_kills_log"
}

report "soak: $(lscpu | sed -n 's/^Model name: *//p'), $cores cores; kills $kills, interval ${interval} s, jobs: $jobs"
for name in $jobs; do
  want=$(share "$name")
  calm_acc=""
  if [ "$name" != counter ]; then
    soak_job "$name" 0
    calm_acc=$(accuracy_of "$job_log")
    report "$name undisturbed: launcher status $job_rc in ${job_wall} s, final test $([ "$name" = ctr ] && echo AUC || echo accuracy) ${calm_acc:-none}"
    [ "$job_rc" -eq 0 ] || { check "$name undisturbed run" "status $job_rc (see $job_log)" 1; continue; }
  fi
  # Async's accuracy at a given global step depends on how many workers push at once (the
  # fewer, the less stale each gradient: docs/reliability.md, "Soak"), and the kills leave
  # between 2 and 4 of them up for stretches of the run; so async's reference is the range of
  # the undisturbed runs with 4 and with 2 workers. Sync's steps average 3 of 4 whatever.
  calm_lo=$calm_acc calm_hi=$calm_acc
  if [ "$name" = async ]; then
    soak_job "$name" 0 2
    calm2_acc=$(accuracy_of "$job_log")
    report "$name undisturbed, 2 workers: launcher status $job_rc in ${job_wall} s, final test accuracy ${calm2_acc:-none}"
    [ "$job_rc" -eq 0 ] && [ -n "$calm2_acc" ] && [ -n "$calm_acc" ] || {
      check "$name undisturbed run, 2 workers" "status $job_rc, final accuracy ${calm2_acc:-none} (see $job_log)" 1
      continue; }
    read -r calm_lo calm_hi <<< "$(printf '%s\n%s\n' "$calm_acc" "$calm2_acc" | sort -n | tr '\n' ' ')"
  fi
  soak_job "$name" "$want"
  restarts=$(grep -ac '^\[launcher\] .*; restarting it in' "$job_log")
  live=$(awk '!seen[$1]++ { n++; w += $8 } END { if (n) printf "%.2f", w / n; else print "none" }' "$job_samples")
  report "$name soaked: $(kill_counts), $restarts restarts by the launcher, ${job_wall} s; workers live: mean $live of 4"
  check "$name completed" "launcher status $job_rc" "$([ "$job_rc" -eq 0 ]; echo $?)"
  check "$name kills" "$job_kills of $want kills made before the job ended" "$([ "$job_kills" -ge "$want" ]; echo $?)"
  # Every restart follows a kill: a task that exits non-zero by itself did not recover (a
  # session that gave up, a wait that ran into its deadline because the job stalled).
  self_failed=$(grep -a '^\[launcher\] .* exited with status [0-9]*; restarting it in' "$job_log" | awk '{print $2}' |
                sort | uniq -c | awk '{printf "%s%s x%d", sep, $2, $1; sep = ", "}')
  check "$name recovered" "tasks that failed by themselves: ${self_failed:-none}" "$([ -z "$self_failed" ]; echo $?)"
  if [ "$name" != counter ]; then
    acc=$(accuracy_of "$job_log")
    ok=1
    bound="$tolerance points" points=$tolerance  # ctr: AUC, its bound in AUC
    [ "$name" = ctr ] && bound="$ctr_tolerance AUC" points=$(echo "$ctr_tolerance * 100" | bc -l)
    [ -n "$acc" ] && [ -n "$calm_acc" ] &&
      ok=$(echo "d = 0; if ($acc < $calm_lo) d = ($calm_lo - $acc) * 100; if ($acc > $calm_hi) d = ($acc - $calm_hi) * 100
                 if (d <= $points) 0 else 1" | bc)
    reference=$calm_acc
    [ "$calm_lo" = "$calm_hi" ] || reference="[$calm_lo, $calm_hi] (4 and 2 workers)"
    check "$name $([ "$name" = ctr ] && echo AUC || echo accuracy)" "${acc:-none} soaked vs ${reference:-none} undisturbed (bound $bound)" "$ok"
  else
    # The counter job's own check: each counter (var 0 on ps:0, var 1 on ps:1) ends at every
    # task's pushes, each applied once: 4 x --pushes. The last incarnation of each ps prints it.
    expect=$((4 * pushes))
    for v in 0 1; do
      value=$(grep -a "^\[ps:$v\] ps-final ps:$v var $v value" "$job_log" | tail -1 | awk '{print $7}')
      check "counter $v" "${value:-none} (expected $expect)" "$([ "${value:-x}" = "$expect" ]; echo $?)"
    done
    resumes=$(grep -ac '^\[worker:[0-9]*\] resume ' "$job_log")
    report "  counter: $resumes resumes at the ps's push counts"
  fi
  leak_checks "$name"
done
report "soak: $failures failed checks (logs in $out)"
[ "$failures" -eq 0 ]
