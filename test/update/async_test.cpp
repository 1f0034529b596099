// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/update/async.hpp>: every push applied on arrival, no torn pull, on threads.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/update/async.hpp>

#include <support/deadline.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(update_async_test)

using namespace std::chrono_literals;
using dsgd::device::cpu;
using steady = dsgd::update::clock_type;
using dsgd::update::push_outcome;

static_assert(dsgd::UpdateRule<dsgd::update::async>);

using dsgd::test::soon;

BOOST_AUTO_TEST_SUITE(async_rule)

BOOST_AUTO_TEST_CASE(every_gradient_is_applied_and_no_pull_sees_a_torn_shard) {
  constexpr std::size_t d = 4096, workers = 4, pushes = 200;
  std::vector<float> w0(d, 0.f);
  dsgd::update::async::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, workers);
  std::atomic<bool> torn{false};
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < workers; ++k)
    threads.emplace_back([&, k] {
      std::vector<float> g(d, -1.f), w(d);  // every push adds exactly 1 to every element
      for (std::size_t i = 0; i < pushes; ++i) {
        shard.push(k, 0, g.data());
        shard.pull(k, 0, w.data(), soon());
        if (std::adjacent_find(w.begin(), w.end(), std::not_equal_to<>()) != w.end()) torn = true;
      }
    });
  for (auto& t : threads) t.join();
  std::vector<float> w(d);
  BOOST_TEST(shard.pull(0, 0, w.data(), soon()) == workers * pushes);
  BOOST_TEST(!torn);
  BOOST_TEST(w[0] == static_cast<float>(workers * pushes));
  BOOST_TEST(w[d - 1] == static_cast<float>(workers * pushes));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
