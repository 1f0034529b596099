// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0

// One task of the CTR job: a ps task serves until the job ends; a worker trains Wide & Deep in
// a monitored session (the chief restores, checkpoints the tables full and incrementally,
// writes summaries; every worker stops at the last global step), and the chief evaluates the
// test AUC and log loss exactly, over every test example it scores.
#pragma once

#include "data.hpp"
#include "options.hpp"

#include <dsgd/cluster/cores.hpp>
#include <dsgd/cluster/environment.hpp>
#include <dsgd/cluster/token.hpp>
#include <dsgd/data/auc.hpp>
#include <dsgd/embedding/dedup.hpp>
#include <dsgd/embedding/row_cache.hpp>
#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/model/blas.hpp>
#include <dsgd/model/wide_deep.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/placement/greedy_by_bytes.hpp>
#include <dsgd/train/monitored_session.hpp>
#include <dsgd/train/summary_writer.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/sync_average.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace dsgd_ctr {

using cpu = dsgd::device::cpu;
namespace emb = dsgd::embedding;
using clock_type = std::chrono::steady_clock;

inline constexpr std::uint32_t wide_table = 0, deep_table = 1;

/// The model of @p s for examples of @p shape.
inline dsgd::model::wide_deep_config model_config(const settings& s, const example_shape& shape) {
  dsgd::model::wide_deep_config c{.dense_features = shape.dense_features,
                                  .fields = shape.fields,
                                  .crosses = {},
                                  .dim = s.dim,
                                  .hidden = s.hidden,
                                  .seed = s.seed};
  if (s.crosses) c.crosses = *s.crosses;
  else if (s.train.empty()) c.crosses = dsgd::model::wide_deep_config{}.crosses;  // the teacher's
  return c;
}

/// The two tables as TF's DNNLinearCombinedClassifier trains them: the wide weights from 0 by
/// FTRL (learning rate min(0.2, 1 / sqrt(keys per example)) unless given; or Adagrad, --wide-optimizer), the deep
/// embeddings from a truncated normal of standard deviation 1 / sqrt(dim) by Adagrad.
inline std::vector<emb::table_spec> table_specs(const settings& s, const dsgd::model::wide_deep_config& c) {
  const emb::table_rule rule = s.rule == "sync"  ? emb::table_rule::sync()
                               : s.rule == "ssp" ? emb::table_rule::bounded_staleness(std::uint32_t(s.staleness))
                                                 : emb::table_rule::async();  // async, hybrid
  const bool ftrl = s.wide_optimizer == "ftrl";
  const float wide_lr =
      s.wide_lr > 0 ? s.wide_lr : (ftrl ? std::min(0.2f, 1.f / std::sqrt(float(c.wide_keys()))) : s.lr);
  emb::table_spec wide{
      .name = "wide",
      .dim = 1,
      .rule = rule,
      .optimizer = ftrl ? emb::row_optimizer_spec::ftrl(wide_lr) : emb::row_optimizer_spec::adagrad(wide_lr),
      .initializer = emb::initializer_spec::zeros()};
  emb::table_spec deep{.name = "deep",
                       .dim = static_cast<std::uint32_t>(s.dim),
                       .rule = rule,
                       .optimizer = emb::row_optimizer_spec::adagrad(s.lr),
                       .initializer = emb::initializer_spec::truncated_normal(1.f / std::sqrt(float(s.dim)), s.seed)};
  for (auto* t : {&wide, &deep}) {
    if (s.admit > 1) t->admission = emb::admission_spec::by_count(s.admit);
    if (s.max_rows > 0) {
      t->eviction = emb::eviction_spec::least_frequent();
      t->max_rows = s.max_rows;
    }
  }
  return {wide, deep};
}

/// The job's schedule in global steps, the same on every task.
struct schedule {
  std::uint64_t examples = 0;          // training examples over all workers
  std::uint64_t steps_per_worker = 0;  // batches each worker trains
  std::uint64_t last_step = 0;         // every worker stops when the global step reaches it
  std::size_t examples_per_step = 0;   // what a global step trains
  std::size_t aggregated = 1;          // pushes a sync dense step averages: workers - backups
  // The pushes a table has applied by global step @p step at least: a sync table's steps are the
  // dense ones; an async table took every push of each dense step (aggregated of them under a
  // sync dense rule; the backups' come late but count too).
  std::uint64_t table_pushes(std::uint64_t step, bool tables_sync) const {
    return tables_sync ? step : step * aggregated;
  }
};

/// The schedule of @p s on @p replicas workers (more than --backup).
inline schedule make_schedule(const settings& s, std::size_t replicas, bool dense_sync) {
  const std::uint64_t examples = training_examples(s);
  const std::size_t aggregated = dense_sync ? replicas - s.backup : 1;
  const std::uint64_t steps =
      std::max<std::uint64_t>(1, (examples + aggregated * s.batch - 1) / (aggregated * s.batch));
  return {examples, (examples + replicas * s.batch - 1) / (replicas * s.batch), steps, aggregated * s.batch,
          aggregated};
}

/// Where a worker's steps went: each phase's mean time per step (the chief's evaluations and
/// hooks are in the MLP exchange, the session's run()).
struct step_times {
  static constexpr const char* names[] = {"input", "keys", "table pulls", "model", "table pushes", "MLP exchange"};
  std::array<double, 6> seconds{};
  std::uint64_t steps = 0;
  void add(const std::array<clock_type::duration, 6>& d) {
    for (std::size_t i = 0; i < d.size(); ++i) seconds[i] += std::chrono::duration<double>(d[i]).count();
    ++steps;
  }
  void print(const std::string& who) const {
    if (steps == 0) return;
    double total = 0;
    for (double x : seconds) total += x;
    std::printf("%s step time %.2f ms:", who.c_str(), 1e3 * total / double(steps));
    for (std::size_t i = 0; i < seconds.size(); ++i)
      std::printf("%s %s %.2f ms (%.0f%%)", i ? "," : "", names[i], 1e3 * seconds[i] / double(steps),
                  100 * seconds[i] / total);
    std::printf("\n");
  }
};

/// One evaluation on the test examples: exact AUC and mean log loss over all of them.
struct evaluation {
  double auc = 0, logloss = 0;
  double teacher_auc = std::numeric_limits<double>::quiet_NaN();  // the best reachable, where known
  std::size_t examples = 0;
  double seconds = 0;
};

/// Scores the test set with the values @p net holds and the tables' rows as they are (read, never
/// admitted: a key without a row reads its initial row).
template <class Trainer>
evaluation evaluate(Trainer& t, dsgd::model::wide_deep& net, const settings& s, std::uint64_t trained, bool teacher) {
  const auto start = clock_type::now();
  test_batches test(s, trained);
  emb::deduplicator wd, dd;
  std::vector<std::uint64_t> keys;
  std::vector<float> wide_rows, deep_rows, logits, scores, labels, probabilities;
  double loss = 0;
  for (;;) {
    const auto& b = test.next();
    if (b.size == 0) break;
    net.wide_keys(b.keys, b.size, keys);
    const auto& w = wd.run(keys);
    const auto& d = dd.run(b.keys);
    wide_rows.resize(w.unique.size());
    deep_rows.resize(d.unique.size() * s.dim);
    t.read_table(wide_table, w.unique, wide_rows);
    t.read_table(deep_table, d.unique, deep_rows);
    logits.resize(b.size);
    net.predict({b.size, b.dense, b.keys, {}}, {wide_rows, w.inverse}, {deep_rows, d.inverse}, logits);
    for (std::size_t i = 0; i < b.size; ++i) {
      const float z = logits[i], y = b.labels[i];
      loss += std::max(z, 0.f) - z * y + std::log1p(std::exp(-std::abs(z)));
    }
    scores.insert(scores.end(), logits.begin(), logits.end());
    labels.insert(labels.end(), b.labels.begin(), b.labels.begin() + std::ptrdiff_t(b.size));
    probabilities.insert(probabilities.end(), b.probabilities.begin(),
                         b.probabilities.begin() + std::ptrdiff_t(b.size));
  }
  evaluation e;
  e.examples = scores.size();
  if (e.examples == 0) throw dsgd::error(dsgd::errc::invalid_argument, "the test set has no examples");
  e.auc = dsgd::data::auc(std::span<const float>(scores), labels);
  e.logloss = loss / double(e.examples);
  if (teacher) e.teacher_auc = dsgd::data::auc(std::span<const float>(probabilities), labels);
  e.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  return e;
}

/// Runs this process's task of the job under the dense rule @p Rule.
/// @returns the exit status: 1 when the chief ends below --target
template <class Rule>
int train(const settings& s) {
  using trainer = dsgd::trainer<cpu, dsgd::placement::greedy_by_bytes, Rule, dsgd::optim::adagrad>;
  constexpr bool dense_sync = std::is_same_v<Rule, dsgd::update::sync_average>;
  const bool tables_sync = s.rule == "sync";
  auto role = dsgd::cluster::resolve_from_environment();
  if (const auto share = dsgd::cluster::share_cores(role.cluster, role.task, [](std::string_view line) {
        std::printf("%.*s\n", static_cast<int>(line.size()), line.data());
      }))
    dsgd::model::set_blas_threads(share->threads);
  const std::size_t replicas = dsgd::cluster::replicas::count(role.cluster);
  const bool ps = role.task.job == "ps";
  if (s.backup >= replicas)
    throw usage_error("--backup " + std::to_string(s.backup) + ": must be below the " + std::to_string(replicas) +
                      " workers of the cluster");
  // A worker checks its data before it connects (a ps task needs none): a missing or damaged
  // file is named at once.
  const example_shape shape = ps ? example_shape{} : shape_of(s);
  const schedule plan = ps ? schedule{} : make_schedule(s, replicas, dense_sync);

  typename trainer::options o;
  o.connection.token = dsgd::cluster::token_from_environment(
      [](std::string_view m) { std::fprintf(stderr, "dsgd-ctr: %.*s\n", static_cast<int>(m.size()), m.data()); });
  o.requests.startup_timeout = std::chrono::milliseconds(static_cast<long long>(s.startup_timeout_s * 1000));
  o.optimizer = dsgd::optim::adagrad{.learning_rate = s.lr};
  if constexpr (std::is_same_v<Rule, dsgd::update::bounded_staleness>) o.rule.staleness = s.staleness;
  if constexpr (dense_sync) o.rule.replicas_to_aggregate = s.backup > 0 ? replicas - s.backup : 0;
  trainer t(role.cluster, role.task, o);
  if (t.is_ps()) {
    t.join();
    return 0;
  }

  dsgd::model::wide_deep net(model_config(s, shape));
  const auto specs = table_specs(s, net.config());
  const double slowdown = s.slowdown.task == t.task().to_string() ? s.slowdown.factor : 1;
  std::unique_ptr<dsgd::train::summary_writer> summaries;
  if (t.is_chief() && !s.logdir.empty()) summaries = std::make_unique<dsgd::train::summary_writer>(s.logdir);

  // --cache S: deep rows pulled at most S steps ago come from this worker's cache.
  std::optional<emb::row_cache> cache;
  if (s.cache >= 0)
    cache.emplace(emb::row_cache::options{.dim = s.dim, .capacity = 1 << 20, .staleness = std::uint64_t(s.cache)});

  std::vector<std::unique_ptr<dsgd::train::session_hook<cpu>>> hooks;
  hooks.push_back(std::make_unique<dsgd::train::stop_at_step_hook<cpu>>(plan.last_step));
  if (summaries)
    hooks.push_back(std::make_unique<dsgd::train::summary_hook<cpu>>(
        *summaries, s.summary_steps, plan.examples_per_step, [&t, &cache](std::uint64_t) {
          auto scalars = t.table_stats(wide_table).scalars("wide/");
          for (auto& x : t.table_stats(deep_table).scalars("deep/")) scalars.push_back(std::move(x));
          if (cache) scalars.emplace_back("deep/cache_hit_rate", float(cache->statistics().hit_rate()));
          return scalars;
        }));
  dsgd::train::session_options so;
  so.checkpoint_dir = s.logdir;
  so.save_checkpoint_steps = s.save_steps;
  so.save_checkpoint_secs = std::chrono::seconds(s.save_secs);
  so.keep_checkpoints = s.keep;
  so.table_deltas_per_full = s.deltas;
  so.recovery_timeout = std::chrono::seconds(static_cast<long long>(s.recovery_timeout_s));
  // Restores the latest checkpoint in --logdir, tables included (chief), or initialises.
  dsgd::train::monitored_session<trainer> session(t, net.parameters(), net.names(), std::move(hooks), std::move(so));
  for (std::uint32_t id : {wide_table, deep_table}) t.create_table(id, specs[id]);
  if (t.is_chief()) {
    std::printf("wide & deep: %zu dense features, %zu fields, %zu crosses; MLP %zu", shape.dense_features, shape.fields,
                net.config().crosses.size(), net.config().deep_inputs());
    for (auto h : s.hidden) std::printf("-%zu", h);
    std::printf("-1 (%zu parameters); %zu workers, %zu ps\n  %s\n  %s\n", net.parameter_count(), replicas,
                t.cluster().num_tasks("ps"), specs[0].describe().c_str(), specs[1].describe().c_str());
    if (session.restored_step())
      std::printf("restored checkpoint %llu from %s: resuming at step %llu of %llu\n",
                  static_cast<unsigned long long>(*session.restored_step()), s.logdir.c_str(),
                  static_cast<unsigned long long>(session.step()), static_cast<unsigned long long>(plan.last_step));
    if (summaries)
      std::printf("checkpoints and summaries in %s (tensorboard --logdir %s)\n", s.logdir.c_str(), s.logdir.c_str());
    std::fflush(stdout);
  }

  // Each worker goes on about where the restored step left its shard.
  const std::uint64_t first_step = session.step();
  training_batches batches(s, t.replica(), replicas, first_step * plan.examples_per_step / replicas);
  emb::deduplicator wd, dd;
  std::vector<std::uint64_t> wide_keys;
  std::vector<float> wide_rows, deep_rows, pulled, wide_grads, deep_grads;
  std::uint64_t local_steps = 0, dropped_rows = 0;
  std::uint64_t interval_from = first_step, next_log = first_step + s.log_steps,
                next_eval = s.eval_steps ? first_step + s.eval_steps : plan.last_step;
  double interval_loss = 0, interval_input = 0;
  std::size_t interval_batches = 0;
  auto interval_start = clock_type::now();
  const auto start = interval_start;
  std::optional<evaluation> last;
  step_times times;
  auto report = [&](bool final) {
    // The stream's test examples come from just after those trained on (its ids drift).
    const std::uint64_t step = session.step();
    last = evaluate(t, net, s, std::min(plan.examples, step * plan.examples_per_step), shape.teacher);
    if (summaries) {
      summaries->scalar("auc", float(last->auc), std::int64_t(step));
      summaries->scalar("logloss", float(last->logloss), std::int64_t(step));
      summaries->flush();
    }
    std::printf("%s step %6llu  test auc %.4f  logloss %.4f", final ? "final" : "     ",
                static_cast<unsigned long long>(step), last->auc, last->logloss);
    if (!std::isnan(last->teacher_auc)) std::printf("  (the teacher's auc %.4f)", last->teacher_auc);
    std::printf("  %zu examples in %.1f s\n", last->examples, last->seconds);
    std::fflush(stdout);
  };

  while (!session.should_stop() && session.step() < plan.last_step) {
    const auto input_start = clock_type::now();
    const auto& b = batches.next();
    const auto compute_start = clock_type::now();
    net.wide_keys(b.keys, b.size, wide_keys);
    const auto& w = wd.run(wide_keys);
    const auto& d = dd.run(b.keys);
    wide_rows.resize(w.unique.size());
    deep_rows.resize(d.unique.size() * s.dim);
    wide_grads.resize(wide_rows.size());
    deep_grads.resize(deep_rows.size());
    float loss = 0;
    // The tables' lookups and pushes: after a ps was lost and the session re-created from the
    // last checkpoint, the step is dropped (its rows are from before).
    const auto keys_done = clock_type::now();
    clock_type::time_point pulled_at, computed_at;
    const bool done = session.guard([&] {
      // Both tables' lookups in one round trip, and their pushes in another.
      if (cache) {
        const auto& miss = cache->lookup(d.unique, local_steps, deep_rows);
        pulled.resize(miss.keys.size() * s.dim);
        t.pull_tables({{wide_table, w.unique, wide_rows}, {deep_table, miss.keys, pulled}});
        cache->fill_misses(pulled, deep_rows);
      } else {
        t.pull_tables({{wide_table, w.unique, wide_rows}, {deep_table, d.unique, deep_rows}});
      }
      pulled_at = clock_type::now();
      loss = net.forward_backward({b.size, b.dense, b.keys, b.labels}, {wide_rows, w.inverse}, {deep_rows, d.inverse},
                                  wide_grads, deep_grads);
      if (slowdown > 1) std::this_thread::sleep_for((clock_type::now() - compute_start) * (slowdown - 1));
      computed_at = clock_type::now();
      dropped_rows += t.push_tables({{wide_table, w.unique, wide_grads}, {deep_table, d.unique, deep_grads}});
    });
    if (!done) {
      if (cache) cache->clear();
      continue;
    }
    const auto pushed_at = clock_type::now();
    session.run(loss, net.gradients());
    times.add({compute_start - input_start, keys_done - compute_start, pulled_at - keys_done, computed_at - pulled_at,
               pushed_at - computed_at, clock_type::now() - pushed_at});
    ++local_steps;
    ++interval_batches;
    interval_loss += loss;
    interval_input += std::chrono::duration<double>(compute_start - input_start).count();
    if (!t.is_chief()) continue;
    const std::uint64_t step = session.step();
    if (s.log_steps > 0 && step >= next_log) {
      const double seconds = std::chrono::duration<double>(clock_type::now() - interval_start).count();
      const double examples = double(step - interval_from) * double(plan.examples_per_step);
      // Without input: this worker's time reading batches taken out (the peers' comparison).
      std::printf("step %6llu  %7.1f s  %8.0f examples/s (%8.0f without input)  loss %.4f",
                  static_cast<unsigned long long>(step),
                  std::chrono::duration<double>(clock_type::now() - start).count(), examples / seconds,
                  examples / std::max(1e-9, seconds - interval_input), interval_loss / double(interval_batches));
      if (cache) std::printf("  row cache hit rate %.3f", cache->statistics().hit_rate());
      std::printf("\n");
      std::fflush(stdout);
      next_log = step + s.log_steps;
      interval_from = step;
      interval_start = clock_type::now();
      interval_loss = interval_input = 0;
      interval_batches = 0;
    }
    if (step >= next_eval && step < plan.last_step) {
      report(false);
      next_eval = step + s.eval_steps;
    }
  }
  const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  if (t.is_chief()) {
    // Every push of the last step applied (an async table's may still be on its way).
    const auto expected = plan.table_pushes(session.step(), tables_sync);
    const auto deadline = clock_type::now() + std::chrono::seconds(120);
    for (std::uint32_t id : {wide_table, deep_table})
      while (t.read_table(id, {}, {}) < expected) {
        if (clock_type::now() > deadline)
          throw dsgd::error(dsgd::errc::timed_out, "table " + specs[id].name +
                                                       ": its pushes were not all applied "
                                                       "within 120 s of the last step");
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    report(true);  // on the values of the last step the session pulled
    for (std::uint32_t id : {wide_table, deep_table}) {
      const auto c = t.table_stats(id);
      std::printf("table %s: %llu rows (%.1f MB, %.1f bytes a row), %llu admitted, %llu refused, %llu evicted\n",
                  specs[id].name.c_str(), static_cast<unsigned long long>(c.rows), double(c.bytes) / 1e6,
                  c.rows ? double(c.bytes) / double(c.rows) : 0.0, static_cast<unsigned long long>(c.admitted),
                  static_cast<unsigned long long>(c.rejected), static_cast<unsigned long long>(c.evicted));
    }
  }
  session.close();
  times.print(t.task().to_string());
  std::printf("%s done: %llu steps of its own in %.1f s, %llu gradient rows dropped (no row), %zu recoveries\n",
              t.task().to_string().c_str(), static_cast<unsigned long long>(local_steps), seconds,
              static_cast<unsigned long long>(dropped_rows), session.recoveries());
  if (!t.is_chief()) return 0;
  const double trained = double(session.step() - first_step) * double(plan.examples_per_step);
  std::printf("final test auc %.4f (%s, %zu workers, %zu ps, %llu global steps, %.0f examples/s)\n", last->auc,
              s.rule.c_str(), replicas, t.cluster().num_tasks("ps"), static_cast<unsigned long long>(session.step()),
              trained / seconds);
  return last->auc >= s.target ? 0 : 1;
}

}  // namespace dsgd_ctr
