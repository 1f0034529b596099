// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Exactly once across a ps restart (docs/reliability.md, "Exactly once"): 2 ps tasks and 2
// async workers of the counter job in monitored sessions, checkpointing every 40 global steps;
// ps:0 is killed with SIGKILL and started again, empty. The chief restores the latest
// checkpoint onto both ps tasks, and with it each shard's pushes received per replica (the
// pushes its values hold); every worker registers again and resumes at those counts. So each
// counter ends at exactly what the restored state holds plus the pushes made after it: the 2 x N
// pushes the tasks were asked for, none applied twice, none lost, though the restore rolled
// back pushes that had been acknowledged.
#include "fault_support.hpp"

#include <dsgd/checkpoint/saver.hpp>

#include <boost/test/unit_test.hpp>

#include <bit>
#include <csignal>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>

BOOST_AUTO_TEST_SUITE(ps_restore_exactly_once_test)

using namespace std::chrono_literals;
using namespace dsgd::test;

namespace {

// Counts of checkpoint record @p name (per replica, two 32-bit halves each).
std::vector<std::uint64_t> counts_of(const dsgd::checkpoint::checkpoint_reader& r, const std::string& name) {
  std::vector<std::uint64_t> out;
  const auto bits = r.read(name);
  for (std::size_t i = 0; i + 1 < bits.size(); i += 2)
    out.push_back(std::uint64_t{std::bit_cast<std::uint32_t>(bits[i])} |
                  (std::uint64_t{std::bit_cast<std::uint32_t>(bits[i + 1])} << 32));
  return out;
}

// The acks a worker printed before its last "resume" line, and that line's count.
std::pair<std::size_t, std::size_t> acks_before_last_resume(const std::string& out) {
  std::size_t acks = 0, before = 0, resumed = 0;
  for (const auto& l : lines_of(out)) {
    if (l.rfind("ack ", 0) == 0) ++acks;
    if (l.rfind("resume ", 0) == 0) {
      before = acks;
      resumed = std::stoul(l.substr(7));
    }
  }
  return {before, resumed};
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_ps_restored_from_its_checkpoint_restores_the_push_counts_and_no_push_is_lost_or_doubled) {
  constexpr std::size_t pushes = 300;
  constexpr int workers = 2;
  const auto dir = std::filesystem::temp_directory_path() / ("dsgd_ps_restore_once_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  counter_cluster c(2, workers,
                    counter_args("async", 100000000, 5, 30000ms,
                                 {"--vars", "2", "--pushes", std::to_string(pushes), "--session", dir.string(),
                                  "--save-steps", "40"}));
  c.start_all();
  wait_for_checkpoint(c, dir, 40);
  // Some acknowledged pushes after the checkpoint, which the restore rolls back (fewer than
  // the 40 global steps to the next checkpoint).
  const auto acked = count_lines_starting(c.worker(0).output(), "ack ");
  BOOST_REQUIRE_MESSAGE(c.worker(0).wait_for_lines("ack ", acked + 8, 60s), c.transcript());
  c.ps(0).signal(SIGKILL);
  BOOST_REQUIRE(c.ps(0).wait_exit(10s).has_value());
  c.start("ps", 0);

  // The checkpoint the chief restored, read before later checkpoints prune it.
  static const std::regex restored(R"(session re-created at step \d+ from checkpoint (\d+))");
  std::smatch m;
  std::string line;
  BOOST_REQUIRE_MESSAGE(
      c.worker(0).wait_for_output(
          [&](const std::string& out) { return std::regex_search(out, m, restored) && (line = m[1], true); }, 120s),
      c.transcript());
  const auto step = std::stoull(line);
  dsgd::checkpoint::checkpoint_reader reader(dir, step);
  BOOST_TEST(reader.format_version() == 3u);
  std::vector<long long> held(2);                  // each counter's value in the checkpoint
  std::vector<std::vector<std::uint64_t>> counts;  // per counter, pushes per replica it holds
  for (int v = 0; v < 2; ++v) {
    const auto name = "counter" + std::to_string(v);
    held[v] = static_cast<long long>(reader.read(name)[0]);
    counts.push_back(counts_of(reader, name + "/pushes_received/0-1"));
    BOOST_REQUIRE(counts.back().size() == std::size_t{workers});
    // The counts are the pushes the values hold: each applied push added 1.
    BOOST_TEST(static_cast<long long>(counts.back()[0] + counts.back()[1]) == held[v]);
  }

  for (int w = 0; w < workers; ++w) {
    BOOST_TEST_INFO(c.transcript());
    BOOST_TEST(exited_with(c.worker(w).wait_exit(180s), 0), "worker:" << w << " did not complete");
  }
  for (int p = 0; p < 2; ++p) {
    BOOST_TEST_INFO(c.transcript());
    BOOST_TEST(exited_with(c.ps(p).wait_exit(60s), 0), "ps:" << p);
  }
  BOOST_TEST_INFO(c.transcript());
  std::size_t rolled_back = 0;
  for (int w = 0; w < workers; ++w) {
    const auto [acks, resumed] = acks_before_last_resume(c.worker(w).output());
    // Each worker resumed at the lower of its two shards' counts, not at what it had sent.
    BOOST_TEST(resumed == std::min(counts[0][w], counts[1][w]), "worker:" << w);
    rolled_back += acks > resumed ? acks - resumed : 0;
  }
  BOOST_TEST(rolled_back > 0u, "the restore rolled back no acknowledged push: the test proves nothing");
  for (int v = 0; v < 2; ++v) {
    const auto final = final_counter(c.ps(v).output(), v);
    BOOST_REQUIRE(final.has_value());
    // The restored state's pushes plus those made after it, each task's redone exactly.
    const long long after = static_cast<long long>(2 * pushes - counts[v][0] - counts[v][1]);
    BOOST_TEST(final->value == held[v] + after, "counter" << v);
    BOOST_TEST(final->value == static_cast<long long>(workers * pushes), "counter" << v);
  }
  BOOST_TEST_MESSAGE("restored checkpoint " << step << " holding " << held[0] << " and " << held[1] << " pushes; "
                                            << rolled_back << " acknowledged pushes redone");
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
