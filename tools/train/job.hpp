// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// What every task of the job derives alike from the settings and the cluster: the model, the
// schedule (an epoch in global steps, what a step trains, the optimizers), the trainer's options
// and this task's slowdown. Every task computes them from the same arguments, so the ps tasks
// apply what the workers expect.
#pragma once

#include "options.hpp"

#include <dsgd/cluster/cores.hpp>
#include <dsgd/cluster/environment.hpp>
#include <dsgd/cluster/token.hpp>
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/error.hpp>
#include <dsgd/model/blas.hpp>
#include <dsgd/model/mlp.hpp>
#include <dsgd/model/softmax_regression.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/train/summary_writer.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/sync_average.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

namespace dsgd_train {

using cpu = dsgd::device::cpu;
using optimizer = dsgd::optim::exponential_decay<dsgd::optim::momentum>;

/// The model of @p s: the MLP with its --hidden widths, or softmax regression.
template <class Model>
Model make_model(const settings& s) {
  if constexpr (std::is_same_v<Model, dsgd::model::mlp<cpu>>) return Model(cpu{}, {.hidden = s.hidden, .seed = s.seed});
  else return Model(cpu{}, {.seed = s.seed});
}

/// The job's schedule in global steps, the same on every task.
struct schedule {
  std::size_t replicas;           // worker tasks (slots, in an elastic job)
  std::size_t batches_per_epoch;  // of one worker's shard
  std::size_t aggregated;         // batches a global step applies: workers - backup (sync), else 1
  std::size_t k;                  // local steps a global step stands for (local SGD), else 1
  std::size_t steps_per_epoch;    // about one pass over the training set
  std::size_t examples_per_step;  // what a global step trains
  std::uint64_t last_step;        // every worker stops when the global step reaches it
  optimizer worker;               // local SGD's workers step with it, its rate decayed per pass
  optimizer ps;                   // what the ps tasks apply
};

/// The schedule of @p s on a cluster of @p replicas workers, under a sync rule or not.
/// @throws usage_error when --backup leaves no worker to aggregate
inline schedule make_schedule(const settings& s, std::size_t replicas, bool sync) {
  if (s.backup >= replicas)
    throw usage_error("--backup " + std::to_string(s.backup) + ": must be below the " + std::to_string(replicas) +
                      " workers of the cluster");
  const std::size_t shard = (dsgd::data::fashion_mnist::train_images.count + replicas - 1) / replicas;
  const std::size_t batches_per_epoch = (shard + s.batch - 1) / s.batch;
  // Under sync a step averages `aggregated` batches; async and SSP apply every batch as a step.
  const std::size_t aggregated = sync ? replicas - s.backup : 1;
  // Local SGD: a global step averages the models, each K local steps on, so K times fewer.
  const bool local = s.rule == "local";
  const std::size_t k = local ? s.local_steps : 1;
  const std::size_t steps_per_epoch = ((batches_per_epoch * replicas + aggregated - 1) / aggregated + k - 1) / k;
  const optimizer worker{{s.lr, s.momentum, false}, s.decay, batches_per_epoch, true};
  // Local SGD's ps only averages (train/local_sgd.hpp: a plain step of 1 on the mean of the
  // moves); otherwise the ps runs the workers' schedule, decayed per epoch of global steps.
  optimizer ps = local ? optimizer{{1.f, 0.f, false}, 1.f, steps_per_epoch, true} : worker;
  if (!local) ps.decay_steps = steps_per_epoch;
  return {replicas,
          batches_per_epoch,
          aggregated,
          k,
          steps_per_epoch,
          aggregated * s.batch * k,
          static_cast<std::uint64_t>(s.epochs) * steps_per_epoch,
          worker,
          ps};
}

/// This task's role: TF_CONFIG, else the ranks of Open MPI, MPICH or Slurm laid out by --num-ps,
/// --base-port and DSGD_HOSTS. A layout error names DSGD_HOSTS when it gave the hosts.
/// @throws dsgd::error as cluster::resolve_from_environment does
inline dsgd::cluster::role resolve_role(const settings& s) {
  try {
    return dsgd::cluster::resolve_from_environment(s.layout);
  } catch (const dsgd::error& e) {
    if (s.hosts_variable.empty() || e.code() != dsgd::make_error_code(dsgd::errc::bad_cluster_spec)) throw;
    throw dsgd::error(dsgd::errc::bad_cluster_spec,
                      std::string(e.what()) + " (the hosts of DSGD_HOSTS=" + s.hosts_variable + ")");
  }
}

/// "worker:0: role from MPICH (PMI_RANK=2, size 4, num_ps 2), at localhost:2224": what a task
/// started by mpirun, mpiexec or srun derived from its rank; nothing under TF_CONFIG, which
/// names the task itself.
inline std::string role_line(const settings& s, const dsgd::cluster::role& r) {
  if (r.source == dsgd::cluster::role_source::tf_config) return {};
  std::string origin = r.origin;
  if (!s.hosts_variable.empty()) origin += ", hosts from DSGD_HOSTS";
  return r.task.to_string() + ": role from " + std::string(dsgd::cluster::to_string(r.source)) + " (" + origin +
         "), at " + r.cluster.address(r.task).to_string();
}

/// This process's task (resolve_role()), its role line printed, and its share of the host's
/// cores taken: tasks that share this host's cores (under mpirun, mpiexec or srun; dsgd-launch
/// sets OMP_NUM_THREADS itself) take one share each, OpenMP and BLAS alike, unless
/// OMP_NUM_THREADS says otherwise.
inline dsgd::cluster::role start_task(const settings& s) {
  auto role = resolve_role(s);
  if (const auto line = role_line(s, role); !line.empty()) std::printf("%s\n", line.c_str());
  if (const auto share = dsgd::cluster::share_cores(role.cluster, role.task, [](std::string_view line) {
        std::printf("%.*s\n", static_cast<int>(line.size()), line.data());
      }))
    dsgd::model::set_blas_threads(share->threads);
  return role;
}

/// The cluster's secret: DSGD_CLUSTER_TOKEN (dsgd-launch draws one for a single-host job),
/// with no default (cluster::token_from_environment).
inline std::string cluster_token() {
  return dsgd::cluster::token_from_environment(
      [](std::string_view m) { std::fprintf(stderr, "dsgd-train: %.*s\n", static_cast<int>(m.size()), m.data()); });
}

/// The trainer's options for @p s and its schedule. For ps:0 of an elastic job with --logdir,
/// @p membership receives the writer that counts the members in the job's summaries
/// ("membership/workers" at the global step of each change), next to the chief's.
template <class Trainer>
typename Trainer::options trainer_options(const settings& s, const schedule& plan, const dsgd::cluster::role& role,
                                          std::unique_ptr<dsgd::train::summary_writer>& membership) {
  typename Trainer::options o;
  o.connection.token = cluster_token();
  o.serving.listen = s.listen;
  o.serving.threads = s.ps_threads;
  // An elastic job (dsgd-launch --workers MIN:MAX, or a StatefulSet scaled up and down): the
  // spec's workers are slots, and the ps averages each step over the members present.
  if (const char* min = std::getenv("DSGD_MIN_REPLICAS"); min && *min)
    o.serving.min_replicas = read_whole("DSGD_MIN_REPLICAS", min, 1, plan.replicas);
  if (o.serving.min_replicas > 0 && !s.logdir.empty() && role.task.job == "ps" && role.task.index == 0) {
    membership = std::make_unique<dsgd::train::summary_writer>(s.logdir, ".ps0");
    o.serving.on_membership = [w = membership.get()](std::size_t members, std::uint64_t step) {
      w->scalar("membership/workers", static_cast<float>(members), static_cast<std::int64_t>(step));
      w->flush();
    };
  }
  o.compression = {.all = s.compress};
  o.pull_compression = {.all = s.pull_compress};
  o.requests.startup_timeout = std::chrono::milliseconds(static_cast<long long>(s.startup_timeout_s * 1000));
  o.optimizer = plan.ps;
  if constexpr (std::is_same_v<typename Trainer::update_rule_type, dsgd::update::sync_average>)
    o.rule.replicas_to_aggregate = s.backup > 0 ? plan.aggregated : 0;
  if constexpr (std::is_same_v<typename Trainer::update_rule_type, dsgd::update::bounded_staleness>)
    o.rule.staleness = s.staleness;
  return o;
}

/// --slowdown TASK=F: the factor for @p task, 1 when the option names another task.
inline double slowdown_for(const settings& s, const dsgd::cluster::task_id& task) {
  return s.slowdown.task == task.to_string() ? s.slowdown.factor : 1;
}

}  // namespace dsgd_train
