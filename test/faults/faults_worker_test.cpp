// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Fault tests with real processes on 127.0.0.1: a worker of a running counter_job cluster is
// killed with SIGKILL or stalled with SIGSTOP, and the test checks what the others do under
// each update rule: carry on and complete, or fail with a named error within the step
// deadline, never hang. Deadlines are a few seconds (--step-timeout-ms) so the suite stays fast.
#include "fault_support.hpp"

#include <boost/test/unit_test.hpp>

#include <csignal>
#include <string>
#include <thread>

BOOST_AUTO_TEST_SUITE(faults_worker_test)

using namespace std::chrono_literals;
using namespace dsgd::test;

namespace {

constexpr auto step_timeout = 2000ms;  // every test's --step-timeout-ms unless it says otherwise

// counter_job's arguments with @p backup backup workers.
std::vector<std::string> job_args(const std::string& rule, std::size_t backup, std::size_t steps, int step_ms,
                                  std::chrono::milliseconds deadline = step_timeout) {
  return counter_args(rule, steps, step_ms, deadline, {"--backup", std::to_string(backup)});
}

// Starts ps:0 and worker:0..2; worker:2 (the victim) gets --steps victim_steps.
void start(process_cluster& c, std::size_t victim_steps) {
  c.start("ps", 0);
  c.start("worker", 0);
  c.start("worker", 1);
  c.start("worker", 2, {"--steps", std::to_string(victim_steps)});
}

// Waits until the victim has had @p acks pushes acknowledged: the fault lands mid-run.
void wait_until_running(process_cluster& c, std::size_t acks = 5) {
  BOOST_REQUIRE_MESSAGE(c.worker(2).wait_for_lines("ack ", acks, 60s), "worker:2 did not get "
                                                                           << acks << " pushes acknowledged\n"
                                                                           << c.transcript());
}

// Starts ps:0 and worker:0..2 (start()), then once the victim is running sends it @p signal.
void start_then_signal_victim(process_cluster& c, std::size_t victim_steps, int signal) {
  start(c, victim_steps);
  wait_until_running(c);
  c.worker(2).signal(signal);
}

// Every one of @p tasks exits 0 within @p timeout and printed "done".
void expect_completion(process_cluster& c, std::initializer_list<int> workers, std::chrono::milliseconds timeout) {
  for (int w : workers) {
    auto status = c.worker(w).wait_exit(timeout);
    BOOST_TEST_INFO(c.transcript());
    BOOST_TEST(exited_with(status, 0), "worker:" << w << " did not exit 0 within the deadline");
    BOOST_TEST(count_lines_starting(c.worker(w).output(), "done ") == 1u);
  }
  auto ps = c.ps(0).wait_exit(timeout);
  BOOST_TEST_INFO(c.transcript());
  BOOST_TEST(exited_with(ps, 0), "ps:0 did not shut down within the deadline");
}

// Every one of @p workers fails (exit 3) within @p timeout with "error ERRC" and a message
// containing @p names.
void expect_named_failure(process_cluster& c, std::initializer_list<int> workers, const std::string& errc,
                          const std::string& names, std::chrono::milliseconds timeout) {
  for (int w : workers) {
    auto status = c.worker(w).wait_exit(timeout);
    const auto out = c.worker(w).output();
    const auto error = line_starting(out, "error ");
    BOOST_TEST_INFO(c.transcript());
    BOOST_TEST(exited_with(status, 3), "worker:" << w << " did not fail within the deadline");
    BOOST_TEST(error.rfind("error " + errc + " ", 0) == 0u, "worker:" << w << ": " << error);
    BOOST_TEST(error.find(names) != std::string::npos, "worker:" << w << ": " << error);
    BOOST_TEST(count_lines_starting(out, "done ") == 0u);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(a_killed_worker)

BOOST_AUTO_TEST_CASE(sync_with_one_backup_worker_completes_without_it) {
  counter_cluster c(1, 3, job_args("sync", 1, 60, 10));
  start_then_signal_victim(c, 60, SIGKILL);
  expect_completion(c, {0, 1}, 120s);
  expect_final_counter(c, 60, 60);
  BOOST_TEST(c.ps(0).output().find("shutting down without replica 2 having finished") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(sync_with_one_backup_worker_completes_without_it_after_another_worker_finished) {
  // The dead worker is the backup: once worker:1 has run out of data, the chief's steps need
  // only its own gradient, not one the dead worker would never send.
  counter_cluster c(1, 3, job_args("sync", 1, 60, 10));
  c.start("ps", 0);
  c.start("worker", 0);
  c.start("worker", 1, {"--pushes", "20"});
  c.start("worker", 2);
  wait_until_running(c);
  c.worker(2).signal(SIGKILL);
  expect_completion(c, {0, 1}, 120s);
  expect_final_counter(c, 60, 60);
  BOOST_TEST(count_lines_starting(c.worker(1).output(), "ack ") == 20u);
}

BOOST_AUTO_TEST_CASE(sync_without_backup_fails_naming_it_within_the_step_deadline) {
  counter_cluster c(1, 3, job_args("sync", 0, 100000, 10));
  start_then_signal_victim(c, 100000, SIGKILL);
  const auto killed = clock_type::now();
  // The ps answers the parked pull at step_timeout; the bound leaves room for a loaded machine.
  expect_named_failure(c, {0, 1}, "timed_out", "no gradient yet from worker:2)", step_timeout + 20s);
  for (int w : {0, 1}) {
    const double after = std::chrono::duration<double>(c.worker(w).ended_at() - killed).count();
    BOOST_TEST_MESSAGE("worker:" << w << " failed " << after << " s after the kill (step deadline 2 s)");
  }
}

BOOST_AUTO_TEST_CASE(async_completes_without_it_and_counts_each_acknowledged_push_once) {
  counter_cluster c(1, 3, job_args("async", 0, 100, 10));
  start_then_signal_victim(c, 100, SIGKILL);
  BOOST_REQUIRE(c.worker(2).wait_exit(10s).has_value());
  expect_completion(c, {0, 1}, 120s);
  const auto final = final_counter(c.ps(0).output());
  const auto victim = c.worker(2).output();
  const auto acked = 200 + count_lines_starting(victim, "ack ");
  const auto in_flight = count_lines_starting(victim, "push ") - count_lines_starting(victim, "ack ");
  BOOST_TEST_INFO(c.transcript());
  BOOST_REQUIRE(final.has_value());
  BOOST_TEST(final->value == static_cast<long long>(final->step));
  // An acknowledged push is applied exactly once; the one in flight at the kill may or may not be.
  BOOST_TEST(final->value >= static_cast<long long>(acked));
  BOOST_TEST(final->value <= static_cast<long long>(acked + in_flight));
}

BOOST_AUTO_TEST_SUITE_END()

// SIGSTOP stalls the victim for stall_time, then SIGCONT resumes it. The victim has fewer steps
// than the others (async: pushes; sync: its last global step), so that once resumed it ends
// before them: the stall is the fault, not the chief's shutdown deadline.
BOOST_AUTO_TEST_SUITE(a_stalled_worker)

constexpr auto stall_time = 3000ms;  // longer than the 2 s step deadline

// Runs ps:0 and worker:0..2 on @p args, the victim with --steps victim_steps, and stalls the
// victim for @p stall once it is running: every worker then completes, and ps:0's counter ends
// at @p value after @p step global steps.
void expect_completion_after_a_stall(const std::vector<std::string>& args, std::size_t victim_steps,
                                     std::chrono::milliseconds stall, long long value, unsigned long long step) {
  counter_cluster c(1, 3, args);
  start_then_signal_victim(c, victim_steps, SIGSTOP);
  std::this_thread::sleep_for(stall);  // the fault itself: a stall of this length
  c.worker(2).signal(SIGCONT);
  expect_completion(c, {0, 1, 2}, 120s);
  expect_final_counter(c, value, step);
}

BOOST_AUTO_TEST_CASE(async_completes_and_every_push_counts_once) {
  expect_completion_after_a_stall(job_args("async", 0, 400, 10), 100, stall_time, 400 + 400 + 100, 900);
}

BOOST_AUTO_TEST_CASE(sync_with_one_backup_worker_completes_and_drops_its_late_gradients) {
  expect_completion_after_a_stall(job_args("sync", 1, 400, 10), 100, stall_time, 400, 400);
}

BOOST_AUTO_TEST_CASE(sync_without_backup_fails_naming_it_when_the_stall_exceeds_the_deadline) {
  counter_cluster c(1, 3, job_args("sync", 0, 100000, 10));
  start_then_signal_victim(c, 100000, SIGSTOP);
  expect_named_failure(c, {0, 1}, "timed_out", "no gradient yet from worker:2)", step_timeout + 20s);
  c.worker(2).signal(SIGCONT);
}

BOOST_AUTO_TEST_CASE(sync_without_backup_completes_when_the_stall_is_within_the_deadline) {
  // A 1 s stall against a 5 s step deadline: the others wait, then every step completes.
  expect_completion_after_a_stall(job_args("sync", 0, 100, 10, 5000ms), 100, 1000ms, 100, 100);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
