#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# The soak (docs/reliability.md, "Soak"): jobs of 2 ps + 4 workers under
# `dsgd-launch --max-restarts`, a killer sending SIGKILL to a random running task (ps, the chief
# worker:0, or another worker) every few seconds. Jobs:
#   sync     03_cluster, softmax, sync with 1 backup worker, --logdir (checkpoints every 100 steps)
#   async    03_cluster, softmax, async, --logdir
#   counter  test/faults/counter_job, async in monitored sessions with --pushes: exactly once
# For sync and async an undisturbed run of the same job comes first, in the same invocation.
# At the end it checks and prints, per job: the launcher exited 0 (the job completed); the final
# test accuracy within --tolerance points of the undisturbed run's; the counters (each equals
# 4 x --pushes: every push applied once across the kills); no leaks: every ps incarnation's RSS
# and open file descriptors (sampled every 0.5 s) do not grow past the bounds, no /dev/shm/dsgd-*
# entry is left that was not there before, and none of the job's ports is still listening.
# Exit status 0 when every check held, 1 otherwise, 2 on bad usage.
#
#   bench/soak/run.sh [--kills N] [--interval S] [--jobs "sync async counter"] [--epochs E]
#                     [--pushes N] [--time-limit S] [--tolerance P] [--rss-mb M] [--fd-slack K]
#                     [--max-restarts N] [--out DIR]
#
#   --kills N        kills in all, spread over the jobs run (default 100: 40 sync, 40 async, 20
#                    counter; with other --jobs, equal shares)
#   --interval S     mean seconds between kills (each wait uniform in [S/2, 3S/2]; default 3)
#   --epochs E       03_cluster epochs (default 4)
#   --pushes N       counter job: pushes per worker (default 6000, 5 ms each)
#   --time-limit S   each launcher's --timeout (default 1500); the killer stops there too
#   --tolerance P    accuracy points the soaked run may be off the undisturbed one (default 0.5)
#   --rss-mb M       the most a ps incarnation's RSS may grow, MiB (default 16)
#   --fd-slack K     the most a ps incarnation's open fds may exceed their count 5 s in (default 4)
#   --max-restarts N dsgd-launch --max-restarts (default 1000; 0 shows the soak failing)
#   --out DIR        logs and samples (default build-rel/soak)
# BUILD=dir: the build with 03_cluster, dsgd-launch and dsgd_faults_counter_job (default
# build-rel, configured and built here as GCC Release when absent); or LAUNCH, MAIN_JOB and
# COUNTER_JOB: the three programs themselves, nothing built (soak_test). Loopback only.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
kills=100
interval=3
jobs="sync async counter"
epochs=4
pushes=6000
time_limit=1500
tolerance=0.5
rss_mb=16
fd_slack=4
max_restarts=1000
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --kills) kills=$2; shift 2 ;;
    --interval) interval=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --pushes) pushes=$2; shift 2 ;;
    --time-limit) time_limit=$2; shift 2 ;;
    --tolerance) tolerance=$2; shift 2 ;;
    --rss-mb) rss_mb=$2; shift 2 ;;
    --fd-slack) fd_slack=$2; shift 2 ;;
    --max-restarts) max_restarts=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "run.sh: unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done
for j in $jobs; do
  case "$j" in sync|async|counter) ;; *) echo "run.sh: --jobs: unknown job \"$j\" (sync, async, counter)" >&2; exit 2 ;; esac
done

build=${BUILD:-"$root/build-rel"}
if [ -z "${BUILD:-}" ] && [ -z "${LAUNCH:-}" ]; then
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
  fi
  cmake --build "$build" --target 03_cluster dsgd-launch dsgd_faults_counter_job -- -j1 >/dev/null || exit 1
fi
launch=${LAUNCH:-"$build/tools/dsgd-launch"}
main_job=${MAIN_JOB:-"$build/examples/03_cluster"}
counter_job=${COUNTER_JOB:-"$build/test/faults/dsgd_faults_counter_job"}
for f in "$launch" "$main_job" "$counter_job"; do
  [ -x "$f" ] || { echo "run.sh: $f not built (BUILD=$build)" >&2; exit 1; }
done
out=${out:-"$build/soak"}
rm -rf "$out"
mkdir -p "$out"
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
  local common=(--model softmax --epochs "$epochs" --seed 0 --startup-timeout 120 --recovery-timeout 300
                --logdir "$2" --save-steps 100 --save-secs 0 --summary-steps 1000)
  case "$1" in
    sync) echo "$main_job" --rule sync --backup 1 --lr 0.05 --decay 0.7 "${common[@]}" ;;
    async) echo "$main_job" --rule async --lr 0.02 --decay 0.6 "${common[@]}" ;;
    counter) echo "$counter_job" --rule async --vars 2 --steps 1000000000 --pushes "$pushes" --step-ms 5 \
                  --step-timeout-ms 60000 --session "$2" --save-steps 40 --recovery-timeout-s 300 ;;
  esac
}

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

# Runs job $1 under the launcher; with $2 > 0 kills, the killer and the sampler run beside it.
# Leaves rc, wall time and counts in variables for the checks.
soak_job() {
  local name=$1 want=$2 tag dir log samples kills_log
  tag=$([ "$want" -gt 0 ] && echo soak || echo calm)
  dir="$out/$name-$tag"
  log="$out/$name-$tag.log"
  samples="$out/$name-$tag.samples"   # "T TASK PID RSS_KB FDS"
  kills_log="$out/$name-$tag.kills"  # "T TASK PID"
  : > "$samples"; : > "$kills_log"
  mkdir -p "$dir"
  shm_list > "$out/$name-$tag.shm-before"
  local restarts_opt=()
  [ "$want" -gt 0 ] && restarts_opt=(--max-restarts "$max_restarts")
  local start end
  start=$(now)
  # shellcheck disable=SC2046
  "$launch" --ps 2 --workers 4 --timeout "$time_limit" --kill-grace 5 "${restarts_opt[@]}" -- \
    $(job_args "$name" "$dir") > "$log" 2>&1 &
  local lpid=$!
  local done_kills=0 next_kill deadline
  deadline=$(echo "$start + $time_limit" | bc)
  next_kill=$(echo "$start + $interval * (0.5 + $RANDOM / 32768)" | bc)
  while kill -0 "$lpid" 2>/dev/null; do
    local t tasks
    t=$(now)
    tasks=$(live_tasks "$lpid" "$log")
    # Samples of every live ps: RSS and open file descriptors.
    echo "$tasks" | while read -r task pid; do
      [ -n "${task:-}" ] || continue
      case "$task" in ps:*) ;; *) continue ;; esac
      rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
      fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
      [ -n "$rss" ] && echo "$t $task $pid $rss $fds" >> "$samples"
    done
    # Kills only while every task is still at work: once one exited 0 the job is ending (a ps
    # restarted after the chief shut the cluster down would wait for it in vain).
    if [ "$done_kills" -lt "$want" ] && [ "$(echo "$t >= $next_kill" | bc)" = 1 ] &&
       [ "$(echo "$t < $deadline" | bc)" = 1 ] && ! grep -aq "^\[launcher\] .* exited with status 0" "$log"; then
      local n victim
      n=$(echo "$tasks" | grep -c .)
      if [ "$n" -gt 0 ]; then
        victim=$(echo "$tasks" | sed -n "$((RANDOM % n + 1))p")
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

accuracy_of() { grep -a '^\[worker:0\] final test accuracy' "$1" | tail -1 | awk '{print $5}'; }

leak_checks() {  # name: the checks on the samples, /dev/shm and the ports of the soaked run
  local name=$1
  # Per ps incarnation (pid): fds and RSS at its first sample at least 5 s after its start (its
  # connections made), the most fds and the last RSS after that.
  local leaks
  leaks=$(awk -v rss_mb="$rss_mb" -v slack="$fd_slack" '
    { if (!($3 in t0)) t0[$3] = $1; task[$3] = $2
      if ($1 - t0[$3] < 5) next
      if (!($3 in rss0)) { rss0[$3] = $4; fd0[$3] = $5; fdmax[$3] = $5 }
      if ($5 > fdmax[$3]) fdmax[$3] = $5
      rss1[$3] = $4; t1[$3] = $1 }
    END { worst_rss = 0; worst_fd = 0; longest = 0; n = 0
      for (p in rss0) { n++; g = (rss1[p] - rss0[p]) / 1024; f = fdmax[p] - fd0[p]
        if (g > worst_rss) worst_rss = g; if (f > worst_fd) worst_fd = f
        if (t1[p] - t0[p] > longest) { longest = t1[p] - t0[p]; lp = p } }
      bad = (worst_rss > rss_mb || worst_fd > slack) ? 1 : 0
      printf "%d %d %.1f %d %.0f %s %s %d %d %d %d\n", bad, n, worst_rss, worst_fd, longest, task[lp], lp,
             rss0[lp], rss1[lp], fd0[lp], fdmax[lp] }' "$job_samples")
  read -r bad n worst_rss worst_fd longest ltask lpid lrss0 lrss1 lfd0 lfdmax <<< "$leaks"
  check "$name ps memory and fds" "$n ps incarnations sampled; most RSS growth ${worst_rss} MiB (bound $rss_mb), most fds over the count 5 s in: ${worst_fd} (bound $fd_slack); longest-lived $ltask pid $lpid ${longest} s: RSS ${lrss0} -> ${lrss1} kB, fds ${lfd0} (max ${lfdmax})" "$bad"
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

report "soak: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; kills $kills, interval ${interval} s, jobs: $jobs"
for name in $jobs; do
  want=$(share "$name")
  calm_acc=""
  if [ "$name" != counter ]; then
    soak_job "$name" 0
    calm_acc=$(accuracy_of "$job_log")
    report "$name undisturbed: launcher status $job_rc in ${job_wall} s, final test accuracy ${calm_acc:-none}"
    [ "$job_rc" -eq 0 ] || { check "$name undisturbed run" "status $job_rc (see $job_log)" 1; continue; }
  fi
  soak_job "$name" "$want"
  restarts=$(grep -ac '^\[launcher\] .*; restarting it in' "$job_log")
  report "$name soaked: $(kill_counts), $restarts restarts by the launcher, ${job_wall} s"
  check "$name completed" "launcher status $job_rc" "$([ "$job_rc" -eq 0 ]; echo $?)"
  check "$name kills" "$job_kills of $want kills made before the job ended" "$([ "$job_kills" -ge "$want" ]; echo $?)"
  if [ "$name" != counter ]; then
    acc=$(accuracy_of "$job_log")
    ok=1
    [ -n "$acc" ] && [ -n "$calm_acc" ] &&
      ok=$(echo "d = ($acc - $calm_acc) * 100; if (d < 0) d = -d; if (d <= $tolerance) 0 else 1" | bc)
    check "$name accuracy" "${acc:-none} soaked vs ${calm_acc:-none} undisturbed (bound $tolerance points)" "$ok"
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
