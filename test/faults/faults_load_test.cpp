// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Load test: 32 worker processes and 2 ps processes on this machine complete a short sync job
// (counter_job: 2 counters, one per ps, 5 global steps), each process with one OpenMP thread
// that sleeps between kernels. Checks that every task ends in bounded time, that every step was
// applied exactly once, and the ps memory (VmHWM, read by each ps from /proc/self/status).
#include "fault_support.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

BOOST_AUTO_TEST_SUITE(faults_load_test)

using namespace std::chrono_literals;
using namespace dsgd::test;

BOOST_AUTO_TEST_SUITE(load)

BOOST_AUTO_TEST_CASE(thirty_two_workers_and_two_ps_complete_a_short_sync_job) {
  constexpr int workers = 32;
  constexpr int steps = 5;
  // Peak resident memory one ps may reach: its shards are 4 bytes, the rest is the process,
  // 32 connections and their buffers. An AddressSanitizer build (scripts/sanitize.sh asan)
  // adds its shadow memory and quarantine of freed blocks to every process: 76 MB measured.
#if defined(__SANITIZE_ADDRESS__)
  constexpr long long max_ps_hwm_kb = 4 * 64 * 1024;
#else
  constexpr long long max_ps_hwm_kb = 64 * 1024;
#endif
  counter_cluster c(2, workers,
                    {"--rule", "sync", "--steps", std::to_string(steps), "--vars", "2", "--step-timeout-ms", "60000",
                     "--ready-timeout-ms", "120000", "--startup-timeout-ms", "120000"});
  const auto start = clock_type::now();
  c.start_all();
  for (int w = 0; w < workers; ++w) {
    BOOST_TEST_INFO(c.transcript());
    BOOST_TEST(exited_with(c.worker(w).wait_exit(240s), 0), "worker:" << w << " did not complete");
  }
  for (int p = 0; p < 2; ++p) {
    BOOST_TEST_INFO(c.transcript());
    BOOST_REQUIRE(exited_with(c.ps(p).wait_exit(60s), 0));
  }
  const double took = std::chrono::duration<double>(clock_type::now() - start).count();
  BOOST_TEST_MESSAGE("34 processes, " << steps << " sync steps: " << took << " s");
  for (int p = 0; p < 2; ++p) {
    const auto out = c.ps(p).output();
    const auto final = final_counter(out, static_cast<std::size_t>(p));  // round robin: counter p on ps:p
    BOOST_REQUIRE_MESSAGE(final.has_value(), out);
    BOOST_TEST(final->value == steps);
    BOOST_TEST(final->step == static_cast<unsigned>(steps));
    const long long rss = field_after(out, "ps-memory", "vmrss_kb");
    const long long hwm = field_after(out, "ps-memory", "vmhwm_kb");
    BOOST_TEST_MESSAGE("ps:" << p << " VmRSS " << rss << " kB, VmHWM " << hwm << " kB");
    BOOST_TEST(hwm > 0);
    BOOST_TEST(hwm <= max_ps_hwm_kb);
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
