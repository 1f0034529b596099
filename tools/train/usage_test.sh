#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# usage_test.sh DSGD_TRAIN
# dsgd-train's command line: --help prints the usage and exits 0; every bad option exits 2
# with a message that names it, before any connection is made (the cases that need the
# cluster get a TF_CONFIG whose tasks nobody serves); a task without a cluster token exits 1;
# DSGD_HOSTS gives the ranks' hosts, a bad list named.
set -uo pipefail
program=$1
failures=0

out=$("$program" --help 2>&1)
status=$?
if [[ $status -ne 0 ]]; then echo "FAIL: --help exited $status"; failures=$((failures + 1)); fi
for want in "usage: dsgd-train" "--logdir DIR" "--save-steps N" "--keep K" "Exit status:"; do
  grep -qF -- "$want" <<<"$out" || { echo "FAIL: --help does not mention: $want"; failures=$((failures + 1)); }
done

# expect_usage_error TEXT ARGS...: the program exits 2 and its message contains TEXT.
expect_usage_error() {
  local want=$1
  shift
  local msg status
  msg=$("$program" "$@" 2>&1 >/dev/null)
  status=$?
  if [[ $status -ne 2 ]]; then
    echo "FAIL: dsgd-train $*: exit $status, expected 2 ($msg)"
    failures=$((failures + 1))
  elif ! grep -qF -- "$want" <<<"$msg"; then
    echo "FAIL: dsgd-train $*: message does not name '$want': $msg"
    failures=$((failures + 1))
  else
    echo "ok: dsgd-train $* -> $msg"
  fi
}

expect_usage_error "unknown option --bogus" --bogus
expect_usage_error "--epochs needs a value" --epochs
expect_usage_error "--epochs abc: expected a whole number" --epochs abc
expect_usage_error "--compress: compression \"gzip\": expected none, fp16, bf16" --compress gzip
expect_usage_error "--compress: compression \"top_k(2)\": top_k.ratio: must be in (0, 1]" --compress "top_k(2)"
expect_usage_error "--pull-compress top_k(0.01): a pull sends values, which keep no residual: expected none, fp16 or bf16" --pull-compress "top_k(0.01)"
expect_usage_error "--epochs 0: expected a whole number from 1" --epochs 0
expect_usage_error "--epochs 5x: expected a whole number" --epochs 5x
expect_usage_error "--epochs -1: expected a whole number" --epochs -1
expect_usage_error "--ps-threads 0: expected a whole number from 1 to 1024" --ps-threads 0
expect_usage_error "--batch 0:" --batch 0
expect_usage_error "--lr 0: expected a number in (0" --lr 0
expect_usage_error "--lr nan:" --lr nan
expect_usage_error "--momentum 1: expected a number in [0" --momentum 1
expect_usage_error "--decay 0:" --decay 0
expect_usage_error "--target 1.5:" --target 1.5
expect_usage_error "--rule sideways: expected sync, async, ssp, local or allreduce" --rule sideways
expect_usage_error "--save-secs: not available under --rule allreduce" --rule allreduce --logdir /tmp/x --save-secs 5
expect_usage_error "--compress: not available under --rule allreduce" --rule allreduce --compress fp16
expect_usage_error "--local-steps 0: expected a whole number from 1" --local-steps 0
expect_usage_error "--model cnn: expected mlp or softmax" --model cnn
expect_usage_error "--hidden 0: expected a whole number from 1" --hidden 0
expect_usage_error "--hidden x: expected a whole number" --hidden 1024,x
expect_usage_error "--hidden : expected a whole number" --hidden 1024,
expect_usage_error "--backup 1: backup workers need --rule sync, not async" --backup 1 --rule async
expect_usage_error "--staleness 3: a bound of --rule ssp, not sync" --staleness 3
expect_usage_error "--staleness x: expected a whole number" --rule ssp --staleness x
expect_usage_error "--slowdown worker:2: expected TASK=FACTOR" --slowdown worker:2
expect_usage_error "--slowdown worker:2=0.5: factor" --slowdown worker:2=0.5
expect_usage_error "--save-steps needs --logdir DIR" --save-steps 100
expect_usage_error "--save-secs needs --logdir DIR" --save-secs 30
expect_usage_error "--keep 0: expected a whole number from 1" --logdir /nonexistent/x --keep 0
expect_usage_error "--summary-steps 0:" --logdir /nonexistent/x --summary-steps 0
expect_usage_error "--log-steps x:" --log-steps x
expect_usage_error "--recovery-timeout -1:" --recovery-timeout -1
expect_usage_error "--startup-timeout 0:" --startup-timeout 0
expect_usage_error "--base-port 70000: expected a whole number from 1 to 65535" --base-port 70000
expect_usage_error "--num-ps x:" --num-ps x
expect_usage_error "unexpected argument extra" --epochs 1 extra
# Known only once the cluster is: 2 backups of 2 workers. Nothing listens on these ports; the
# error comes before any connection.
export TF_CONFIG='{"cluster":{"ps":["127.0.0.1:9"],"worker":["127.0.0.1:10","127.0.0.1:11"]},"task":{"type":"worker","index":0}}'
expect_usage_error "--backup 2: must be below the 2 workers" --backup 2

# No default secret: a task without DSGD_CLUSTER_TOKEN fails at start (exit 1), saying how to set
# one, before it connects; DSGD_INSECURE_NO_TOKEN=1 opts out, logged (it then fails to reach
# the ps nobody serves, 1 s later).
msg=$(env -u DSGD_CLUSTER_TOKEN -u DSGD_INSECURE_NO_TOKEN "$program" --model softmax 2>&1 >/dev/null)
status=$?
if [[ $status -ne 1 ]] || ! grep -qF "DSGD_CLUSTER_TOKEN is not set" <<<"$msg" || grep -qF "could not reach" <<<"$msg"; then
  echo "FAIL: without a token: exit $status, expected 1 before connecting ($msg)"
  failures=$((failures + 1))
else
  echo "ok: without a token -> $msg"
fi
msg=$(env -u DSGD_CLUSTER_TOKEN DSGD_INSECURE_NO_TOKEN=1 "$program" --model softmax --startup-timeout 1 2>&1 >/dev/null)
if ! grep -qF "DSGD_INSECURE_NO_TOKEN=1: running without a cluster secret" <<<"$msg" ||
  ! grep -qF "could not reach ps:0" <<<"$msg"; then
  echo "FAIL: DSGD_INSECURE_NO_TOKEN=1 did not run without a secret, logged: $msg"
  failures=$((failures + 1))
else
  echo "ok: DSGD_INSECURE_NO_TOKEN=1 -> runs, logged"
fi
unset TF_CONFIG

# DSGD_HOSTS, the ranks' hosts under mpirun, mpiexec or srun: an empty entry is a bad option
# (exit 2); a list whose length is neither 1 nor the job's ranks fails at start (exit 1), naming
# the variable; a good one gives the rank's task its host, said at start. Roles from MPICH's
# variables; nothing listens on ports 9-11 (worker:1 gives up after its 1 s startup deadline).
unset_roles=(-u TF_CONFIG -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u SLURM_PROCID -u SLURM_NTASKS)
msg=$(env "${unset_roles[@]}" DSGD_HOSTS=h1,,h3 PMI_RANK=2 PMI_SIZE=3 "$program" --model softmax 2>&1 >/dev/null)
status=$?
if [[ $status -ne 2 ]] || ! grep -qF "DSGD_HOSTS=h1,,h3: empty host at position 2" <<<"$msg"; then
  echo "FAIL: DSGD_HOSTS=h1,,h3: exit $status, expected 2 naming the empty host ($msg)"
  failures=$((failures + 1))
else
  echo "ok: DSGD_HOSTS=h1,,h3 -> $msg"
fi
msg=$(env "${unset_roles[@]}" DSGD_CLUSTER_TOKEN=t DSGD_HOSTS=h1,h2 PMI_RANK=2 PMI_SIZE=3 \
  "$program" --model softmax --num-ps 1 --base-port 9 2>&1 >/dev/null)
status=$?
if [[ $status -ne 1 ]] || ! grep -qF "hosts has 2 entries; expected none, one, or one per rank (3) (the hosts of DSGD_HOSTS=h1,h2)" <<<"$msg"; then
  echo "FAIL: DSGD_HOSTS=h1,h2 for 3 ranks: exit $status, expected 1 naming the variable ($msg)"
  failures=$((failures + 1))
else
  echo "ok: DSGD_HOSTS=h1,h2 for 3 ranks -> $msg"
fi
out=$(env "${unset_roles[@]}" DSGD_CLUSTER_TOKEN=t DSGD_HOSTS=localhost,localhost,127.0.0.1 PMI_RANK=2 PMI_SIZE=3 \
  timeout 60 "$program" --model softmax --num-ps 1 --base-port 9 --startup-timeout 1 2>&1)
want="worker:1: role from MPICH (PMI_RANK=2, size 3, num_ps 1, hosts from DSGD_HOSTS), at 127.0.0.1:11"
if ! grep -qF "$want" <<<"$out"; then
  echo "FAIL: DSGD_HOSTS=localhost,localhost,127.0.0.1 under PMI_RANK=2: no line '$want' in: $out"
  failures=$((failures + 1))
else
  echo "ok: DSGD_HOSTS=localhost,localhost,127.0.0.1 -> $want"
fi

if [[ $failures -ne 0 ]]; then echo "usage_test: $failures failure(s)"; exit 1; fi
echo "usage_test: all passed"
