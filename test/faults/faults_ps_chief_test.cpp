// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Fault tests with real processes on 127.0.0.1: a ps task or the chief of a running
// counter_job cluster is killed with SIGKILL. The others must stop with a named error within
// a deadline, never hang; under dsgd-launch no process may outlive the run.
#include "fault_support.hpp"

#include <boost/test/unit_test.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>

BOOST_AUTO_TEST_SUITE(faults_ps_chief_test)

using namespace std::chrono_literals;
using namespace dsgd::test;

namespace {

const std::string launch_path = DSGD_LAUNCH_PATH;

// counter_job's arguments with @p vars counters.
std::vector<std::string> job_args(const std::string& rule, std::size_t steps, std::size_t vars = 1) {
  return counter_args(rule, steps, 10, 2000ms, {"--vars", std::to_string(vars)});
}

void expect_named_failure(process_cluster& c, std::initializer_list<int> workers, const std::string& errc,
                          const std::string& names, std::chrono::milliseconds timeout) {
  for (int w : workers) {
    auto status = c.worker(w).wait_exit(timeout);
    const auto error = line_starting(c.worker(w).output(), "error ");
    BOOST_TEST_INFO(c.transcript());
    BOOST_TEST(exited_with(status, 3), "worker:" << w << " did not fail within the deadline");
    BOOST_TEST(error.rfind("error " + errc + " ", 0) == 0u, "worker:" << w << ": " << error);
    BOOST_TEST(error.find(names) != std::string::npos, "worker:" << w << ": " << error);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(a_killed_ps)

BOOST_AUTO_TEST_CASE(every_worker_fails_with_peer_lost_naming_it_within_seconds) {
  // Two counters, one on each ps: every step talks to both.
  counter_cluster c(2, 3, job_args("sync", 100000, 2));
  start_all_until_acks(c);
  c.ps(1).signal(SIGKILL);
  const auto killed = clock_type::now();
  // The connection breaks at once; a worker blocked in a request or starting its next one sees it.
  expect_named_failure(c, {0, 1, 2}, "peer_lost", "connection to ps:1 lost", 10s);
  for (int w : {0, 1, 2})
    BOOST_TEST_MESSAGE("worker:" << w << " failed "
                                 << std::chrono::duration<double>(c.worker(w).ended_at() - killed).count()
                                 << " s after ps:1 was killed");
}

// Not implemented yet: a ps that restarts at its address with its last values (from a
// checkpoint) and workers that reconnect and resume. Today a worker fails with peer_lost as
// soon as its connection breaks (test above) and never reconnects. Enable once ps restart and
// client reconnection exist; the test then checks that the job completes across the restart.
// kill -9 of the ps, and a new ps process on its address: with --recover each worker reconnects
// (trainer::recover), the chief re-initialises the new ps from its last values, and both finish.
BOOST_AUTO_TEST_CASE(a_restarted_ps_is_reconnected_and_the_job_completes) {
  auto args = job_args("async", 200);
  args.push_back("--recover");
  counter_cluster c(1, 2, args);
  start_all_until_acks(c);
  c.ps(0).signal(SIGKILL);
  BOOST_REQUIRE(c.ps(0).wait_exit(10s).has_value());
  c.start("ps", 0);
  for (int w : {0, 1}) {
    auto status = c.worker(w).wait_exit(120s);
    BOOST_TEST_INFO(c.transcript());
    BOOST_TEST(exited_with(status, 0));
  }
  BOOST_TEST(exited_with(c.ps(0).wait_exit(60s), 0));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(a_killed_chief)

BOOST_AUTO_TEST_CASE(sync_workers_fail_naming_it_within_the_step_deadline) {
  counter_cluster c(1, 3, job_args("sync", 100000));
  start_all_until_acks(c);
  c.worker(0).signal(SIGKILL);
  expect_named_failure(c, {1, 2}, "timed_out", "no gradient yet from worker:0)", 2000ms + 20s);
}

// Only the chief can shut the cluster down: a ps whose chief died and was not restarted stops
// on its own, with a named error, once the chief has been gone for ps_options::chief_timeout.
BOOST_AUTO_TEST_CASE(the_ps_ends_on_its_own_when_the_chief_is_gone) {
  auto args = job_args("async", 200);
  // Well after the others finish (their 200 pushes take 2 s when idle, several under load).
  args.insert(args.end(), {"--chief-timeout-ms", "15000"});
  counter_cluster c(1, 3, args);
  start_all_until_acks(c);
  c.worker(0).signal(SIGKILL);
  for (int w : {1, 2}) BOOST_TEST(exited_with(c.worker(w).wait_exit(60s), 0));
  auto status = c.ps(0).wait_exit(60s);
  BOOST_TEST_INFO(c.transcript());
  BOOST_TEST(status.has_value(), "ps:0 still serving 60 s after its chief died");
  BOOST_TEST(c.transcript().find("the chief has been gone for 15000 ms") != std::string::npos);
}

// The chief of a sync job in monitored sessions (checkpoints every 5 steps) is killed and
// started again: it restores the latest checkpoint over the shards the ps kept, which aborts
// the other workers' waiting requests; they re-create their sessions, and everyone finishes at
// step 200 with the counter at exactly 200 (each sync step adds 1, the restore rewinds it).
BOOST_AUTO_TEST_CASE(a_restarted_chief_resumes_from_its_checkpoint_and_the_others_follow) {
  const auto dir = std::filesystem::temp_directory_path() / ("dsgd_chief_restart_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  counter_cluster c(1, 3, counter_args("sync", 200, 10, 30000ms, {"--session", dir.string()}));
  c.start_all();
  wait_for_checkpoint(c, dir, 10);
  c.worker(0).signal(SIGKILL);
  BOOST_REQUIRE(c.worker(0).wait_exit(10s).has_value());
  c.start("worker", 0);
  for (int w : {0, 1, 2}) {
    auto status = c.worker(w).wait_exit(120s);
    BOOST_TEST_INFO(c.transcript());
    BOOST_TEST(exited_with(status, 0), "worker:" << w << " did not finish");
  }
  BOOST_TEST(exited_with(c.ps(0).wait_exit(60s), 0));
  BOOST_TEST_INFO(c.transcript());
  BOOST_TEST(c.worker(0).output().find(" restored ") != std::string::npos);
  for (int w : {1, 2}) BOOST_TEST(c.worker(w).output().find("recoveries 0") == std::string::npos);
  expect_final_counter(c, 200, 200);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(under_dsgd_launch_every_task_is_stopped_and_none_outlives_the_run) {
  // dsgd-launch runs the cluster; the test kills the chief by the pid the launcher printed.
  std::vector<std::string> args{launch_path, "--ps", "1",  "--workers",     "3", "--kill-grace", "2",
                                "--timeout", "300",  "--", counter_job_path};
  for (auto& a : job_args("async", 100000)) args.push_back(a);
  child_process launcher("dsgd-launch", args, quiet_threads());
  static const std::regex started(R"(\[launcher\] (\w+:\d+) \S+ pid (\d+))");
  BOOST_REQUIRE_MESSAGE(
      launcher.wait_for_output(
          [](const std::string& out) { return out.find("[worker:0] ack 5 ") != std::string::npos; }, 60s),
      launcher.output());
  std::map<std::string, pid_t> pids;
  for (const auto& line : lines_of(launcher.output())) {
    std::smatch m;
    if (std::regex_search(line, m, started)) pids[m[1]] = static_cast<pid_t>(std::stoi(m[2]));
  }
  BOOST_REQUIRE_EQUAL(pids.size(), 4u);
  ::kill(pids.at("worker:0"), SIGKILL);
  // The launcher stops every other task (SIGTERM, SIGKILL after --kill-grace 2 s) and exits
  // 128 + 9; it reaps every task before it exits.
  auto status = launcher.wait_exit(30s);
  BOOST_TEST_INFO(launcher.output());
  BOOST_TEST(exited_with(status, 137));
  BOOST_TEST(launcher.output().find("[launcher] worker:0 killed by signal 9; stopping the cluster") !=
             std::string::npos);
  for (const auto& [task, pid] : pids) BOOST_TEST(!alive(pid), task << " (pid " << pid << ") outlived the launcher");
  BOOST_TEST_MESSAGE("the launcher exited " << launcher.seconds_run() << " s after it started");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
