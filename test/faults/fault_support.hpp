// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support for the fault tests: what counter_job prints (see counter_job.cpp), read back,
// and counter_job clusters started and checked as most of the tests do.
#pragma once

#include "process_cluster.hpp"

#include <dsgd/train/saver.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <utility>
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

/// counter_job's arguments for a run of @p rule: at most @p steps steps of at least @p step_ms ms
/// each, a step deadline of @p step_timeout, then @p more.
inline std::vector<std::string> counter_args(const std::string& rule, std::size_t steps, int step_ms,
                                             std::chrono::milliseconds step_timeout,
                                             const std::vector<std::string>& more = {}) {
  std::vector<std::string> args{"--rule", rule, "--steps", std::to_string(steps)};
  args.insert(args.end(),
              {"--step-ms", std::to_string(step_ms), "--step-timeout-ms", std::to_string(step_timeout.count())});
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

/// A cluster of counter_job with @p ps ps tasks and @p workers workers, every task given @p args
/// and quiet_threads().
class counter_cluster : public process_cluster {
 public:
  counter_cluster(std::size_t ps, std::size_t workers, std::vector<std::string> args)
      : process_cluster(counter_job_path, ps, workers, std::move(args), quiet_threads()) {}
};

/// Starts every task of @p c, then waits until worker:0 (the chief) has had @p acks pushes
/// acknowledged: a fault the test makes next lands mid-run.
inline void start_all_until_acks(process_cluster& c, std::size_t acks = 5) {
  c.start_all();
  BOOST_REQUIRE_MESSAGE(c.worker(0).wait_for_lines("ack ", acks, std::chrono::seconds(60)), c.transcript());
}

/// Waits up to @p timeout until the session in @p dir has a checkpoint of step @p step or later
/// (or, if @p until_exit, until @p c's worker:0 exited) and requires it.
inline void wait_for_checkpoint(process_cluster& c, const std::filesystem::path& dir, std::size_t step,
                                std::chrono::seconds timeout = std::chrono::seconds(60), bool until_exit = false) {
  train::saver saver(dir);
  const auto give_up = clock_type::now() + timeout;
  while (saver.latest().value_or(0) < step && clock_type::now() < give_up && !(until_exit && c.worker(0).exited()))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  BOOST_REQUIRE_MESSAGE(saver.latest().value_or(0) >= step, c.transcript());
}

/// Checks ps:0's final line: its counter 0 at @p value after @p step global steps.
inline void expect_final_counter(process_cluster& c, long long value, unsigned long long step) {
  const auto final = final_counter(c.ps(0).output());
  BOOST_TEST_INFO(c.transcript());
  BOOST_REQUIRE(final.has_value());
  BOOST_TEST(final->value == value);
  BOOST_TEST(final->step == step);
}

}  // namespace dsgd::test
