// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// progress_logger: plain progress lines ("step 200 loss 0.4123 steps/s 51.2 examples/s 3276.8")
/// every N steps, and optionally the same figures as TensorBoard scalars.
#pragma once

#include <dsgd/train/summary_writer.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <ostream>
#include <string>

namespace dsgd::train {

/// The figures of one progress line.
struct progress_line {
  std::uint64_t step = 0;
  double loss = 0;  ///< mean loss of the steps since the previous line
  double steps_per_second = 0;
  double examples_per_second = 0;  ///< steps_per_second times the batch size

  /// @returns "step 200 loss 0.412300 steps/s 51.20 examples/s 3276.80".
  std::string to_string() const {
    char buf[160];
    std::snprintf(buf, sizeof buf, "step %llu loss %.6f steps/s %.2f examples/s %.2f",
                  static_cast<unsigned long long>(step), loss, steps_per_second, examples_per_second);
    return buf;
  }
};

/// Prints a progress_line every `every` steps to a stream, with rates measured over the steps
/// since the previous line. With a summary_writer attached, also records the scalars "loss",
/// "global_step/sec" and "examples/sec" (TensorFlow's names) at the same steps.
class progress_logger {
 public:
  using clock = std::chrono::steady_clock;

  /// @param out where lines go (kept by reference)
  /// @param batch_size examples per step, for examples/s
  /// @param every steps between lines (at least 1)
  progress_logger(std::ostream& out, std::size_t batch_size, std::uint64_t every = 100,
                  summary_writer* summaries = nullptr)
      : out_(&out), batch_size_(batch_size), every_(every == 0 ? 1 : every), summaries_(summaries) {}

  /// Records the loss of @p step, finished at @p now; @returns the line if one was printed.
  /// The first call only starts the clock, so the first line covers whole steps.
  std::optional<progress_line> step(std::uint64_t step, double loss, clock::time_point now = clock::now()) {
    if (!started_) {
      started_ = true;
      last_time_ = now;
      last_step_ = step;
      return std::nullopt;
    }
    loss_sum_ += loss;
    ++losses_;
    if (step < last_step_ + every_) return std::nullopt;
    double seconds = std::chrono::duration<double>(now - last_time_).count();
    double steps = static_cast<double>(step - last_step_);
    progress_line line{step, loss_sum_ / static_cast<double>(losses_), seconds > 0 ? steps / seconds : 0.0, 0.0};
    line.examples_per_second = line.steps_per_second * static_cast<double>(batch_size_);
    *out_ << line.to_string() << '\n' << std::flush;
    if (summaries_) {
      scalar_value values[] = {{"loss", static_cast<float>(line.loss)},
                               {"global_step/sec", static_cast<float>(line.steps_per_second)},
                               {"examples/sec", static_cast<float>(line.examples_per_second)}};
      summaries_->scalars(static_cast<std::int64_t>(step), values);
    }
    last_time_ = now;
    last_step_ = step;
    loss_sum_ = 0;
    losses_ = 0;
    return line;
  }

 private:
  std::ostream* out_;
  std::size_t batch_size_;
  std::uint64_t every_;
  summary_writer* summaries_;
  bool started_ = false;
  clock::time_point last_time_{};
  std::uint64_t last_step_ = 0;
  double loss_sum_ = 0;
  std::uint64_t losses_ = 0;
};

}  // namespace dsgd::train
