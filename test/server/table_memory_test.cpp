// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The memory of a ps task serving a dynamic embedding table under an endless stream of new ids
// (issue 35: "a dynamic table's ps RSS, over the second half of a stream with ten times more
// distinct ids than its cap, stays at most 1.10x the RSS when the cap was first reached"). A
// parameter_server and a worker (ps_client) are threads of this process over transport::inproc;
// the process's resident set (/proc/self/statm) is the ps's plus a worker whose buffers are
// made once. Optimised builds only (label `slow`); under a sanitizer, whose quarantine keeps
// freed blocks resident on purpose, the RSS bound is not checked.
#include <dsgd/client/ps_client.hpp>
#include <dsgd/embedding/initializer.hpp>
#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/parameter_server.hpp>
#include <dsgd/transport/inproc.hpp>
#include <dsgd/update/async.hpp>

#include <support/inproc_cluster.hpp>
#include <support/resident_memory.hpp>
#include <support/worker_loops.hpp>

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <span>
#include <vector>

BOOST_AUTO_TEST_SUITE(table_memory_test)

namespace {

namespace emb = dsgd::embedding;
using namespace std::chrono_literals;
using inproc = dsgd::transport::inproc;
using ps_type = dsgd::server::parameter_server<dsgd::update::async, dsgd::optim::sgd, dsgd::device::cpu, inproc>;
using client_type = dsgd::client::basic_ps_client<inproc>;

using dsgd::test::resident_bytes;
using dsgd::test::under_sanitizer;

// The stream: step s pulls and pushes block s of fresh ids (first seen), block s - 1 again (a
// second sighting: what count admission waits for) and a fixed set of hot ids (touched every
// step, never evicted). Ids are a bijection of their index, so all differ.
constexpr std::size_t cap = 100'000, dim = 16, block = 4'000, hot = 1'000;
constexpr std::size_t steps = 10 * cap / block;  // 10 x cap distinct fresh ids
std::uint64_t fresh_id(std::size_t i) { return std::uint64_t(i) * 0x9e3779b97f4a7c15ull + 1; }
std::uint64_t hot_id(std::size_t h) { return fresh_id(steps * block + h); }

void keys_of_step(std::size_t s, std::vector<std::uint64_t>& keys) {
  keys.clear();
  for (std::size_t i = s * block; i < (s + 1) * block; ++i) keys.push_back(fresh_id(i));
  if (s > 0)
    for (std::size_t i = (s - 1) * block; i < s * block; ++i) keys.push_back(fresh_id(i));
  for (std::size_t h = 0; h < hot; ++h) keys.push_back(hot_id(h));
}

emb::table_spec capped_table(std::uint32_t admit_after) {
  return {.name = "ids",
          .dim = dim,
          .rule = emb::table_rule::async(),
          .optimizer = emb::row_optimizer_spec::adagrad(0.1f),
          .initializer = emb::initializer_spec::of(emb::initializer::uniform{-0.1f, 0.1f, 3}),
          .admission = admit_after <= 1 ? emb::admission_spec::always() : emb::admission_spec::by_count(admit_after),
          .eviction = emb::eviction_spec::by_age(),  // at the cap: the rows touched longest ago go
          .max_rows = cap};
}

}  // namespace

// A ps task serving a table capped at 100,000 rows (by_age eviction at the cap), a worker
// pulling and pushing a stream of 1,000,000 distinct ids (and 1,000 hot ones) over 250 steps,
// admitted at once or at their second sighting. The process's RSS over the second half of the
// stream stays within 1.10x of its RSS when the cap was first reached; rows were evicted (the
// first block's gradients, pushed again at the end, are all dropped; the hot rows are still
// there) and the table holds at most the cap (every row a step admitted was updated in that
// step, so the rows present are the keys whose row differs from their initial row).
BOOST_DATA_TEST_CASE(a_capped_table_keeps_the_ps_memory_flat_under_ten_times_more_ids_than_its_cap,
                     boost::unit_test::data::make({1u, 2u}), admit_after) {
  dsgd::test::test_net<inproc> net;
  const auto spec = net.spec(1, 1);
  ps_type::options o;
  o.connection.token = "secret";
  o.connection.log = [](std::string_view) {};
  o.optimizer = {0.1f};
  ps_type ps(spec, 0, o, dsgd::device::cpu{}, net.transport());
  dsgd::test::serving<ps_type> served(ps);

  dsgd::client::client_options co;
  co.connection.token = "secret";
  co.requests.startup_timeout = 10s;
  co.requests.request_timeout = 30s;
  client_type c(spec, dsgd::cluster::task_id{"worker", 0}, co, net.transport());
  const auto plan = dsgd::placement::round_robin{}.place({{"b", dsgd::shape{1}}}, 1);
  dsgd::test::join_cluster(c, plan, 0, {{0.f}});
  const auto table = capped_table(admit_after);
  c.create_table(0, table);

  // The worker's buffers, made once at their largest.
  std::vector<std::uint64_t> keys;
  keys.reserve(2 * block + hot);
  std::vector<float> rows((2 * block + hot) * dim), grads((2 * block + hot) * dim);
  for (std::size_t i = 0; i < grads.size(); ++i) grads[i] = 0.01f * float(1 + i % 5);  // never 0

  std::size_t rss_at_cap = 0, rss_late_max = 0, cap_step = 0;
  std::uint64_t dropped = 0;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (std::size_t s = 0; s < steps; ++s) {
    BOOST_TEST_REQUIRE((std::chrono::steady_clock::now() < deadline), "the stream took over 60 s (step " << s << ")");
    keys_of_step(s, keys);
    const std::span<float> out = std::span(rows).first(keys.size() * dim);
    c.pull_table(0, dim, keys, out, s);
    dropped += c.push_table(0, dim, keys, std::span<const float>(grads).first(keys.size() * dim), s);
    // Rows after this step: the hot ids and every fresh block admitted so far (at once, or at
    // its second sighting, the step after its first).
    const std::size_t admitted = admit_after <= 1 ? hot + (s + 1) * block : (s > 0 ? hot + s * block : 0);
    if (rss_at_cap == 0 && admitted >= cap) {
      rss_at_cap = resident_bytes();
      cap_step = s;
    }
    if (s >= steps / 2) rss_late_max = std::max(rss_late_max, resident_bytes());
  }
  BOOST_TEST_MESSAGE("admit after " << admit_after << ": cap reached at step " << cap_step << " of " << steps
                                    << ", RSS then " << rss_at_cap << " bytes, second half max " << rss_late_max << " ("
                                    << double(rss_late_max) / double(std::max<std::size_t>(rss_at_cap, 1)) << "x)");
  // A step's rows are never evicted to make room for the same step's: only the ids admission
  // held back lose their gradient (count admission: each fresh block once, the hot ids at step 0).
  BOOST_TEST(dropped == (admit_after <= 1 ? 0u : steps * block + hot));

  // Evicted: the first block, pushed again without a pull, has no rows; the hot ids have theirs.
  keys.clear();
  for (std::size_t i = 0; i < block; ++i) keys.push_back(fresh_id(i));
  BOOST_TEST(c.push_table(0, dim, keys, std::span<const float>(grads).first(block * dim), steps) == block);
  keys.clear();
  for (std::size_t h = 0; h < hot; ++h) keys.push_back(hot_id(h));
  BOOST_TEST(c.push_table(0, dim, keys, std::span<const float>(grads).first(hot * dim), steps) == 0u);

  // At most the cap: the rows present, counted as the ids whose row is not their initial one.
  const emb::any_table reference = emb::make_table(table);
  std::vector<float> initial(dim);
  std::size_t present = 0;
  for (std::size_t first = 0; first < steps * block + hot; first += 2 * block) {
    keys.clear();
    for (std::size_t i = first; i < std::min(first + 2 * block, steps * block + hot); ++i)
      keys.push_back(i < steps * block ? fresh_id(i) : hot_id(i - steps * block));
    const std::span<float> out = std::span(rows).first(keys.size() * dim);
    c.read_table(0, dim, keys, out);
    for (std::size_t k = 0; k < keys.size(); ++k) {
      reference.initial_row(keys[k], initial);
      present += !std::equal(initial.begin(), initial.end(), out.begin() + k * dim);
    }
  }
  BOOST_TEST_MESSAGE("rows present at the end: " << present);
  BOOST_TEST(present <= cap);
  BOOST_TEST(present >= cap - cap / 64 - 1);  // at the cap, less at most one eviction batch
  c.finish();
  served.stop_and_join();
  served.rethrow_failure();

  BOOST_TEST_REQUIRE(cap_step > 0u);
  if (rss_at_cap != 0 && !under_sanitizer) BOOST_TEST(rss_late_max <= rss_at_cap * 11 / 10);
}

BOOST_AUTO_TEST_SUITE_END()
