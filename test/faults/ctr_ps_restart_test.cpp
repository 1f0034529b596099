// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The CTR job (dsgd-ctr) as real processes on 127.0.0.1: 2 ps tasks holding the embedding
// tables' hash shards and 2 workers under sync, checkpointing every 100 steps with deltas (the
// tables' changed rows) between full checkpoints. ps:0 is killed with SIGKILL right after an
// incremental checkpoint and started again with the same role: the chief has both ps tasks
// restore that checkpoint (its tables read from the full base and every delta since), the job
// completes, and its test AUC is within 0.002 of the same job run without a fault.
#include "process_cluster.hpp"

#include <dsgd/train/saver.hpp>

#include <boost/test/unit_test.hpp>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

BOOST_AUTO_TEST_SUITE(ctr_ps_restart_test)

using namespace std::chrono_literals;
using dsgd::test::process_cluster;

namespace {

const std::string ctr_job_path = DSGD_CTR_JOB_PATH;

std::vector<std::string> quiet_threads() {
  return {"OMP_NUM_THREADS=1", "OMP_WAIT_POLICY=passive", "OPENBLAS_NUM_THREADS=1",
          "DSGD_CLUSTER_TOKEN=ctr-job-test-token"};
}

bool exited_with(const std::optional<int>& status, int code) {
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == code;
}

// The test AUC of the chief's final line ("final test auc 0.7612 (...").
double final_auc(const std::string& out) {
  const std::string key = "final test auc ";
  const auto at = out.find(key);
  return at == std::string::npos ? -1 : std::atof(out.c_str() + at + key.size());
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct temp_dir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("dsgd_ctr_job_restart_" + std::to_string(::getpid()));
  temp_dir() { std::filesystem::remove_all(path); }
  ~temp_dir() { std::filesystem::remove_all(path); }
};

// 400,000 examples, 2 workers of 256: 782 sync global steps.
std::vector<std::string> job_args(const std::filesystem::path& logdir) {
  // clang-format off
  std::vector<std::string> args{"--rule", "sync", "--examples", "400000", "--batch", "256", "--hidden", "64,32",
                                "--eval", "20000", "--log-steps", "100", "--startup-timeout", "60",
                                "--recovery-timeout", "120"};
  // clang-format on
  if (!logdir.empty())
    args.insert(args.end(), {"--logdir", logdir.string(), "--save-steps", "100", "--save-secs", "0", "--deltas", "3"});
  return args;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_killed_ps_of_hash_shards_is_restored_from_full_and_incremental_checkpoints) {
  // The undisturbed job first: the AUC to end near.
  process_cluster calm(ctr_job_path, 2, 2, job_args({}), quiet_threads());
  calm.start_all();
  for (int w : {0, 1}) BOOST_REQUIRE_MESSAGE(exited_with(calm.worker(w).wait_exit(300s), 0), calm.transcript());
  const double undisturbed = final_auc(calm.worker(0).output());
  BOOST_TEST_MESSAGE("undisturbed: final test auc " << undisturbed);
  BOOST_REQUIRE(undisturbed > 0.6);

  temp_dir dir;
  process_cluster c(ctr_job_path, 2, 2, job_args(dir.path), quiet_threads());
  c.start_all();
  dsgd::train::saver saver(dir.path);
  // Checkpoints 100 (full), 200, 300 and 400 (deltas): kill once a delta is the latest.
  const auto give_up = std::chrono::steady_clock::now() + 120s;
  while (saver.latest().value_or(0) < 200 && std::chrono::steady_clock::now() < give_up && !c.worker(0).exited())
    std::this_thread::sleep_for(2ms);
  c.ps(0).signal(SIGKILL);
  BOOST_REQUIRE(c.ps(0).wait_exit(10s).has_value());
  BOOST_REQUIRE_MESSAGE(
      c.worker(0).wait_for_output(
          [](const std::string& out) { return out.find("worker:0: session lost at step ") != std::string::npos; }, 30s),
      c.transcript());
  const auto before_kill = saver.latest().value_or(0);
  BOOST_TEST_MESSAGE("killed ps:0 with checkpoint " << before_kill << " the latest");
  BOOST_REQUIRE_MESSAGE(before_kill >= 200 && before_kill <= 400, "the latest checkpoint is no delta: " << before_kill);
  const auto manifest = read_file(dir.path / ("ckpt-" + std::to_string(before_kill) + ".manifest"));
  BOOST_TEST(manifest.find("tables_delta_of " + std::to_string(before_kill - 100)) != std::string::npos, manifest);
  c.start("ps", 0);

  for (int w : {0, 1}) BOOST_TEST(exited_with(c.worker(w).wait_exit(300s), 0), c.transcript());
  for (int p : {0, 1}) BOOST_TEST(exited_with(c.ps(p).wait_exit(60s), 0), c.transcript());
  const auto chief = c.worker(0).output();
  const std::string resumed = "worker:0: session re-created at step " + std::to_string(before_kill) +
                              " from checkpoint " + std::to_string(before_kill);
  BOOST_TEST(chief.find(resumed) != std::string::npos, "no line: " << resumed << "\n" << c.transcript());
  const double disturbed = final_auc(chief);
  BOOST_TEST_MESSAGE("after the kill and restore: final test auc " << disturbed);
  BOOST_TEST(std::abs(disturbed - undisturbed) <= 0.002, "final test auc " << disturbed << ", undisturbed "
                                                                           << undisturbed << "\n"
                                                                           << c.transcript());
}

BOOST_AUTO_TEST_SUITE_END()
