// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The hooks of a train::monitored_session (TensorFlow's SessionRunHooks): what a hook sees
/// after each step (run_values), the hook interface, and the stock hooks: stop at a step,
/// progress logging, a NaN guard, a final evaluation, and TensorBoard summaries.
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/tensor/tensor.hpp>
#include <dsgd/tensor/view.hpp>
#include <dsgd/train/progress.hpp>
#include <dsgd/train/summary_writer.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dsgd::train {

/// What a hook sees after each step: the step, the loss, and the variables' names, values and
/// the gradients that were pushed, either as tensors (a session of tensors) or as views (a
/// session of a model's own buffers). Hooks read them through for_each_value() and
/// for_each_gradient(), which serve both.
template <Device D>
struct run_values {
  std::uint64_t step = 0;                             ///< the step of the values now held
  float loss = 0;                                     ///< the loss the step computed
  const std::vector<tensor<D>>* variables = nullptr;  ///< values after the step (tensors)
  const std::vector<tensor<D>>* gradients = nullptr;  ///< the gradients that were pushed (tensors)
  const std::vector<std::string>* names = nullptr;    ///< the tensors' names
  variable_views views{};  ///< a session of views: names, values after the step, gradients pushed

  /// @returns how many variables the session has.
  std::size_t size() const noexcept { return variables ? variables->size() : views.size(); }
  /// @returns the name of variable @p i.
  std::string name(std::size_t i) const {
    if (!variables) return views[i].name;
    return names && i < names->size() ? (*names)[i] : "var" + std::to_string(i);
  }
  /// Calls @p f(i, values) for every variable i with its values in host memory (copied there
  /// from a device; read in place on the host).
  template <class F>
  void for_each_value(F&& f) const {
    each(
        variables, [&](std::size_t i) { return std::span<const float>(views[i].values); }, f);
  }
  /// Calls @p f(i, gradients) for every variable i with the gradients it pushed, in host memory.
  template <class F>
  void for_each_gradient(F&& f) const {
    each(
        gradients, [&](std::size_t i) { return views[i].gradients; }, f);
  }

 private:
  template <class Of, class F>
  void each(const std::vector<tensor<D>>* tensors, Of of_view, F& f) const {
    if (!tensors) {
      for (std::size_t i = 0; i < views.size(); ++i) f(i, of_view(i));
      return;
    }
    for (std::size_t i = 0; i < tensors->size(); ++i) {
      const auto& t = (*tensors)[i];
      if constexpr (D::is_host) {
        f(i, std::span<const float>(t.data(), t.size()));
      } else {
        const auto host = t.to_host();
        f(i, std::span<const float>(host));
      }
    }
  }
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
    v.for_each_gradient([&](std::size_t i, std::span<const float> g) { check(g, "gradient of", i, v); });
    v.for_each_value([&](std::size_t i, std::span<const float> x) { check(x, "variable", i, v); });
    return false;
  }

 private:
  static void check(std::span<const float> values, const char* what, std::size_t i, const run_values<D>& v) {
    for (std::size_t j = 0; j < values.size(); ++j)
      if (!std::isfinite(values[j]))
        throw error(errc::invalid_argument, "step " + std::to_string(v.step) + ": " + what + " " + v.name(i) +
                                                " holds " + std::to_string(values[j]) + " at element " +
                                                std::to_string(j));
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
/// under its name. The variables are read (copied to the host off it) only at those steps, so
/// the hook costs nothing on the others.
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
    v.for_each_value([&](std::size_t i, std::span<const float> x) { writer_.histogram(v.name(i), x, step); });
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

}  // namespace dsgd::train
