// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// train::monitored_session: TensorFlow's MonitoredTrainingSession for a dsgd trainer. The
/// chief restores the latest checkpoint (or initialises), the others wait until the variables
/// are ready; every step is one push_pull exchange and runs hooks (stop at step, logging,
/// checkpoints, TensorBoard summaries with weight histograms, a NaN guard); close() runs the final hooks and shuts the cluster down from the chief.
#pragma once

#include <dsgd/detail/log.hpp>
#include <dsgd/error.hpp>
#include <dsgd/tensor/tensor.hpp>
#include <dsgd/train/progress.hpp>
#include <dsgd/train/saver.hpp>
#include <dsgd/train/summary_writer.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
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

/// Writes TensorBoard summaries every @p every steps, on the chief only (SummarySaverHook):
/// "loss" (the mean since the last summary), "global_step/sec", "examples/sec", the scalars
/// @p scalars returns for the step (a learning rate, say), and a histogram of every variable
/// under its name. The variables are read (copied to the host) only at those steps, so the
/// hook costs nothing on the others.
template <Device D>
class summary_hook final : public session_hook<D> {
 public:
  /// Extra scalars for step @p step, as (tag, value) pairs.
  using scalars_function = std::function<std::vector<std::pair<std::string, float>>(std::uint64_t step)>;

  /// @param writer where the summaries go (kept by reference)
  /// @param every steps between summaries (at least 1)
  /// @param examples_per_step examples a step applies, for examples/sec
  summary_hook(summary_writer& writer, std::uint64_t every, std::size_t examples_per_step,
               scalars_function scalars = {})
      : writer_(writer), every_(every == 0 ? 1 : every), examples_(examples_per_step), scalars_(std::move(scalars)) {}

  void begin(std::uint64_t step, bool chief) override {
    chief_ = chief;
    last_step_ = step;
    last_time_ = std::chrono::steady_clock::now();
  }
  bool after_run(const run_values<D>& v) override {
    if (!chief_) return false;
    // After a recovery the step goes back to the checkpoint's: measure from there.
    if (v.step < last_step_) begin(v.step, chief_);
    loss_sum_ += v.loss;
    ++losses_;
    if (v.step >= last_step_ + every_) write(v);
    return false;
  }
  void end(const run_values<D>& v) override {
    if (!chief_) return;
    if (losses_ > 0) write(v);
    writer_.flush();
  }

 private:
  void write(const run_values<D>& v) {
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - last_time_).count();
    const double steps_per_second = seconds > 0 ? static_cast<double>(v.step - last_step_) / seconds : 0.0;
    std::vector<std::pair<std::string, float>> values{
        {"loss", static_cast<float>(loss_sum_ / static_cast<double>(std::max<std::uint64_t>(losses_, 1)))},
        {"global_step/sec", static_cast<float>(steps_per_second)},
        {"examples/sec", static_cast<float>(steps_per_second * static_cast<double>(examples_))}};
    if (scalars_)
      for (auto& extra : scalars_(v.step)) values.push_back(std::move(extra));
    std::vector<scalar_value> encoded;
    for (const auto& [tag, value] : values) encoded.push_back({tag, value});
    const auto step = static_cast<std::int64_t>(v.step);
    writer_.scalars(step, encoded);
    for (std::size_t i = 0; i < v.variables->size(); ++i) {
      const auto host = (*v.variables)[i].to_host();
      writer_.histogram(i < v.names->size() ? (*v.names)[i] : "var" + std::to_string(i), host, step);
    }
    last_step_ = v.step;
    last_time_ = now;
    loss_sum_ = 0;
    losses_ = 0;
  }

  summary_writer& writer_;
  std::uint64_t every_;
  std::size_t examples_;
  scalars_function scalars_;
  bool chief_ = false;
  std::uint64_t last_step_ = 0;
  std::chrono::steady_clock::time_point last_time_{};
  double loss_sum_ = 0;
  std::uint64_t losses_ = 0;
};

/// Settings of a monitored session (the arguments of MonitoredTrainingSession).
struct session_options {
  std::filesystem::path checkpoint_dir;        ///< empty: no checkpoints, no restore
  std::uint64_t save_checkpoint_steps = 0;     ///< chief saves every N steps (0: not by steps)
  std::chrono::seconds save_checkpoint_secs{0};  ///< and/or every N seconds (0: not by time)
  std::size_t keep_checkpoints = 5;
  /// A recoverable failure (a ps lost or unreachable, a restore by the chief) re-creates the
  /// session, retrying for up to this long overall (an attempt in progress ends there too)
  /// before the error is thrown; 0: thrown at once.
  std::chrono::seconds recovery_timeout{300};
  /// Where the session reports a failure it recovers from; stderr by default.
  std::function<void(std::string_view)> log;
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

  /// Creates the session: the chief has the ps tasks restore the latest checkpoint in
  /// options.checkpoint_dir (values, optimizer slots and counters; if there is one) or
  /// initialises them with @p variables; every task then pulls the values it starts from.
  monitored_session(Trainer& trainer, std::vector<tensor<device_type>>& variables, std::vector<std::string> names,
                    std::vector<std::unique_ptr<hook_type>> hooks, session_options options = {})
      : trainer_(trainer), variables_(variables), names_(std::move(names)), hooks_(std::move(hooks)),
        options_(std::move(options)) {
    options_.log = dsgd::detail::or_stderr(std::move(options_.log));
    if (trainer_.is_chief() && !options_.checkpoint_dir.empty()) {
      saver_.emplace(options_.checkpoint_dir, options_.keep_checkpoints);
      restored_ = saver_->latest();
    }
    if (restored_)
      trainer_.restore_variables(variables_, names_, options_.checkpoint_dir, *restored_);
    else
      trainer_.create_variables(variables_, names_);
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
  /// @returns how many times the session was re-created after a recoverable failure.
  std::size_t recoveries() const noexcept { return recoveries_; }

  /// Pushes @p gradients (computed on the values of step()) and pulls the next values into the
  /// variables in one exchange (trainer::push_pull, the fast path: the same values as a push
  /// then a pull, one round trip less), then runs the hooks and the chief's checkpoint
  /// schedule. After a recoverable failure (see trainer::recoverable) the session is re-created
  /// instead, from the latest checkpoint where the chief has one: the variables then hold its
  /// values, this step's gradients are dropped and the hooks do not run for it.
  /// @returns how many shards dropped the push as stale (a backup worker that came late; 0
  ///          after a recovery)
  /// @throws dsgd::error a non-recoverable error, or a recoverable one that lasted longer than
  ///         session_options::recovery_timeout
  std::size_t run(float loss, const std::vector<tensor<device_type>>& gradients) {
    std::size_t dropped = 0;
    try {
      dropped = trainer_.push_pull(gradients, variables_);
    } catch (const dsgd::error& e) {
      if (!Trainer::recoverable(e.code()) || options_.recovery_timeout.count() == 0) throw;
      recover(e);
      return 0;
    }
    last_ = {trainer_.step(), loss, &variables_, &gradients, &names_};
    for (auto& h : hooks_) stop_ = h->after_run(last_) || stop_;
    if (saver_ && due()) {
      try {
        save();
      } catch (const dsgd::error& e) {
        if (!Trainer::recoverable(e.code()) || options_.recovery_timeout.count() == 0) throw;
        recover(e);
      }
    }
    return dropped;
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

  // Each ps task writes its data file (values, optimizer slots and counters of the shards it
  // holds, at the step the chief just pulled: under sync exactly that step), then the chief
  // verifies them and writes the manifest.
  void save() {
    trainer_.save_shards(options_.checkpoint_dir);
    saver_->commit(trainer_.step(), trainer_.plan());
    last_save_step_ = trainer_.step();
    last_save_time_ = std::chrono::steady_clock::now();
  }

  // Re-creates the session after @p failure: the chief from its latest checkpoint (or its last
  // values), everyone reconnecting and pulling anew; retried with backoff until the deadline,
  // which bounds each attempt too (its connecting and requests end there), so it is overall.
  void recover(const dsgd::error& failure) {
    const auto who = trainer_.task().to_string();
    options_.log(who + ": session lost at step " + std::to_string(trainer_.step()) + " (" + failure.what() +
                 "); re-creating it");
    const auto deadline = std::chrono::steady_clock::now() + options_.recovery_timeout;
    auto backoff = std::chrono::milliseconds(100);
    while (true) {
      try {
        std::optional<std::pair<std::filesystem::path, std::uint64_t>> from;
        if (saver_)
          if (auto latest = saver_->latest()) from.emplace(options_.checkpoint_dir, *latest);
        trainer_.recover(variables_, from, deadline);
        ++recoveries_;
        last_save_step_ = trainer_.step();
        last_save_time_ = std::chrono::steady_clock::now();
        options_.log(who + ": session re-created at step " + std::to_string(trainer_.step()) +
                     (from ? " from checkpoint " + std::to_string(from->second) : std::string()));
        return;
      } catch (const dsgd::error& e) {
        if (!Trainer::recoverable(e.code())) throw;
        if (std::chrono::steady_clock::now() + backoff > deadline)
          throw error(e.code(), who + ": the session was not re-created within the recovery deadline of " +
                                    std::to_string(options_.recovery_timeout.count()) + " s: " + e.what());
      }
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5'000));
    }
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
  std::size_t recoveries_ = 0;
  bool stop_ = false;
  bool closed_ = false;
};

}  // namespace dsgd::train
