// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// dsgd::detail::retry_until: attempts with exponential backoff up to a deadline, the one loop
/// behind a worker's connecting to its ps tasks and its wait for one session on all of them.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

namespace dsgd::detail {

/// Calls @p attempt until it returns true, sleeping @p backoff between calls (doubling up to
/// @p max_backoff, never past @p deadline). @returns false once an attempt made at or after
/// @p deadline still failed: the deadline is the true bound, plus that last attempt's own time.
template <class Attempt>
bool retry_until(std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds backoff,
                 std::chrono::milliseconds max_backoff, Attempt attempt) {
  while (!attempt()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(backoff, deadline - now));
    backoff = std::min(backoff * 2, max_backoff);
  }
  return true;
}

}  // namespace dsgd::detail
