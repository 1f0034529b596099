// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/update/async.hpp>: every push applied on arrival, no torn pull, on threads.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/lazy_adam.hpp>
#include <dsgd/optim/rowwise_adagrad.hpp>
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

// Optimizers whose sparse form is an apply_rows of their own (update::applies_rows) take sparse
// pushes under async: lazy Adam's untouched rows keep their values, and a push ends where the
// optimizer's apply_rows leaves a copy of the variable.
static_assert(dsgd::update::sparse_apply<dsgd::optim::lazy_adam>::available);
static_assert(dsgd::update::sparse_apply<dsgd::optim::rowwise_adagrad>::available);

template <class O>
void sparse_pushes_equal_apply_rows(O opt) {
  constexpr std::size_t rows = 6, dim = 3;
  std::vector<float> w0(rows * dim);
  for (std::size_t i = 0; i < w0.size(); ++i) w0[i] = 0.1f * float(i) - 0.5f;
  dsgd::update::async::shard<cpu, O> shard(cpu{}, w0, opt, 1);
  std::vector<float> expected = w0;
  typename O::template state<cpu> state(cpu{}, w0.size());
  const std::vector<std::vector<std::uint64_t>> pushes{{1, 4}, {4}, {0, 1, 5}};
  for (std::size_t p = 0; p < pushes.size(); ++p) {
    const auto& keys = pushes[p];
    std::vector<float> g(keys.size() * dim);
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = float(p + 1) * (float(i % 5) - 2.f);
    shard.push_rows(0, 0, keys, dim, g.data());
    opt.apply_rows(cpu{}, state, expected.data(), keys.data(), keys.size(), dim, g.data());
  }
  std::vector<float> actual(w0.size());
  shard.pull(0, 0, actual.data(), soon());
  BOOST_TEST(actual == expected, boost::test_tools::per_element());
  for (std::size_t c = 0; c < dim; ++c) {  // rows 2 and 3 were never pushed
    BOOST_TEST(actual[2 * dim + c] == w0[2 * dim + c]);
    BOOST_TEST(actual[3 * dim + c] == w0[3 * dim + c]);
  }
}

BOOST_AUTO_TEST_CASE(lazy_adam_and_rowwise_adagrad_take_sparse_pushes_through_their_apply_rows) {
  sparse_pushes_equal_apply_rows(dsgd::optim::lazy_adam{.learning_rate = 0.1f});
  sparse_pushes_equal_apply_rows(dsgd::optim::rowwise_adagrad{.learning_rate = 0.1f, .row_width = 3});
}

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
