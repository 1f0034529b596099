// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/optim/exponential_decay.hpp>: staircase and continuous schedules.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/sgd.hpp>

#include <boost/test/unit_test.hpp>

#include <vector>

BOOST_AUTO_TEST_SUITE(optim_exponential_decay_test)

BOOST_AUTO_TEST_SUITE(learning_rate_schedule)

static_assert(dsgd::Optimizer<dsgd::optim::exponential_decay<dsgd::optim::sgd>, dsgd::device::cpu>);

BOOST_AUTO_TEST_CASE(staircase_decay_multiplies_the_rate_every_decay_steps_updates) {
  dsgd::optim::exponential_decay<dsgd::optim::sgd> opt{{1.f}, 0.5f, 2, true};
  dsgd::optim::exponential_decay<dsgd::optim::sgd>::state<dsgd::device::cpu> s(dsgd::device::cpu{}, 1);
  std::vector<float> w{0.f}, g{-1.f};
  std::vector<float> after;
  for (int i = 0; i < 5; ++i) {
    opt.apply(dsgd::device::cpu{}, s, w.data(), g.data(), 1);
    after.push_back(w[0]);
  }
  // rates 1, 1, 0.5, 0.5, 0.25
  BOOST_TEST(after == (std::vector<float>{1.f, 2.f, 2.5f, 3.f, 3.25f}), boost::test_tools::per_element());
  BOOST_TEST(opt.learning_rate_at(4) == 0.25f);
}

BOOST_AUTO_TEST_CASE(continuous_decay_interpolates) {
  dsgd::optim::exponential_decay<dsgd::optim::momentum> opt{{0.1f, 0.9f, false}, 0.25f, 4, false};
  BOOST_TEST(opt.learning_rate_at(2) == 0.05f, boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
