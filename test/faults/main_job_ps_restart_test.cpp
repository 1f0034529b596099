// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The main job (dsgd-train) as real processes on 127.0.0.1, each with its own
// TF_CONFIG, checkpointing into a --logdir: ps:0 is killed with SIGKILL mid-run and started
// again with the same role. Every worker re-creates its session by itself, the chief has both
// ps tasks restore the last checkpoint written before the kill, and the job completes at its
// accuracy target. A second run over the same --logdir then restores the final checkpoint.
#include "process_cluster.hpp"

#include <dsgd/train/saver.hpp>

#include <boost/test/unit_test.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <thread>

BOOST_AUTO_TEST_SUITE(main_job_ps_restart_test)

using namespace std::chrono_literals;
using dsgd::test::process_cluster;

namespace {

const std::string main_job_path = DSGD_MAIN_JOB_PATH;

// Every task one OpenMP thread that sleeps between kernels: four processes share few cores.
std::vector<std::string> quiet_threads() {
  return {"OMP_NUM_THREADS=1", "OMP_WAIT_POLICY=passive", "OPENBLAS_NUM_THREADS=1",
          "DSGD_CLUSTER_TOKEN=main-job-test-token"};
}

bool exited_with(const std::optional<int>& status, int code) {
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == code;
}

// The number after @p key in the first line of @p out that holds it, or -1.
long long number_after(const std::string& out, const std::string& key) {
  const auto at = out.find(key);
  return at == std::string::npos ? -1 : std::atoll(out.c_str() + at + key.size());
}

struct temp_dir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("dsgd_main_job_restart_" + std::to_string(::getpid()));
  temp_dir() { std::filesystem::remove_all(path); }
  ~temp_dir() { std::filesystem::remove_all(path); }
};

// 2 epochs of 469 sync steps each (60000 examples, 2 workers, batch 64): 938 global steps.
constexpr unsigned long long last_step = 938;

std::vector<std::string> job_args(const std::filesystem::path& logdir) {
  // Unformatted: clang-format would put each option and each value on a line of its own.
  // clang-format off
  std::vector<std::string> args{"--model", "softmax", "--rule", "sync", "--epochs", "2", "--lr", "0.04",
                                "--decay", "0.6", "--target", "0.80", "--startup-timeout", "60",
                                "--recovery-timeout", "120"};
  // clang-format on
  if (!logdir.empty())
    args.insert(args.end(),
                {"--logdir", logdir.string(), "--save-steps", "100", "--save-secs", "0", "--summary-steps", "100"});
  return args;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_killed_ps_restarted_with_its_role_is_recovered_from_the_last_checkpoint) {
  temp_dir dir;
  process_cluster c(main_job_path, 2, 2, job_args(dir.path), quiet_threads());
  c.start_all();
  dsgd::train::saver saver(dir.path);
  const auto give_up = std::chrono::steady_clock::now() + 120s;
  while (saver.latest().value_or(0) < 300 && std::chrono::steady_clock::now() < give_up && !c.worker(0).exited())
    std::this_thread::sleep_for(5ms);
  BOOST_REQUIRE_MESSAGE(saver.latest().value_or(0) >= 300, c.transcript());
  BOOST_REQUIRE_MESSAGE(saver.latest().value() < last_step, "the job ended before the kill\n" << c.transcript());

  // ps:0 holds the weights (greedy_by_bytes places the largest variable first).
  c.ps(0).signal(SIGKILL);
  BOOST_REQUIRE(c.ps(0).wait_exit(10s).has_value());
  // Once the chief has lost its session it writes no checkpoint until it re-created it: the
  // latest one now is the one it must restore.
  BOOST_REQUIRE_MESSAGE(
      c.worker(0).wait_for_output(
          [](const std::string& out) { return out.find("worker:0: session lost at step ") != std::string::npos; }, 30s),
      c.transcript());
  const auto before_kill = saver.latest().value();
  c.start("ps", 0);

  for (int w : {0, 1}) {
    const auto status = c.worker(w).wait_exit(300s);
    BOOST_TEST_INFO(c.transcript());
    BOOST_TEST(exited_with(status, 0), "worker:" << w << " did not finish at the target");
  }
  for (int p : {0, 1}) BOOST_TEST(exited_with(c.ps(p).wait_exit(60s), 0), "ps:" << p << " did not end cleanly");
  const auto chief = c.worker(0).output();
  for (const auto& line : dsgd::test::lines_of(chief))
    if (line.find("session") != std::string::npos || line.find("final test accuracy") != std::string::npos)
      BOOST_TEST_MESSAGE("[worker:0] " << line);
  BOOST_TEST_INFO(c.transcript());
  // Resumed from the checkpoint written last before the kill, and said so.
  const std::string resumed = "worker:0: session re-created at step " + std::to_string(before_kill) +
                              " from checkpoint " + std::to_string(before_kill);
  BOOST_TEST(chief.find(resumed) != std::string::npos, "no line: " << resumed);
  BOOST_TEST(c.worker(1).output().find("worker:1: session re-created at step ") != std::string::npos);
  BOOST_TEST(number_after(chief, "gradients dropped as stale, ") >= 1, "the chief's recoveries");
  const auto accuracy = number_after(chief, "final test accuracy 0.");
  BOOST_TEST(accuracy >= 8000, "final test accuracy 0." << accuracy);
  // The final checkpoint is the last step, and the chief's event file holds the summaries.
  BOOST_TEST(saver.latest().value() == last_step);
  std::string events;
  for (const auto& f : std::filesystem::directory_iterator(dir.path))
    if (f.path().filename().string().rfind("events.out.tfevents.", 0) == 0) {
      std::ifstream in(f.path(), std::ios::binary);
      events.append(std::istreambuf_iterator<char>(in), {});
    }
  for (const char* tag : {"loss", "examples/sec", "learning_rate", "accuracy", "/kernel", "/bias"})
    BOOST_TEST(events.find(tag) != std::string::npos, "no summary tagged " << tag);

  // The same job started again over its --logdir restores the final checkpoint: nothing left
  // to train, the accuracy is evaluated and the job ends at its target.
  process_cluster again(main_job_path, 1, 2, job_args(dir.path), quiet_threads());
  again.start_all();
  for (int w : {0, 1}) BOOST_TEST(exited_with(again.worker(w).wait_exit(120s), 0), again.transcript());
  BOOST_TEST(
      again.worker(0).output().find("restored checkpoint " + std::to_string(last_step) + " from ") != std::string::npos,
      again.transcript());
  BOOST_TEST(number_after(again.worker(0).output(), "final test accuracy 0.") >= 8000, again.transcript());
}

BOOST_AUTO_TEST_SUITE_END()
