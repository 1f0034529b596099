// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// train::monitored_session: TensorFlow's MonitoredTrainingSession for a dsgd trainer. The
/// chief restores the latest checkpoint (or initialises), the others wait until the variables
/// are ready; every step runs hooks (stop at step, logging, checkpoints, summaries, a NaN
/// guard); close() runs the final hooks and shuts the cluster down from the chief.
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/tensor/tensor.hpp>
#include <dsgd/train/progress.hpp>
#include <dsgd/train/saver.hpp>
#include <dsgd/train/summary_writer.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dsgd::train {

/// What a hook sees after each step.
template <Device D>
struct run_values {
  std::uint64_t step = 0;                           ///< the step of the values now held
  float loss = 0;                                   ///< the loss the step computed
  const std::vector<tensor<D>>* variables = nullptr;  ///< values after the step
  const std::vector<tensor<D>>* gradients = nullptr;  ///< the gradients that were pushed
  const std::vector<std::string>* names = nullptr;
};

/// A SessionRunHook: called at the start, after every step, and at the end. Hooks run once per
/// step, never per element, so a virtual call is the right price for an open set of them.
template <Device D>
class session_hook {
 public:
  virtual ~session_hook() = default;
  /// After the session is created; @p step is the restored (or initial) step.
  virtual void begin(std::uint64_t /*step*/, bool /*chief*/) {}
  /// After each step; returns true to ask the session to stop.
  virtual bool after_run(const run_values<D>&) { return false; }
  /// At close(), with the last step's values.
  virtual void end(const run_values<D>&) {}
};

/// Stops once the step reaches @p last_step (StopAtStepHook).
template <Device D>
class stop_at_step_hook final : public session_hook<D> {
 public:
  explicit stop_at_step_hook(std::uint64_t last_step) : last_(last_step) {}
  bool after_run(const run_values<D>& v) override { return v.step >= last_; }

 private:
  std::uint64_t last_;
};

/// Prints "step N loss L steps/s S examples/s E" every @p every steps (LoggingTensorHook).
template <Device D>
class logging_hook final : public session_hook<D> {
 public:
  logging_hook(std::ostream& out, std::size_t batch_size, std::uint64_t every, summary_writer* summaries = nullptr)
      : logger_(out, batch_size, every, summaries) {}
  bool after_run(const run_values<D>& v) override {
    logger_.step(v.step, v.loss);
    return false;
  }

 private:
  progress_logger logger_;
};

/// Stops with errc::invalid_argument naming the first variable (or the loss) that is NaN or
/// infinite (NanTensorHook).
template <Device D>
class nan_guard_hook final : public session_hook<D> {
 public:
  bool after_run(const run_values<D>& v) override {
    if (!std::isfinite(v.loss))
      throw error(errc::invalid_argument, "step " + std::to_string(v.step) + ": the loss is " + std::to_string(v.loss));
    check(*v.gradients, "gradient of", v);
    check(*v.variables, "variable", v);
    return false;
  }

 private:
  static void check(const std::vector<tensor<D>>& ts, const char* what, const run_values<D>& v) {
    for (std::size_t i = 0; i < ts.size(); ++i) {
      auto host = ts[i].to_host();
      for (std::size_t j = 0; j < host.size(); ++j)
        if (!std::isfinite(host[j]))
          throw error(errc::invalid_argument, "step " + std::to_string(v.step) + ": " + what + " " + (*v.names)[i] +
                                                  " holds " + std::to_string(host[j]) + " at element " +
                                                  std::to_string(j));
    }
  }
};

/// Calls @p f (an evaluation, say) at close() on the chief only, with the final values.
template <Device D>
class final_hook final : public session_hook<D> {
 public:
  explicit final_hook(std::function<void(const run_values<D>&)> f) : f_(std::move(f)) {}
  void begin(std::uint64_t, bool chief) override { chief_ = chief; }
  void end(const run_values<D>& v) override {
    if (chief_) f_(v);
  }

 private:
  std::function<void(const run_values<D>&)> f_;
  bool chief_ = false;
};

/// Settings of a monitored session (the arguments of MonitoredTrainingSession).
struct session_options {
  std::filesystem::path checkpoint_dir;        ///< empty: no checkpoints, no restore
  std::uint64_t save_checkpoint_steps = 0;     ///< chief saves every N steps (0: not by steps)
  std::chrono::seconds save_checkpoint_secs{0};  ///< and/or every N seconds (0: not by time)
  std::size_t keep_checkpoints = 5;
};

/// A monitored training session over a dsgd trainer (chief or worker; not a ps task).
///
/// @code
/// dsgd::train::monitored_session session(t, net.parameters(), net.names(), std::move(hooks),
///                                        {.checkpoint_dir = "ckpt", .save_checkpoint_steps = 500});
/// while (!session.should_stop()) {
///   float loss = net.forward_backward(batch...);
///   session.run(loss, net.gradients());
/// }
/// session.close();
/// @endcode
template <class Trainer>
class monitored_session {
 public:
  using device_type = typename Trainer::device_type;
  using hook_type = session_hook<device_type>;

  /// Creates the session: the chief restores @p variables from the latest checkpoint in
  /// options.checkpoint_dir (if there is one) and initialises the ps tasks with them; every
  /// task then pulls the values it starts from.
  monitored_session(Trainer& trainer, std::vector<tensor<device_type>>& variables, std::vector<std::string> names,
                    std::vector<std::unique_ptr<hook_type>> hooks, session_options options = {})
      : trainer_(trainer), variables_(variables), names_(std::move(names)), hooks_(std::move(hooks)),
        options_(std::move(options)) {
    std::uint64_t step = 0;
    if (trainer_.is_chief() && !options_.checkpoint_dir.empty()) {
      saver_.emplace(options_.checkpoint_dir, options_.keep_checkpoints);
      if (auto latest = saver_->latest()) {
        step = restore(*latest);
        restored_ = latest;
      }
    }
    trainer_.create_variables(variables_, names_, step);
    last_save_time_ = std::chrono::steady_clock::now();
    last_save_step_ = trainer_.step();
    for (auto& h : hooks_) h->begin(trainer_.step(), trainer_.is_chief());
  }

  monitored_session(const monitored_session&) = delete;
  monitored_session& operator=(const monitored_session&) = delete;

  /// @returns the checkpoint step the chief restored, if it restored one.
  std::optional<std::uint64_t> restored_step() const noexcept { return restored_; }
  /// @returns the step of the values held now.
  std::uint64_t step() const noexcept { return trainer_.step(); }
  /// @returns true once a hook asked to stop.
  bool should_stop() const noexcept { return stop_; }

  /// Pushes @p gradients (computed on the values of step()), pulls the next values into the
  /// variables, then runs the hooks and the chief's checkpoint schedule.
  void run(float loss, const std::vector<tensor<device_type>>& gradients) {
    trainer_.push(gradients);
    trainer_.pull(variables_);
    last_ = {trainer_.step(), loss, &variables_, &gradients, &names_};
    for (auto& h : hooks_) stop_ = h->after_run(last_) || stop_;
    if (saver_ && due()) save();
  }

  /// Runs the final hooks, saves a last checkpoint (chief) and finishes this worker; the chief
  /// then shuts the cluster down once every worker has finished.
  void close() {
    if (closed_) return;
    closed_ = true;
    if (saver_ && trainer_.step() != last_save_step_) save();
    last_.step = trainer_.step();
    last_.variables = &variables_;
    last_.names = &names_;
    for (auto& h : hooks_) h->end(last_);
    trainer_.finish();
  }

 private:
  bool due() const {
    auto s = trainer_.step();
    if (options_.save_checkpoint_steps && s >= last_save_step_ + options_.save_checkpoint_steps) return true;
    return options_.save_checkpoint_secs.count() > 0 &&
           std::chrono::steady_clock::now() - last_save_time_ >= options_.save_checkpoint_secs;
  }

  // One file per ps task, holding what the plan gives it, then the manifest. The values are the
  // chief's pulled copy of the step (under sync, exactly the variables at that step).
  void save() {
    const auto& plan = trainer_.plan();
    std::vector<std::vector<float>> host;
    for (const auto& v : variables_) host.push_back(v.to_host());
    for (std::size_t ps = 0; ps < plan.ps_tasks(); ++ps) {
      std::vector<shard_data> shards;
      for (const auto& s : plan.shards())
        if (s.ps_task == ps)
          shards.push_back({plan.variables()[s.variable].name, plan.variables()[s.variable].shape, s.offset,
                            std::span<const float>(host[s.variable]).subspan(s.offset, s.elements)});
      saver_->write_shard_file(trainer_.step(), ps, plan.ps_tasks(), shards);
    }
    saver_->commit(trainer_.step(), plan);
    last_save_step_ = trainer_.step();
    last_save_time_ = std::chrono::steady_clock::now();
  }

  // Reads every variable by name (whatever the placement was when it was written).
  std::uint64_t restore(std::uint64_t step) {
    auto reader = saver_->open(step);
    for (std::size_t i = 0; i < variables_.size(); ++i) {
      if (reader.shape_of(names_[i]) != variables_[i].shape())
        throw error(errc::shape_mismatch, "checkpoint " + std::to_string(step) + ": " + names_[i] + " has shape " +
                                              reader.shape_of(names_[i]).to_string() + ", the model " +
                                              variables_[i].shape().to_string());
      variables_[i].assign(reader.read(names_[i]));
    }
    return step;
  }

  Trainer& trainer_;
  std::vector<tensor<device_type>>& variables_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<hook_type>> hooks_;
  session_options options_;
  std::optional<saver> saver_;
  std::optional<std::uint64_t> restored_;
  run_values<device_type> last_{};
  std::chrono::steady_clock::time_point last_save_time_;
  std::uint64_t last_save_step_ = 0;
  bool stop_ = false;
  bool closed_ = false;
};

}  // namespace dsgd::train
