// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// client::residuals: a worker's error-feedback residuals (compress::top_k, two_bit) as part of
/// a checkpoint. A ps client hands one out (basic_ps_client::residuals(plan)); the worker and the
/// trainer pass it on, so the monitored session saves and restores a worker's own state beside
/// the ps tasks' data files.
#pragma once

#include <dsgd/client/detail/push_encoder.hpp>
#include <dsgd/client/detail/residual_file.hpp>
#include <dsgd/placement/plan.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

namespace dsgd::client {

/// A view of one worker's residuals, per shard of its plan: it refers to the client's encoder
/// and to the plan, and is used at once (it must not outlive the client or the plan).
/// The file of checkpoint `step` is `ckpt-<step>.<task>.residual` (detail/residual_file.hpp).
class residuals {
 public:
  residuals(detail::push_encoder& encoder, const placement::plan& plan, std::string task)
      : encoder_(encoder), plan_(plan), task_(std::move(task)) {}

  /// @returns whether some variable is pushed with a codec that keeps a residual: only then is
  /// there worker state to checkpoint.
  bool kept() const noexcept { return encoder_.keeps_residuals(); }

  /// Writes the residuals as this task's file of checkpoint @p step in @p dir, atomically.
  /// @returns false, writing nothing, when no variable's codec keeps a residual
  bool save(const std::filesystem::path& dir, std::uint64_t step) const {
    if (!kept()) return false;
    encoder_.save_file(detail::residual_path(dir, step, task_));
    return true;
  }

  /// Takes back what save() wrote for @p step; @returns false (residuals unchanged) without such
  /// a file, or with one saved under another placement (another shard count or size).
  /// @throws dsgd::error(errc::checkpoint_corrupt) naming a damaged file, or one of another codec
  bool restore(const std::filesystem::path& dir, std::uint64_t step) {
    return encoder_.restore_file(plan_, detail::residual_path(dir, step, task_));
  }

 private:
  detail::push_encoder& encoder_;
  const placement::plan& plan_;
  std::string task_;
};

}  // namespace dsgd::client
