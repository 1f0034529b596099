// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/update/bounded_staleness.hpp>: how far ahead a worker may run, on threads.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/bounded_staleness.hpp>

#include <support/deadline.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(update_bounded_staleness_test)

using namespace std::chrono_literals;
using dsgd::device::cpu;
using steady = dsgd::update::clock_type;
using dsgd::update::push_outcome;

static_assert(dsgd::UpdateRule<dsgd::update::bounded_staleness>);

using dsgd::test::soon;

BOOST_AUTO_TEST_SUITE(bounded_staleness_rule)

BOOST_AUTO_TEST_CASE(staleness_zero_is_lockstep) {
  std::vector<float> w0{0.f}, g{1.f}, w(1);
  dsgd::update::bounded_staleness::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 2, 0);
  shard.push(0, 0, g.data());
  BOOST_CHECK_EXCEPTION(shard.pull(0, 1, w.data(), steady::now() + 100ms), dsgd::error, [](const dsgd::error& e) {
    return e.code() == dsgd::errc::timed_out && std::string(e.what()).find("worker:1 (clock 0)") != std::string::npos;
  });
  shard.push(1, 0, g.data());
  BOOST_TEST(shard.pull(0, 1, w.data(), soon()) == 2u);
}

// The bound is the rule's run-time value: the shards make_shard() gives hold it, and
// describe() says it, as a worker's registration carries it.
BOOST_AUTO_TEST_CASE(the_bound_is_a_run_time_value_of_the_rule) {
  const dsgd::update::bounded_staleness rule{.staleness = 5};
  BOOST_TEST(rule.describe() == "bounded_staleness(5)");
  BOOST_TEST(dsgd::update::describe_rule(rule) == "bounded_staleness(5)");
  BOOST_TEST(dsgd::update::describe_rule(dsgd::update::async{}) == "");  // no settings
  std::vector<float> w0{0.f}, g{1.f}, w(1);
  auto shard = rule.make_shard<cpu, dsgd::optim::sgd>(cpu{}, w0, {1.f}, 2);
  for (std::uint64_t c = 0; c < 5; ++c) shard->push(0, c, g.data());
  BOOST_TEST(shard->try_pull(0, 5, w.data()).has_value());  // 5 ahead of worker 1: allowed
  shard->push(0, 5, g.data());
  BOOST_TEST(!shard->try_pull(0, 6, w.data()).has_value());  // 6 ahead: waits
  BOOST_TEST(shard->wait_reason(0, 6).find("bounded_staleness(5): worker 0 at clock 6") != std::string::npos,
             shard->wait_reason(0, 6));
}

BOOST_AUTO_TEST_CASE(a_worker_may_run_s_clocks_ahead_and_no_further) {
  std::vector<float> w0{0.f}, g{1.f}, w(1);
  dsgd::update::bounded_staleness::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 2, 2);
  for (std::uint64_t c = 0; c < 2; ++c) {
    BOOST_TEST(shard.pull(0, c, w.data(), soon()) == c);  // up to 2 ahead: no wait
    shard.push(0, c, g.data());
  }
  BOOST_TEST(shard.pull(0, 2, w.data(), soon()) == 2u);  // clock 2, slowest 0: 2 - 2 = 0 ok
  shard.push(0, 2, g.data());
  BOOST_CHECK_THROW(shard.pull(0, 3, w.data(), steady::now() + 100ms), dsgd::error);  // 3 ahead
  std::thread slow([&] { shard.push(1, 0, g.data()); });
  BOOST_TEST(shard.pull(0, 3, w.data(), soon()) == 4u);  // released by worker 1's push
  slow.join();
  BOOST_TEST(shard.clock_of(1) == 1u);
}

BOOST_AUTO_TEST_CASE(a_finished_worker_does_not_hold_the_others_back) {
  std::vector<float> w0{0.f}, g{1.f}, w(1);
  dsgd::update::bounded_staleness::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 2, 0);
  shard.push(0, 0, g.data());
  shard.finish(1);
  BOOST_TEST(shard.pull(0, 1, w.data(), soon()) == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
