// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Failures the ps knows reach the chief (docs/reliability.md): a worker started with a wrong
// cluster token is refused at authentication by the ps, which then fails the sync steps that
// cannot complete without it at once, naming it, instead of letting the chief wait out its
// step deadline (60 s here) for a generic missing gradient; a worker that departed (killed) is
// named as departed in the step deadline's error.
#include "fault_support.hpp"

#include <boost/test/unit_test.hpp>

#include <csignal>
#include <string>

BOOST_AUTO_TEST_SUITE(refused_replica_test)

using namespace std::chrono_literals;
using namespace dsgd::test;

BOOST_AUTO_TEST_CASE(a_worker_with_a_wrong_token_is_named_in_the_chiefs_error_within_seconds) {
  counter_cluster c(1, 2, counter_args("sync", 100000, 10, 60000ms));
  c.start("ps", 0);
  c.start("worker", 0);
  c.start("worker", 1, {"--token", "not-the-cluster-token"});
  // Far below the 60 s step deadline the chief would otherwise wait out.
  auto status = c.worker(0).wait_exit(30s);
  BOOST_TEST_INFO(c.transcript());
  BOOST_TEST_REQUIRE(exited_with(status, 3), "the chief did not fail within 30 s");
  const auto error = line_starting(c.worker(0).output(), "error ");
  BOOST_TEST(error.rfind("error handshake_failed ", 0) == 0u, error);
  BOOST_TEST(error.find("worker:1 (replica 1) was refused at authentication") != std::string::npos, error);
  BOOST_TEST(error.find("wrong cluster token") != std::string::npos, error);
  BOOST_TEST(c.ps(0).output().find("ps:0: worker:1 (replica 1) was refused at authentication") != std::string::npos);
  BOOST_TEST(exited_with(c.worker(1).wait_exit(30s), 3));
  BOOST_TEST_MESSAGE("the chief failed " << c.worker(0).seconds_run() << " s after it started");
}

BOOST_AUTO_TEST_CASE(a_departed_worker_is_named_as_departed_in_the_step_deadlines_error) {
  counter_cluster c(1, 3, counter_args("sync", 100000, 10, 2000ms));
  start_all_until_acks(c);
  c.worker(2).signal(SIGKILL);
  for (int w : {0, 1}) {
    auto status = c.worker(w).wait_exit(30s);
    const auto error = line_starting(c.worker(w).output(), "error ");
    BOOST_TEST_INFO(c.transcript());
    BOOST_TEST(exited_with(status, 3), "worker:" << w);
    BOOST_TEST(error.find("no gradient yet from worker:2)") != std::string::npos, error);
    BOOST_TEST(error.find("; worker:2 (replica 2) departed ") != std::string::npos, error);
    BOOST_TEST(error.find("its connection closed before it finished") != std::string::npos, error);
  }
}

BOOST_AUTO_TEST_SUITE_END()
