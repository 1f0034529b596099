// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The monitored session's deadlines bound (docs/reliability.md): a ps killed and never restarted
// makes every worker of a session with a 5 s recovery deadline fail about 5 s after the kill,
// naming the deadline, though one attempt to re-create the session (connecting, with a 30 s
// startup deadline) would run longer on its own; and a ps never reached at all makes a worker
// fail at its startup deadline, not after the recovery deadline.
#include "fault_support.hpp"

#include <dsgd/train/saver.hpp>

#include <boost/test/unit_test.hpp>

#include <csignal>
#include <filesystem>
#include <string>
#include <thread>

BOOST_AUTO_TEST_SUITE(recovery_deadline_test)

using namespace std::chrono_literals;
using namespace dsgd::test;

BOOST_AUTO_TEST_CASE(a_ps_that_never_comes_back_fails_the_sessions_at_the_recovery_deadline) {
  constexpr double recovery_s = 5;
  const auto dir = std::filesystem::temp_directory_path() / ("dsgd_recovery_deadline_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  counter_cluster c(
      1, 2,
      counter_args("sync", 100000, 10, 30000ms,
                   {"--startup-timeout-ms", "30000", "--session", dir.string(), "--recovery-timeout-s", "5"}));
  c.start_all();
  BOOST_REQUIRE_MESSAGE(c.worker(0).wait_for_output(
                            [](const std::string& out) { return out.find("\nstart ") != std::string::npos; }, 60s),
                        c.transcript());
  std::this_thread::sleep_for(500ms);  // some steps
  c.ps(0).signal(SIGKILL);
  const auto killed = clock_type::now();
  for (int w : {0, 1}) {
    auto status = c.worker(w).wait_exit(60s);
    BOOST_TEST_INFO(c.transcript());
    BOOST_TEST_REQUIRE(exited_with(status, 3), "worker:" << w);
    const double after = std::chrono::duration<double>(c.worker(w).ended_at() - killed).count();
    BOOST_TEST_MESSAGE("worker:" << w << " failed " << after << " s after the kill");
    BOOST_TEST(after < recovery_s + 3, "worker:" << w << " failed " << after << " s after the kill");
    const auto error = line_starting(c.worker(w).output(), "error ");
    BOOST_TEST(error.find("not re-created within the recovery deadline of 5 s") != std::string::npos, error);
    BOOST_TEST(error.find("could not reach ps:0") != std::string::npos, error);
  }
  std::filesystem::remove_all(dir);
}

// A session that never existed cannot be lost: a worker whose ps task never starts (nothing
// listens on its address) fails when its 2 s startup deadline passes, naming the ps task and its
// address, though its session's recovery deadline is 300 s.
BOOST_AUTO_TEST_CASE(a_worker_that_never_reaches_its_ps_fails_at_the_startup_deadline) {
  const auto dir = std::filesystem::temp_directory_path() / ("dsgd_startup_deadline_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  counter_cluster c(
      1, 1,
      counter_args("sync", 100, 10, 30000ms,
                   {"--startup-timeout-ms", "2000", "--session", dir.string(), "--recovery-timeout-s", "300"}));
  const auto started = clock_type::now();
  c.start("worker", 0);
  const auto status = c.worker(0).wait_exit(60s);
  BOOST_TEST_INFO(c.transcript());
  BOOST_TEST_REQUIRE(exited_with(status, 3));
  const double after = std::chrono::duration<double>(c.worker(0).ended_at() - started).count();
  BOOST_TEST_MESSAGE("worker:0 failed " << after << " s after it started");
  BOOST_TEST(after >= 2.0);
  BOOST_TEST(after < 2.0 + 2.0);
  const auto error = line_starting(c.worker(0).output(), "error ");
  const auto address = c.spec().address("ps", 0).to_string();
  BOOST_TEST(error.find("could not reach ps:0 (" + address + ") within 2000 ms") != std::string::npos, error);
  BOOST_TEST(c.worker(0).output().find("session lost") == std::string::npos);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
