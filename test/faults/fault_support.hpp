// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support for the fault tests: what counter_job prints (see counter_job.cpp), read back.
#pragma once

#include "process_cluster.hpp"

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace dsgd::test {

/// The path of counter_job, set by CMake.
inline const std::string counter_job_path = DSGD_COUNTER_JOB_PATH;

/// Every task gets one OpenMP thread that sleeps between kernels: many tasks share few cores.
inline std::vector<std::string> quiet_threads() {
  return {"OMP_NUM_THREADS=1", "OMP_WAIT_POLICY=passive", "OPENBLAS_NUM_THREADS=1",
          "DSGD_CLUSTER_TOKEN=faults-test-token"};
}

/// A ps task's "ps-final TASK var V value X step S" line, read back.
struct ps_final {
  long long value = -1;
  unsigned long long step = 0;
};

/// The final value of counter @p var printed by the ps in @p output, if it printed one.
inline std::optional<ps_final> final_counter(const std::string& output, std::size_t var = 0) {
  for (const auto& l : lines_of(output)) {
    if (l.rfind("ps-final ", 0) != 0) continue;
    auto at = l.find(" var " + std::to_string(var) + " value ");
    if (at == std::string::npos) continue;
    auto rest = l.substr(at + 5 + std::to_string(var).size() + 7);
    ps_final f;
    f.value = std::atoll(rest.c_str());
    auto step = rest.find(" step ");
    if (step == std::string::npos) return std::nullopt;
    f.step = std::strtoull(rest.c_str() + step + 6, nullptr, 10);
    return f;
  }
  return std::nullopt;
}

/// A number printed after @p key in the line starting with @p prefix ("vmhwm_kb" in
/// "ps-memory ps:0 vmrss_kb 1 vmhwm_kb 2"); -1 when absent.
inline long long field_after(const std::string& output, const std::string& prefix, const std::string& key) {
  auto l = line_starting(output, prefix);
  auto at = l.find(" " + key + " ");
  return at == std::string::npos ? -1 : std::atoll(l.c_str() + at + key.size() + 2);
}

/// Whether @p status is exit status @p code.
inline bool exited_with(const std::optional<int>& status, int code) {
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == code;
}

}  // namespace dsgd::test
