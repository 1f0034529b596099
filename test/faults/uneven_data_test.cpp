// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Uneven data across processes: three workers of a counter_job cluster have 10, 20 and 30
// batches (--pushes). Each calls finish() when its data ends, the chief (the one with the least)
// first, and under every rule the others train on without it, the chief's shutdown waits for
// the last one, the ps exits cleanly, and the counter shows that no gradient was lost:
//   sync: one per global step, and the steps run until the longest worker's data ends (30);
//   async and SSP(2): one per push, 10 + 20 + 30 = 60.
#include "fault_support.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

BOOST_AUTO_TEST_SUITE(uneven_data_test)

using namespace std::chrono_literals;
using namespace dsgd::test;

namespace {

void check_uneven_data_ends_cleanly(const std::string& rule, long expected_counter) {
  counter_cluster c(1, 3, {"--rule", rule, "--step-ms", "5", "--step-timeout-ms", "20000"});
  c.start("ps", 0);
  for (int w = 0; w < 3; ++w) c.start("worker", w, {"--pushes", std::to_string(10 * (w + 1))});
  for (int w = 0; w < 3; ++w) {
    auto status = c.worker(w).wait_exit(120s);
    BOOST_TEST_INFO(c.transcript());
    BOOST_TEST(exited_with(status, 0), "worker:" << w << " did not finish cleanly");
    BOOST_TEST(c.worker(w).output().find("done worker:" + std::to_string(w) + " pushes " +
                                         std::to_string(10 * (w + 1))) != std::string::npos);
  }
  auto ps = c.ps(0).wait_exit(60s);
  BOOST_TEST_INFO(c.transcript());
  BOOST_TEST(exited_with(ps, 0), "ps:0 did not shut down after the last worker finished");
  const auto final = final_counter(c.ps(0).output());
  BOOST_REQUIRE(final.has_value());
  BOOST_TEST(final->value == expected_counter);
  BOOST_TEST(c.ps(0).output().find("having finished") == std::string::npos);  // nobody was left out
}

}  // namespace

BOOST_AUTO_TEST_SUITE(uneven_data_across_processes)

BOOST_AUTO_TEST_CASE(sync_steps_on_with_the_workers_that_still_have_data) {
  check_uneven_data_ends_cleanly("sync", 30);
}

BOOST_AUTO_TEST_CASE(async_applies_every_push_of_every_worker) { check_uneven_data_ends_cleanly("async", 60); }

BOOST_AUTO_TEST_CASE(ssp_releases_the_others_when_a_worker_finishes) { check_uneven_data_ends_cleanly("ssp", 60); }

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
