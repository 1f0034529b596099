// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// What a worker reports as it trains: the chief's evaluations (the line each one prints and,
// with --csv, the line it appends to a file: bench/straggler, bench/solo_limit and bench/compare
// read both) and the other workers' passes over their shard.
#pragma once

#include "job.hpp"
#include "options.hpp"

#include <dsgd/error.hpp>
#include <dsgd/train/summary_writer.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

namespace dsgd_train {

/// One evaluation of the test accuracy by the chief.
struct evaluation {
  std::size_t epoch;
  double seconds;      // wall time since the variables were ready
  std::uint64_t step;  // global step of the values evaluated
  double loss;         // the chief's mean training loss since the previous evaluation
  double accuracy;
  double eval_seconds;  // how long the evaluation itself took (in `seconds`)
};

/// Prints @p e; @p steps_per_second counts the global steps this run took (not restored ones).
inline void print(const evaluation& e, double steps_per_second, std::size_t examples_per_step) {
  std::printf("epoch %2zu  %7.1f s  step %6llu  %6.1f steps/s  %7.0f examples/s  loss %.4f  test accuracy %.4f\n",
              e.epoch, e.seconds, static_cast<unsigned long long>(e.step), steps_per_second,
              steps_per_second * static_cast<double>(examples_per_step), e.loss, e.accuracy);
}

/// --csv FILE: one line per evaluation; a log without a file writes nothing.
class csv_log {
 public:
  /// Opens @p path ("" for none) and writes the header. @throws dsgd::error if it cannot
  explicit csv_log(const std::string& path) {
    if (path.empty()) return;
    file_ = std::fopen(path.c_str(), "w");
    if (!file_)
      throw dsgd::error(dsgd::errc::invalid_argument,
                        "--csv " + path + ": cannot open for writing: " + std::strerror(errno));
    std::fprintf(file_,
                 "rule,workers,backup,slowdown,epoch,wall_s,global_step,steps_per_s,train_loss,test_accuracy,eval_s,"
                 "examples_per_step\n");
    std::fflush(file_);
  }
  csv_log(const csv_log&) = delete;
  csv_log& operator=(const csv_log&) = delete;
  ~csv_log() {
    if (file_) std::fclose(file_);
  }

  /// @p examples_per_step: what a global step trains (all workers' batches, times K under local SGD).
  void write(const settings& s, std::size_t workers, std::size_t examples_per_step, const evaluation& e) {
    if (!file_) return;
    std::fprintf(file_, "%s,%zu,%zu,%s,%zu,%.3f,%llu,%.2f,%.5f,%.4f,%.3f,%zu\n", s.rule.c_str(), workers, s.backup,
                 s.slowdown.text.empty() ? "none" : s.slowdown.text.c_str(), e.epoch, e.seconds,
                 static_cast<unsigned long long>(e.step), e.seconds > 0 ? e.step / e.seconds : 0.0, e.loss, e.accuracy,
                 e.eval_seconds, examples_per_step);
    std::fflush(file_);
  }

 private:
  std::FILE* file_ = nullptr;
};

/// What a worker reports as it trains, under any rule: the chief evaluates the test accuracy
/// each time the global step crosses an epoch (its line, --csv and the "accuracy" summary); the
/// other workers print each pass over their shard. Both count the loss and examples since their
/// last report.
template <class Model, class TestSet>
class progress {
 public:
  using clock = std::chrono::steady_clock;

  /// Reports of a run that starts at global step @p first_step (a restored one's).
  progress(const settings& s, const schedule& plan, std::size_t workers, bool chief, Model& net,
           const TestSet& test_set, csv_log& csv, dsgd::train::summary_writer* summaries, std::uint64_t first_step)
      : s_(&s),
        plan_(&plan),
        workers_(workers),
        chief_(chief),
        net_(&net),
        test_set_(&test_set),
        csv_(&csv),
        summaries_(summaries),
        first_step_(first_step),
        next_(first_step / plan.steps_per_epoch + 1) {}

  /// @returns the seconds since the first step.
  double since_start() const { return std::chrono::duration<double>(clock::now() - start_).count(); }
  /// @returns the chief's last test accuracy (0 before the first evaluation).
  double accuracy() const noexcept { return accuracy_; }

  /// Counts a step's batch of @p examples at @p loss; the global step is now @p step and this
  /// worker has made @p passes passes over its shard. Reports when one is due.
  void step(std::uint64_t step, std::size_t examples, float loss, std::size_t passes) {
    ++steps_;
    examples_ += examples;
    loss_ += static_cast<double>(loss) * static_cast<double>(examples);
    if (chief_) {
      if (step < next_ * plan_->steps_per_epoch) return;
      evaluate(step);
    } else {
      if (passes < next_) return;
      const double seconds = std::chrono::duration<double>(clock::now() - interval_start_).count();
      std::printf("pass %2zu over its shard  %7.1f s  loss %.4f  %6.1f steps/s (this worker)  %7.0f examples/s\n",
                  passes, since_start(), mean_loss(), steps_ / seconds, examples_ / seconds);
      next_ = passes + 1;
    }
    std::fflush(stdout);
    steps_ = examples_ = 0;
    loss_ = 0;
    interval_start_ = clock::now();
  }

  /// At the end, global step @p step: the chief evaluates unless it just did (a job restored at
  /// its last step, or stopped between epochs, still reports the accuracy).
  void finish(std::uint64_t step) {
    if (chief_ && evaluated_at_ != step) evaluate(step);
  }

 private:
  double mean_loss() const { return examples_ > 0 ? loss_ / static_cast<double>(examples_) : 0.0; }

  void evaluate(std::uint64_t step) {
    const std::size_t epoch = std::min<std::size_t>(step / plan_->steps_per_epoch, s_->epochs);
    const auto eval_start = clock::now();
    accuracy_ = net_->accuracy(*test_set_);
    const double eval_seconds = std::chrono::duration<double>(clock::now() - eval_start).count();
    const evaluation e{epoch, since_start(), step, mean_loss(), accuracy_, eval_seconds};
    print(e, e.seconds > 0 ? static_cast<double>(e.step - first_step_) / e.seconds : 0.0, plan_->examples_per_step);
    csv_->write(*s_, workers_, plan_->examples_per_step, e);
    if (summaries_) summaries_->scalar("accuracy", static_cast<float>(accuracy_), static_cast<std::int64_t>(e.step));
    evaluated_at_ = e.step;
    next_ = epoch + 1;
  }

  const settings* s_;
  const schedule* plan_;
  std::size_t workers_;
  bool chief_;
  Model* net_;
  const TestSet* test_set_;
  csv_log* csv_;
  dsgd::train::summary_writer* summaries_;
  std::uint64_t first_step_;
  std::size_t next_;  // the chief: the epoch to evaluate at next; the others: the pass to report
  clock::time_point start_ = clock::now(), interval_start_ = start_;
  std::size_t steps_ = 0, examples_ = 0;  // since the last report
  double loss_ = 0;                       // summed over those examples
  double accuracy_ = 0;
  std::optional<std::uint64_t> evaluated_at_;
};

}  // namespace dsgd_train
