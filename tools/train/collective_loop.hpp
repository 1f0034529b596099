// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// --rule allreduce: the workers train synchronously among themselves, with no ps. They form a
// ring at their cluster-spec addresses (collective::ring, authenticated with the cluster token),
// the chief's initial values are broadcast, and each step is one collective::sharded_update:
// gradients reduce-scattered, each worker applying the momentum update to the part it reduced,
// values all-gathered. The chief evaluates each epoch as the ps rules' chief does and prints the
// same lines. With --logdir the replicas resume from the latest checkpoint there and write one
// together every --save-steps steps and at the end (each its own segment's part, the chief
// committing it), and the chief writes the summaries (loss, learning rate, accuracy). ps tasks
// of such a job have nothing to do and exit.
#pragma once

#include "job.hpp"
#include "options.hpp"
#include "report.hpp"

#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/checkpoint/state_records.hpp>
#include <dsgd/cluster/cores.hpp>
#include <dsgd/cluster/replicas.hpp>
#include <dsgd/collective/ring.hpp>
#include <dsgd/collective/sharded_update.hpp>
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/model/blas.hpp>
#include <dsgd/model/train.hpp>
#include <dsgd/tensor/view.hpp>
#include <dsgd/train/summary_writer.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace dsgd_train {

/// Runs this process's task of the job with @p Model under --rule allreduce.
/// @returns the exit status: 1 when the chief ends below --target
template <class Model>
int train_allreduce(const settings& s) {
  using clock = std::chrono::steady_clock;
  auto role = start_task(s);
  if (role.task.job == "ps") {
    std::printf("%s: --rule allreduce trains among the workers; a ps task has nothing to do\n",
                role.task.to_string().c_str());
    return 0;
  }
  const std::size_t replicas = dsgd::cluster::replicas::count(role.cluster);
  const std::size_t replica = dsgd::cluster::replicas::index_of(role.cluster, role.task);
  const bool chief = replica == 0;
  const schedule plan = make_schedule(s, replicas, true);

  dsgd::transport::tcp_options connection;
  connection.token = cluster_token();
  const auto startup = std::chrono::milliseconds(static_cast<long long>(s.startup_timeout_s * 1000));
  dsgd::collective::ring<> ring(dsgd::collective::ring_members(role.cluster), replica, connection,
                                {.connect_timeout = startup, .step_timeout = std::chrono::seconds(120)});
  ring.connect();

  const double slowdown = slowdown_for(s, role.task);
  const auto train_set = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::train);
  const auto test_set = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::test);
  csv_log csv(chief ? s.csv : "");
  Model net = make_model<Model>(s);
  auto vars = dsgd::views(net.parameters(), net.gradients(), net.names());
  dsgd::collective::sharded_update<optimizer> update(ring, plan.ps, vars);
  update.broadcast_values(vars);  // every worker starts from the chief's values
  // With --logdir: the replicas resume from the checkpoint the chief finds there (each reads
  // every value and its own segment's optimizer state), and checkpoint together.
  std::optional<dsgd::checkpoint::saver> saver;
  std::unique_ptr<dsgd::train::summary_writer> summaries;
  std::uint64_t step = 0;
  if (!s.logdir.empty()) {
    saver.emplace(s.logdir, s.keep);
    if (chief) summaries = std::make_unique<dsgd::train::summary_writer>(s.logdir);
    const auto latest = chief ? saver->latest() : std::nullopt;
    const auto bits = dsgd::checkpoint::counter_bits(latest ? *latest + 1 : 0);  // 0: none
    std::vector<float> chosen(bits.begin(), bits.end());
    ring.broadcast(chosen, 0, 0);
    if (const auto found = dsgd::checkpoint::counter_of(chosen[0], chosen[1]); found > 0) {
      step = found - 1;
      update.restore(saver->open(step), vars);
      if (chief)
        std::printf("restored checkpoint %llu from %s: resuming at step %llu of %llu\n",
                    static_cast<unsigned long long>(step), s.logdir.c_str(), static_cast<unsigned long long>(step),
                    static_cast<unsigned long long>(plan.last_step));
    }
    if (chief)
      std::printf("checkpoints and summaries in %s (tensorboard --logdir %s)\n", s.logdir.c_str(), s.logdir.c_str());
  }
  std::optional<std::uint64_t> saved;
  auto checkpoint = [&] {
    update.save(*saver, step, vars);
    saved = step;
  };
  dsgd::model::shuffled_batches batches(
      train_set, {.batch = s.batch, .seed = 1000 + replica + 100 * s.seed, .shard = replica, .shards = replicas});
  if (slowdown > 1) std::printf("straggler: every step sleeps %.1fx its compute time\n", slowdown - 1);
  if (chief) std::printf("matrix products: %s\n", dsgd::model::blas_description().c_str());
  std::fflush(stdout);

  const std::uint64_t first_step = step;
  progress report(s, plan, replicas, chief, net, test_set, csv, summaries.get(), first_step);
  while (step < plan.last_step) {
    const auto b = batches.next();
    const auto compute_start = clock::now();
    const float loss = net.forward_backward(b.images, b.labels, b.size);
    if (slowdown > 1) std::this_thread::sleep_for((clock::now() - compute_start) * (slowdown - 1));
    update.step(vars, step);
    ++step;
    if (chief && s.log_steps > 0 && step % s.log_steps == 0)
      std::printf("step %llu  loss %.4f\n", static_cast<unsigned long long>(step), static_cast<double>(loss));
    if (summaries && step % s.summary_steps == 0) {
      summaries->scalar("loss", loss, static_cast<std::int64_t>(step));
      summaries->scalar("learning_rate", plan.ps.learning_rate_at(step), static_cast<std::int64_t>(step));
    }
    if (saver && s.save_steps > 0 && step % s.save_steps == 0) checkpoint();
    report.step(step, b.size, loss, batches.epochs());
  }
  report.finish(step);
  if (saver && saved != step && step > first_step) checkpoint();  // the last step's
  if (summaries) summaries->flush();
  const double seconds = report.since_start();
  // Where a step's time went on this worker: its compute is the rest.
  const auto& t = update.time_spent();
  const double per = 1000.0 / static_cast<double>(std::max<std::uint64_t>(t.steps, 1));
  std::printf(
      "%s step time (ms): %.2f in all; gradients copied in %.2f, reduce-scatter %.2f, update of its %zu of %zu "
      "elements %.2f, all-gather %.2f, values copied out %.2f\n",
      role.task.to_string().c_str(), seconds * per, t.copy_in * per, t.reduce_scatter * per, update.owned().size(),
      update.elements(), t.apply * per, t.all_gather * per, t.copy_out * per);
  std::printf("%s done: %llu steps in %.1f s (%.1f steps/s), 0 gradients dropped as stale, 0 recoveries\n",
              role.task.to_string().c_str(), static_cast<unsigned long long>(step - first_step), seconds,
              static_cast<double>(step - first_step) / seconds);
  if (!chief) return 0;
  std::printf(
      "final test accuracy %.4f (allreduce, %zu workers, %zu ps, %llu global steps in %.1f s = %.1f steps/s, "
      "0 gradients dropped as stale)\n",
      report.accuracy(), replicas, role.cluster.has_job("ps") ? role.cluster.num_tasks("ps") : std::size_t{0},
      static_cast<unsigned long long>(step), seconds, static_cast<double>(step - first_step) / seconds);
  return report.accuracy() >= s.target ? 0 : 1;
}

}  // namespace dsgd_train
