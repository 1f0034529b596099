// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The one default logger: every options struct with a `log` member falls back to it.
#pragma once

#include <cstdio>
#include <functional>
#include <string_view>

namespace dsgd {

/// Where a task reports events, one line per call (no trailing newline).
using log_function = std::function<void(std::string_view)>;

namespace detail {

/// Writes @p line and a newline to stderr in one call, so lines of tasks sharing a terminal
/// do not interleave mid-line.
inline void log_to_stderr(std::string_view line) {
  std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
}

/// @returns @p log, or the stderr logger when it is empty.
inline log_function or_stderr(log_function log) {
  if (!log) return log_function(&log_to_stderr);
  return log;
}

}  // namespace detail
}  // namespace dsgd
