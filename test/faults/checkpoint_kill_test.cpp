// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Kills during checkpoint writes: a child process writes checkpoint after checkpoint (two ps
// data files, then the manifest, as a cluster does) and is killed with SIGKILL at a random
// moment, 120 times, each time started again from the latest checkpoint it finds. After every
// kill the latest checkpoint must open, verify and hold exactly the values of its step, and the
// steps must never go backwards: a crash at any point of a write leaves the previous
// checkpoint, never a damaged one (docs/checkpoints.md, "Atomicity").
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/train/saver.hpp>

#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(checkpoint_kill_test)

namespace {

namespace fs = std::filesystem;

const std::vector<dsgd::placement::variable_info> variables{{"w", dsgd::shape{256, 64}}, {"b", dsgd::shape{64}}};

// The values of variable @p v at @p step: any checkpoint can be checked against them.
std::vector<float> values_at(std::size_t v, std::uint64_t step) {
  std::vector<float> out(variables[v].shape.elements());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = float(step) + float(i % 97) * 0.25f + float(v);
  return out;
}

// The child: writes checkpoints from the step after the latest, forever (until killed).
[[noreturn]] void write_forever(const fs::path& dir) {
  dsgd::train::saver saver(dir, 3);
  const auto plan = dsgd::placement::round_robin{}.place(variables, 2);
  std::uint64_t step = saver.latest().value_or(0);
  std::vector<std::vector<float>> values(variables.size());
  while (true) {
    ++step;
    for (std::size_t v = 0; v < variables.size(); ++v) values[v] = values_at(v, step);
    for (std::size_t ps = 0; ps < 2; ++ps) {
      std::vector<dsgd::train::shard_data> shards;
      for (const auto& s : plan.shards())
        if (s.ps_task == ps)
          shards.push_back({variables[s.variable].name, variables[s.variable].shape, s.offset,
                            std::span<const float>(values[s.variable]).subspan(s.offset, s.elements)});
      saver.write_shard_file(step, ps, 2, shards);
    }
    saver.commit(step, plan);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_latest_checkpoint_always_restores_after_kills_during_writes) {
  const fs::path dir = fs::temp_directory_path() / ("dsgd_ckpt_kill_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::mt19937 rng(20261130);
  std::uniform_int_distribution<int> delay_us(0, 40'000);
  std::uint64_t last = 0;
  int kills_mid_run = 0;
  for (int round = 0; round < 120; ++round) {
    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
      try {
        write_forever(dir);
      } catch (...) {
        ::_exit(3);
      }
    }
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
    ::kill(child, SIGKILL);
    int status = 0;
    BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
    BOOST_REQUIRE_MESSAGE(WIFSIGNALED(status), "the writer stopped on its own (status " << status << ")");
    kills_mid_run += WTERMSIG(status) == SIGKILL;

    dsgd::train::saver saver(dir, 3);
    const auto latest = saver.latest();
    if (!latest) continue;  // killed before the first commit
    BOOST_TEST(*latest >= last, "the latest checkpoint went back from " << last << " to " << *latest);
    last = *latest;
    auto reader = saver.open(*latest);  // throws, naming the file, if anything is damaged
    for (std::size_t v = 0; v < variables.size(); ++v)
      BOOST_TEST(reader.read(variables[v].name) == values_at(v, *latest), boost::test_tools::per_element());
  }
  BOOST_TEST(kills_mid_run == 120);
  BOOST_TEST(last > 10u, "too few checkpoints were committed (" << last << ") for the kills to land in writes");
  BOOST_TEST_MESSAGE("120 kills, latest checkpoint step " << last);
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
