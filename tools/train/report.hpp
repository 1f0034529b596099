// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The chief's record of its evaluations: the line each one prints and, with --csv, the line it
// appends to a file (bench/straggler, bench/solo_limit and bench/compare read both).
#pragma once

#include "options.hpp"

#include <dsgd/error.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
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

}  // namespace dsgd_train
