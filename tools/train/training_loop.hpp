// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// One task of the job: a ps task serves until the job ends; a worker trains in a monitored
// session (TensorFlow's MonitoredTrainingSession: the chief restores, checkpoints and writes
// summaries, hooks stop every worker at the last global step) and the chief evaluates the test
// accuracy each time the global step crosses an epoch.
#pragma once

#include "job.hpp"
#include "options.hpp"
#include "report.hpp"

#include <dsgd/cluster/cores.hpp>
#include <dsgd/cluster/environment.hpp>
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/model/blas.hpp>
#include <dsgd/model/train.hpp>
#include <dsgd/placement/greedy_by_bytes.hpp>
#include <dsgd/train/local_sgd.hpp>
#include <dsgd/train/monitored_session.hpp>
#include <dsgd/train/summary_writer.hpp>
#include <dsgd/trainer.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dsgd_train {

// The session's hooks: stop at the last step for every worker; the chief's progress lines and
// (with --logdir) summaries, the learning rate among them. TensorFlow's SummarySaverHook runs on
// the chief alone too.
inline std::vector<std::unique_ptr<dsgd::train::session_hook<cpu>>> make_hooks(const settings& s, const schedule& plan,
                                                                               bool chief,
                                                                               dsgd::train::summary_writer* summaries) {
  std::vector<std::unique_ptr<dsgd::train::session_hook<cpu>>> hooks;
  hooks.push_back(std::make_unique<dsgd::train::stop_at_step_hook<cpu>>(plan.last_step));
  if (chief && s.log_steps > 0)
    hooks.push_back(std::make_unique<dsgd::train::logging_hook<cpu>>(std::cout, plan.examples_per_step, s.log_steps));
  if (summaries) {
    hooks.push_back(std::make_unique<dsgd::train::summary_hook<cpu>>(
        *summaries, s.summary_steps, plan.examples_per_step,
        [schedule = s.rule == "local" ? plan.worker : plan.ps, k = plan.k](std::uint64_t step) {
          // Under sync a global step is one update of every variable; under async and SSP
          // one gradient applied: the count the schedule decays by. Local SGD's workers
          // decay by their own steps, k a global step.
          return std::vector<std::pair<std::string, float>>{{"learning_rate", schedule.learning_rate_at(step * k)}};
        }));
  }
  return hooks;
}

/// Runs this process's task of the job with @p Model under @p Rule.
/// @returns the exit status: 1 when the chief ends below --target
template <class Model, class Rule>
int train(const settings& s) {
  using trainer = dsgd::trainer<cpu, dsgd::placement::greedy_by_bytes, Rule, optimizer>;
  using clock = std::chrono::steady_clock;
  auto role = start_task(s);
  constexpr bool sync = std::is_same_v<Rule, dsgd::update::sync_average>;
  const schedule plan = make_schedule(s, dsgd::cluster::replicas::count(role.cluster), sync);
  std::unique_ptr<dsgd::train::summary_writer> membership;
  const auto o = trainer_options<trainer>(s, plan, role, membership);
  trainer t(role.cluster, role.task, o);
  if (t.is_ps()) {
    t.join();
    return 0;
  }
  const double slowdown = slowdown_for(s, t.task());
  const auto train_set = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::train);
  const auto test_set = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::test);
  csv_log csv(t.is_chief() ? s.csv : "");
  Model net = make_model<Model>(s);
  // An elastic job's slots may stand empty: each worker then draws from the whole training set
  // in its own order rather than from its slot's shard, which nobody would read while it is empty.
  const bool elastic = o.serving.min_replicas > 0;
  dsgd::model::shuffled_batches batches(train_set, {.batch = s.batch,
                                                    .seed = 1000 + t.replica() + 100 * s.seed,
                                                    .shard = elastic ? 0 : t.replica(),
                                                    .shards = elastic ? 1 : t.replicas()});
  if (slowdown > 1) std::printf("straggler: every step sleeps %.1fx its compute time\n", slowdown - 1);
  if (t.is_chief()) std::printf("matrix products: %s\n", dsgd::model::blas_description().c_str());

  std::unique_ptr<dsgd::train::summary_writer> summaries;
  if (t.is_chief() && !s.logdir.empty()) summaries = std::make_unique<dsgd::train::summary_writer>(s.logdir);
  dsgd::train::session_options so;
  so.checkpoint_dir = s.logdir;
  so.save_checkpoint_steps = s.save_steps;
  so.save_checkpoint_secs = std::chrono::seconds(s.save_secs);
  so.keep_checkpoints = s.keep;
  so.recovery_timeout = std::chrono::seconds(static_cast<long long>(s.recovery_timeout_s));
  // Restores the latest checkpoint in --logdir (chief), or initialises; the others wait.
  dsgd::train::monitored_session<trainer> session(t, net.parameters(), net.names(),
                                                  make_hooks(s, plan, t.is_chief(), summaries.get()), std::move(so));
  if (session.restored_step())
    std::printf("restored checkpoint %llu from %s: resuming at step %llu of %llu\n",
                static_cast<unsigned long long>(*session.restored_step()), s.logdir.c_str(),
                static_cast<unsigned long long>(session.step()), static_cast<unsigned long long>(plan.last_step));
  if (t.is_chief() && !s.logdir.empty())
    std::printf("checkpoints and summaries in %s (tensorboard --logdir %s)\n", s.logdir.c_str(), s.logdir.c_str());
  std::fflush(stdout);

  std::optional<dsgd::train::local_sgd<optimizer, cpu>> local_sgd;
  if (s.rule == "local") local_sgd.emplace(cpu{}, plan.worker, plan.k, net.parameters());
  const std::uint64_t first_step = session.step();
  progress report(s, plan, t.replicas(), t.is_chief(), net, test_set, csv, summaries.get(), first_step);
  std::size_t dropped = 0, local_steps = 0;
  // Every worker runs until the global step reaches the last step of the last epoch (TF's
  // StopAtStepHook on the global step), so a straggler stops with the others instead of
  // working through its own epochs after they have finished.
  while (!session.should_stop() && session.step() < plan.last_step) {
    const auto b = batches.next();
    const auto compute_start = clock::now();
    const float loss = net.forward_backward(b.images, b.labels, b.size);
    if (slowdown > 1) std::this_thread::sleep_for((clock::now() - compute_start) * (slowdown - 1));
    // Push, and pull the values of the next step, as one exchange; then the hooks and the
    // chief's checkpoints. A dropped push: some shard had moved on, a backup came late. Local
    // SGD steps alone and exchanges its move every k-th step, then goes on from the average.
    if (!local_sgd || local_sgd->step(net.gradients(), net.parameters())) {
      if (session.run(loss, local_sgd ? local_sgd->deltas() : net.gradients()) > 0) ++dropped;
      if (local_sgd) local_sgd->restart_from(net.parameters());
    }
    ++local_steps;
    report.step(session.step(), b.size, loss, batches.epochs());
  }
  report.finish(session.step());
  const double seconds = report.since_start();
  // The chief's last checkpoint, the hooks' end, and (chief) the cluster's shutdown.
  session.close();
  std::printf(
      "%s done: %zu steps of its own in %.1f s (%.1f steps/s), %zu gradients dropped as stale, "
      "%zu recoveries\n",
      t.task().to_string().c_str(), local_steps, seconds, local_steps / seconds, dropped, session.recoveries());
  if (!t.is_chief()) return 0;
  std::string setting;  // the rule's setting, where it has one
  if (s.backup > 0) setting = " with " + std::to_string(s.backup) + " backup";
  if (s.rule == "ssp") setting = " with staleness " + std::to_string(s.staleness);
  std::printf(
      "final test accuracy %.4f (%s%s, %zu workers, %zu ps, %llu global steps in %.1f s = %.1f steps/s, "
      "%zu gradients dropped as stale)\n",
      report.accuracy(), s.rule.c_str(), setting.c_str(), t.replicas(), t.cluster().num_tasks("ps"),
      static_cast<unsigned long long>(session.step()), seconds, (session.step() - first_step) / seconds, dropped);
  return report.accuracy() >= s.target ? 0 : 1;
}

}  // namespace dsgd_train
