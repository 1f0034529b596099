// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Training state is whole in a checkpoint: a cluster of real processes (two ps tasks and a
// worker, resume_job.cpp) trains softmax regression on Fashion-MNIST for N steps with a
// learning-rate schedule around a stateful optimizer and checkpoints; a new cluster of new
// processes restores it and trains on. Its final values equal, bit for bit, those of a cluster
// that trained without a break: the checkpoint held the optimizer's slots and counters and the
// schedule's step on every shard, not only the values.
#include <dsgd/checkpoint/saver.hpp>

#include <support/temp_dir.hpp>

#include <faults/process_cluster.hpp>

#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(optim_resume_test)

namespace {

using namespace std::string_literals;

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct temp_dir : dsgd::test::temp_dir {
  temp_dir() : dsgd::test::temp_dir("dsgd_resume_test_") {}
};

using dsgd::test::slurp;

// Runs a whole cluster (ps:0, ps:1, worker:0) of resume_job with @p args to the end; @returns
// the worker's output.
std::string run_cluster(const std::vector<std::string>& args) {
  dsgd::test::process_cluster c(DSGD_RESUME_JOB_PATH, 2, 1, args,
                                {"OMP_NUM_THREADS=1", "OMP_WAIT_POLICY=passive", "OPENBLAS_NUM_THREADS=1"});
  c.start_all();
  const auto status = c.worker(0).wait_exit(240s);
  BOOST_TEST_INFO(c.transcript());
  BOOST_REQUIRE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  for (int ps : {0, 1}) {
    const auto ps_status = c.ps(ps).wait_exit(60s);
    BOOST_TEST_INFO(c.transcript());
    BOOST_REQUIRE(ps_status && WIFEXITED(*ps_status) && WEXITSTATUS(*ps_status) == 0);
  }
  return c.worker(0).output();
}

// The 64-bit counter @p name of checkpoint @p step in @p dir (two 32-bit halves, low first).
std::uint64_t counter(const fs::path& dir, std::uint64_t step, const std::string& name) {
  const auto bits = dsgd::checkpoint::saver(dir).open(step).read(name);
  BOOST_REQUIRE(bits.size() == 2u);
  return std::uint64_t{std::bit_cast<std::uint32_t>(bits[0])} |
         (std::uint64_t{std::bit_cast<std::uint32_t>(bits[1])} << 32);
}

// Trains @p optimizer to step @p total without a break, and to @p cut, checkpointed, then on to
// @p total in new processes from the checkpoint: the two end bit for bit alike. @p slots and
// @p counters are the records the checkpoint must hold beside each variable (each counter, like
// the schedule's step, at @p cut).
// The records a checkpoint must hold beside one variable: its slots and its counters.
struct records {
  std::vector<std::string> slots, counters;
};

void check_resume(const std::string& optimizer, std::uint64_t cut, std::uint64_t total, const records& kernel,
                  const records& bias) {
  temp_dir dir;
  const auto whole = dir.path / "whole.f32", first = dir.path / "first.f32", resumed = dir.path / "resumed.f32";
  const auto ckpt = dir.path / "ckpt";
  const auto started = std::chrono::steady_clock::now();
  run_cluster({"--optimizer", optimizer, "--to", std::to_string(total), "--out", whole.string()});
  run_cluster(
      {"--optimizer", optimizer, "--to", std::to_string(cut), "--save", ckpt.string(), "--out", first.string()});
  const auto out = run_cluster(
      {"--optimizer", optimizer, "--to", std::to_string(total), "--restore", ckpt.string(), "--out", resumed.string()});
  BOOST_TEST(out.find("start " + std::to_string(cut) + "\n") != std::string::npos, out);
  BOOST_TEST(out.find("final " + std::to_string(total) + "\n") != std::string::npos, out);

  const auto a = slurp(whole), b = slurp(resumed);
  BOOST_REQUIRE(a.size() == (784u * 10u + 10u) * sizeof(float));
  BOOST_REQUIRE(b.size() == a.size());
  BOOST_TEST(slurp(first) != a, "the run cut at step " << cut << " already holds the final values");
  std::size_t differing = 0;
  for (std::size_t i = 0; i < a.size(); i += sizeof(float)) differing += a.compare(i, 4, b, i, 4) != 0;
  BOOST_TEST(differing == 0u, optimizer << ": " << differing << " of " << a.size() / sizeof(float)
                                        << " values differ from the uninterrupted run's");

  // The checkpoint holds each variable's slots and, from its first shard, its counters.
  auto reader = dsgd::checkpoint::saver(ckpt).open(cut);
  BOOST_TEST(reader.format_version() == 3u);
  for (const auto& [v, held] : {std::pair{"dense0/kernel", kernel}, std::pair{"dense0/bias", bias}}) {
    for (const auto& slot : held.slots) BOOST_TEST(reader.contains(v + "/"s + slot), v << "/" << slot);
    for (const auto& c : held.counters) BOOST_TEST(counter(ckpt, cut, v + "/"s + c) == cut, v << "/" << c);
  }
  BOOST_TEST_MESSAGE(optimizer << ": " << cut << " + " << total - cut << " steps resumed bit for bit in "
                               << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()
                               << " s (three clusters)");
}

}  // namespace

BOOST_AUTO_TEST_CASE(momentum_with_exponential_decay_resumes_bit_for_bit_in_new_processes) {
  const records r{{"velocity"}, {"schedule_step"}};
  check_resume("momentum_exponential", 20, 40, r, r);
}

BOOST_AUTO_TEST_CASE(adamw_with_cosine_decay_and_warmup_resumes_bit_for_bit_in_new_processes) {
  // Cut inside the warmup: the rest of the warmup and the whole cosine come after the restore.
  const records r{{"m", "v"}, {"t", "schedule_step"}};
  check_resume("adamw_cosine", 6, 40, r, r);
}

BOOST_AUTO_TEST_CASE(adagrad_with_piecewise_constant_rates_resumes_bit_for_bit_in_new_processes) {
  // adagrad keeps no step counter: its initial accumulator is per element.
  const records r{{"accumulator"}, {"schedule_step"}};
  check_resume("adagrad_piecewise", 20, 40, r, r);
}

// optim::per_variable: the kernel trains with the schedule around adam, the bias with ftrl, and
// each variable's checkpoint holds its own optimizer's slots (ftrl's accumulator and linear term
// beside the bias, which adam's m would have been).
BOOST_AUTO_TEST_CASE(per_variable_optimizers_resume_bit_for_bit_in_new_processes) {
  check_resume("per_variable", 6, 40, {{"m", "v"}, {"t", "schedule_step"}}, {{"accumulator", "linear"}, {}});
}

BOOST_AUTO_TEST_SUITE_END()
