// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The exactly-once counter under repeated worker crashes: 1 ps and 4 async workers, non-chief
// workers killed with SIGKILL at random moments (mid-step, or just as a push goes out) and
// started again with the same TF_CONFIG. The new process registers as the same replica, learns
// from the ps how many of its task's pushes arrived (trainer::pushes_received(): a push in flight
// at the kill arrived or not, and the ps closed the dead process's connection before counting)
// and resumes there. So every task's pushes arrive exactly once: the counter equals the pushes
// the tasks were asked for, exactly, however many were in flight at the kills.
#include "fault_support.hpp"

#include <boost/test/unit_test.hpp>

#include <csignal>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>

BOOST_AUTO_TEST_SUITE(faults_exactly_once_test)

using namespace std::chrono_literals;
using namespace dsgd::test;

BOOST_AUTO_TEST_SUITE(exactly_once_counter)

BOOST_AUTO_TEST_CASE(random_worker_kills_and_restarts_lose_no_acknowledged_push_and_duplicate_none) {
  constexpr int workers = 4;
  constexpr int kills = 20;
  constexpr std::size_t steps = 300;
  // The step deadline bounds only the chief's wait for the others at the end (async never waits
  // for a step); it must cover a restarted worker's remaining pushes.
  counter_cluster c(1, workers, counter_args("async", steps, 5, 30000ms));
  // The chief runs longer than the kills take, so that it is there to shut the cluster down.
  c.start("ps", 0);
  c.start("worker", 0, {"--steps", std::to_string(4 * steps)});
  for (int w = 1; w < workers; ++w) c.start("worker", w);

  // DSGD_FAULTS_SEED=N replays a run (the seed is printed with --log_level=message).
  const char* fixed = std::getenv("DSGD_FAULTS_SEED");
  const unsigned seed = fixed != nullptr ? static_cast<unsigned>(std::stoul(fixed)) : std::random_device{}();
  BOOST_TEST_MESSAGE("seed " << seed);
  std::mt19937 rng(seed);
  std::size_t in_flight = 0;  // pushes sent but not acknowledged by killed processes
  int done_kills = 0;
  for (int attempt = 0; done_kills < kills && attempt < 4 * kills; ++attempt) {
    const int victim = std::uniform_int_distribution<int>(1, workers - 1)(rng);
    auto& p = c.worker(victim);
    const std::size_t after =
        count_lines_starting(p.output(), "ack ") + std::uniform_int_distribution<std::size_t>(1, 20)(rng);
    if (!p.wait_for_lines("ack ", after, 60s)) continue;  // it finished (or failed) first
    if (count_lines_starting(p.output(), "done ") > 0) continue;
    if (attempt % 2 == 0) {
      // Somewhere in the next step (5 ms of compute, then the push and its reply).
      std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 6000)(rng)));
    } else {
      // As the next push goes out ("push K" is printed just before it is sent): mid-request.
      const std::size_t pushes = count_lines_starting(p.output(), "push ");
      if (!p.wait_for_lines("push ", pushes + 1, 60s)) continue;
      std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 300)(rng)));
    }
    p.signal(SIGKILL);
    auto status = p.wait_exit(10s);
    BOOST_REQUIRE_MESSAGE(status.has_value(), "worker:" << victim << " did not die\n" << c.transcript());
    if (!WIFSIGNALED(*status)) continue;  // it had already exited on its own
    const auto out = p.output();
    in_flight += count_lines_starting(out, "push ") - count_lines_starting(out, "ack ");
    ++done_kills;
    c.start("worker", victim);
  }
  BOOST_TEST(done_kills == kills);

  for (int w = 0; w < workers; ++w) {
    BOOST_TEST_INFO(c.transcript());
    BOOST_TEST(exited_with(c.worker(w).wait_exit(120s), 0), "worker:" << w << " did not complete");
  }
  BOOST_TEST_INFO(c.transcript());
  BOOST_REQUIRE(exited_with(c.ps(0).wait_exit(60s), 0));
  const auto final = final_counter(c.ps(0).output());
  BOOST_REQUIRE(final.has_value());
  const auto acked = static_cast<long long>(count_lines_starting(c.all_worker_output(), "ack "));
  BOOST_TEST_MESSAGE("counter " << final->value << ", acknowledged pushes " << acked << ", in flight at the " << kills
                                << " kills " << in_flight << " (" << final->value - acked << " of them applied)");
  BOOST_TEST(final->value == static_cast<long long>(final->step));
  BOOST_TEST(final->value >= acked, "lost acknowledged pushes");
  BOOST_TEST(final->value <= acked + static_cast<long long>(in_flight), "duplicated pushes");
  // Exactly once: each task's pushes, no more and no fewer (the chief makes 4 x steps).
  BOOST_TEST(final->value == static_cast<long long>(4 * steps + (workers - 1) * steps));
  BOOST_TEST(count_lines_starting(c.all_worker_output(), "resume ") > 0u, "no restarted worker resumed");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
