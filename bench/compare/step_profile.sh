#!/bin/sh
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Step-time breakdown of dsgd sync against a gloo allreduce of the same bytes (docs/compare.md,
# "Step-time breakdown"): the Fashion-MNIST MLP of dsgd-train (235,146 floats),
# batch 64 per worker, 2 workers, every process one thread. Per repetition, interleaved:
#
#   local     dsgd_bench_step_profile --local: forward + backward alone, one process
#   sync      dsgd-launch --ps 1 --workers 2 -- dsgd_bench_step_profile: dsgd-train's sync step
#             timed per phase (data, compute, push, pull) on each worker
#   exchange  the same cluster without compute: push + pull of the gradients only
#   overlap   the sync cluster with its step through trainer::overlap (pushes during the
#             backward pass, pulls during the next forward pass)
#   push_pull the sync cluster with push and pull as one exchange (trainer::push_pull)
#   session   the sync cluster through dsgd-train's monitored session (hooks, summaries with
#             weight histograms, checkpoint schedule) in blocks of 50 steps alternating with
#             bare push_pull steps in the same run; the table gives session / bare (<= 1.05)
#   torch     dsgd-launch --ps 0 --workers 2 -- allreduce.py: gloo allreduce of 235,146 floats,
#             then a DDP step against the same step under no_sync()
#
# Each program prints medians over its steps after a warm-up; the tables show per repetition
# the mean of the two workers' medians, the median over the repetitions, and the smallest
# (the least disturbed repetition: on a shared machine load only adds time).
#
#   bench/compare/step_profile.sh [--reps N] [--steps N] [--out DIR] [--no-ddp]
#
#   --reps N    repetitions (default 3)
#   --steps N   timed steps per dsgd run (default 500, after 100 warm-up steps)
#   --out DIR   rows.csv, table.md and step_profile.png (default BUILD/step_profile; PNG=file
#               puts the plot elsewhere)
#   --no-ddp    only the allreduce on the torch side
#
# BUILD=DIR uses an existing build directory configured with -DDSGD_BUILD_BENCH=ON (Google
# Benchmark must be installed for that: bench/CMakeLists.txt needs it); by default
# build-compare is configured Release with the benchmarks. torch comes from bench/compare/.venv
# (run.sh installs it; this script installs torch and numpy there if missing).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
reps=3
steps=500
out=""
ddp_steps=400
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-ddp) ddp_steps=0; shift ;;
    *) echo "step_profile.sh: unknown option $1 (see the comment at the top of $0)" >&2; exit 2 ;;
  esac
done

build=${BUILD:-"$root/build-compare"}
if [ -z "${BUILD:-}" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDSGD_BUILD_TESTS=OFF \
    -DDSGD_BUILD_BENCH=ON >/dev/null
fi
cmake --build "$build" --target dsgd_bench_step_profile dsgd-launch >/dev/null
out=${out:-"$build/step_profile"}
mkdir -p "$out"

. "$root/bench/python_env.sh"
py=$(bench_python torch numpy matplotlib)

# GNU nproc reports OMP_NUM_THREADS when that is set: ask it without.
machine="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $("$py" -c 'import torch; print("torch", torch.__version__)')"

# One thread per process, as bench/compare/run.sh runs every system.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_WAIT_POLICY=passive
export PYTHONWARNINGS=ignore
launch="$build/tools/dsgd-launch"
profile="$build/bench/dsgd_bench_step_profile"
rows="$out/rows.csv"
echo "$machine; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "rep,profile,mode,task,n,a,b,c,d,e,f,g" >"$rows"

# run LOG COMMAND...: runs COMMAND with its output in LOG, or fails naming the log.
run() {
  log=$1
  shift
  "$@" >"$log" 2>&1 || { echo "step_profile.sh: exit status $? from $*; see $log" >&2; exit 1; }
}

# collect REP LOG: appends the profile rows of LOG, or fails naming the log.
collect() {
  if ! grep -q "profile," "$2"; then
    echo "step_profile.sh: no profile rows in $2" >&2
    exit 1
  fi
  grep -o "profile,.*" "$2" | sed "s/^/$1,/" >>"$rows"
}

rep=1
while [ "$rep" -le "$reps" ]; do
  echo "== rep $rep of $reps"
  run "$out/local_r$rep.log" "$profile" --local --steps "$steps"
  collect "$rep" "$out/local_r$rep.log"
  run "$out/sync_r$rep.log" "$launch" --ps 1 --workers 2 --timeout 600 -- "$profile" --steps "$steps"
  collect "$rep" "$out/sync_r$rep.log"
  run "$out/overlap_r$rep.log" "$launch" --ps 1 --workers 2 --timeout 600 -- "$profile" --overlap \
    --steps "$steps"
  collect "$rep" "$out/overlap_r$rep.log"
  run "$out/push_pull_r$rep.log" "$launch" --ps 1 --workers 2 --timeout 600 -- "$profile" --push-pull \
    --steps "$steps"
  collect "$rep" "$out/push_pull_r$rep.log"
  run "$out/session_r$rep.log" "$launch" --ps 1 --workers 2 --timeout 600 -- "$profile" --session \
    --steps "$steps"
  collect "$rep" "$out/session_r$rep.log"
  run "$out/exchange_r$rep.log" "$launch" --ps 1 --workers 2 --timeout 600 -- "$profile" --exchange-only \
    --steps "$steps"
  collect "$rep" "$out/exchange_r$rep.log"
  run "$out/torch_r$rep.log" "$launch" --ps 0 --workers 2 --timeout 600 -- "$py" "$here/allreduce.py" \
    --ddp-steps "$ddp_steps"
  collect "$rep" "$out/torch_r$rep.log"
  rep=$((rep + 1))
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
machine="$machine; $(sed -n 's/^matrix products: //p' "$out/local_r1.log" | head -1)"

"$py" "$here/step_plot.py" --rows "$rows" --png "${PNG:-$out/step_profile.png}"
"$py" - "$rows" "$machine" >"$out/table.md" <<'PY'
import csv, statistics, sys
from collections import defaultdict

rows, machine = sys.argv[1], sys.argv[2]
# per (rep, mode): list of per-task value lists
by = defaultdict(list)
with open(rows) as f:
    for r in csv.DictReader(f):
        values = [float(r[k]) for k in "abcdefg" if r[k] not in (None, "")]
        by[(int(r["rep"]), r["mode"])].append(values)
reps = sorted({rep for rep, _ in by})


def mean_of_tasks(rep, mode, i):
    tasks = by.get((rep, mode), [])
    return sum(t[i] for t in tasks) / len(tasks) if tasks else float("nan")


# profile row fields after n: step, compute, push, pull, data, comm, mean_step (dsgd);
# median (torch_allreduce); step, compute, comm (torch_ddp)
table = []
for rep in reps:
    step, compute, push, pull, data, comm = (mean_of_tasks(rep, "sync", i) for i in range(6))
    alone = mean_of_tasks(rep, "local", 1)
    exchange = mean_of_tasks(rep, "exchange", 0)
    allreduce = mean_of_tasks(rep, "torch_allreduce", 0)
    ddp_step, ddp_compute, ddp_comm = (mean_of_tasks(rep, "torch_ddp", i) for i in range(3))
    overlap = mean_of_tasks(rep, "overlap", 0)
    pp = mean_of_tasks(rep, "push_pull", 0)
    table.append({"rep": str(rep), "pp": pp, "pp_gain": step / pp, "pp_comm": pp - alone,
                  "pp_ratio": (pp - alone) / allreduce,
                  "overlap": overlap, "gain": step / overlap, "overlap_comm": overlap - alone,
                  "overlap_ratio": (overlap - alone) / allreduce, "step": step, "compute": compute, "push": push,
                  "pull": pull, "data": data,
                  "comm": comm, "alone": alone, "comm_alone": step - alone, "exchange": exchange,
                  "allreduce": allreduce, "ratio": comm / allreduce, "ratio_alone": (step - alone) / allreduce,
                  "ratio_exchange": exchange / allreduce, "ddp_step": ddp_step, "ddp_compute": ddp_compute,
                  "ddp_comm": ddp_comm, "ddp_ratio": ddp_comm / allreduce})
median = {"rep": "**median**"}
for k in table[0]:
    if k != "rep":
        median[k] = statistics.median(r[k] for r in table)
table.append(median)
# The least disturbed repetition of each column: on a shared machine load only adds time.
least = {"rep": "least"}
for k in table[0]:
    if k != "rep":
        least[k] = min(r[k] for r in table[:-1])
for k in ("ratio", "ratio_alone", "ratio_exchange", "ddp_ratio", "gain", "overlap_ratio", "pp_gain", "pp_ratio"):
    least[k] = float("nan")  # a ratio of two minima from different repetitions means little
table.append(least)


def fmt(v, suffix=""):
    return "-" if v != v else f"{v:.2f}{suffix}"  # NaN: not measured (--no-ddp)


def line(r, keys, ratios):
    cells = [r["rep"]] + [fmt(r[k]) for k in keys] + [fmt(r[k], "x") for k in ratios]
    return "| " + " | ".join(cells) + " |"


print(f"{machine}; every process one thread; milliseconds, medians over the timed steps.\n")
print("| rep | sync step | compute | push | pull | data | comm share (step - compute) | gloo allreduce | "
      "comm share / allreduce |")
print("|---|---|---|---|---|---|---|---|---|")
for r in table:
    print(line(r, ["step", "compute", "push", "pull", "data", "comm", "allreduce"], ["ratio"]))
print()
print("| rep | compute alone (1 process) | step - compute alone | / allreduce | exchange only (push + pull, "
      "no compute) | / allreduce | DDP step | DDP no_sync step | DDP comm share | / allreduce |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in table:
    print(line(r, ["alone", "comm_alone"], ["ratio_alone"])[:-2] + " | " +
          line(r, ["exchange"], ["ratio_exchange"]).split(" | ", 1)[1][:-2] + " | " +
          line(r, ["ddp_step", "ddp_compute", "ddp_comm"], ["ddp_ratio"]).split(" | ", 1)[1])
print()
print("| rep | sync step | push_pull step | gain | push_pull step - compute alone | / allreduce | "
      "overlapped step | gain | overlapped step - compute alone | / allreduce |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in table:
    print("| " + " | ".join([r["rep"], fmt(r["step"]), fmt(r["pp"]), fmt(r["pp_gain"], "x"), fmt(r["pp_comm"]),
                             fmt(r["pp_ratio"], "x"), fmt(r["overlap"]), fmt(r["gain"], "x"),
                             fmt(r["overlap_comm"]), fmt(r["overlap_ratio"], "x")]) + " |")
print()
print("| rep | monitored session step | bare push_pull step (same run) | session / bare |")
print("|---|---|---|---|")
for rep in reps:
    sess, bare = mean_of_tasks(rep, "session", 0), mean_of_tasks(rep, "bare_push_pull", 0)
    print("| " + " | ".join([str(rep), fmt(sess), fmt(bare), fmt(sess / bare, "x")]) + " |")
PY
cat "$out/table.md"
