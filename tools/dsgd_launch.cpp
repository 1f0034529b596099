// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// dsgd-launch: runs a whole cluster (ps tasks, workers, an optional chief) on one machine as
// local processes on free loopback ports, the way a cluster manager would on many machines.
//
//   dsgd-launch [options] -- PROGRAM [ARGS...]
//
// Every task gets TF_CONFIG (the JSON TensorFlow and the Kubernetes operators use), its output
// lines come back prefixed with its task ("[ps:0] ", "[worker:1] "), and when any task fails the
// others are stopped and the launcher exits non-zero. See docs/launching.md.
//
// Elastic jobs (--workers MIN:MAX): the cluster spec names MAX worker slots, MIN start; SIGUSR1
// to the launcher starts one more worker in the lowest free slot, SIGUSR2 stops the highest
// running one (never the chief); a worker that fails past --max-restarts leaves the job instead
// of stopping it. Every task gets DSGD_MIN_REPLICAS (server::serving_options::min_replicas).
//
// Linux only (prctl, signalfd, execvpe): on other systems run the tasks under a real cluster
// manager, which is what docs/launching.md describes for many machines anyway.
//
// The parts, each in tools/launch/: options.hpp the command line, job.hpp the cluster and this
// host's tasks with their environment, task.hpp a task's state, process.hpp starting and
// signalling a task's process, output.hpp its output forwarded as prefixed lines,
// restart_policy.hpp what a task's exit means, elastic.hpp an elastic job's membership, and
// launcher.hpp the supervision that ties them together.

#include "launch/launcher.hpp"
#include "launch/options.hpp"

#include <dsgd/error.hpp>

#include <cstdio>
#include <utility>

int main(int argc, char** argv) {
  dsgd_launch::options opts;
  try {
    opts = dsgd_launch::parse_options(argc, argv);
  } catch (const dsgd_launch::usage_error& e) {
    std::fprintf(stderr, "dsgd-launch: %s\n\n%s", e.message.c_str(), dsgd_launch::usage_text().c_str());
    return dsgd_launch::exit_usage;
  }
  try {
    return dsgd_launch::launcher(std::move(opts)).run();
  } catch (const dsgd_launch::usage_error& e) {
    std::fprintf(stderr, "dsgd-launch: %s\n", e.message.c_str());
    return dsgd_launch::exit_usage;
  } catch (const dsgd::error& e) {
    std::fprintf(stderr, "dsgd-launch: %s\n", e.what());
    return dsgd_launch::exit_internal;
  }
}
