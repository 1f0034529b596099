// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/optim/adagrad.hpp>: hand-computed steps from the initial accumulator.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/adagrad.hpp>

#include <support/host_steps.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>

BOOST_AUTO_TEST_SUITE(optim_adagrad_test)

static_assert(dsgd::Optimizer<dsgd::optim::adagrad, dsgd::device::cpu>);

BOOST_AUTO_TEST_SUITE(optimizers_on_cpu)

BOOST_AUTO_TEST_CASE(adagrad_starts_from_the_initial_accumulator) {
  namespace tt = boost::test_tools;
  // a = 0.5 + 2^2 = 4.5, w = 1 - 0.1 * 2 / (sqrt(4.5) + 1e-7); then a = 8.5.
  dsgd::test::host_steps run(dsgd::optim::adagrad{0.1f, 0.5f, 1e-7f}, {1.f}, {2.f});
  run.step();
  const double w1 = 1.0 - 0.2 / (std::sqrt(4.5) + 1e-7);
  BOOST_TEST(run.s.steps == 1u);
  BOOST_TEST(run.s.accumulator[0] == 4.5f, tt::tolerance(1e-6f));
  BOOST_TEST(double{run.w[0]} == w1, tt::tolerance(1e-6));
  run.step();
  BOOST_TEST(run.s.accumulator[0] == 8.5f, tt::tolerance(1e-6f));
  BOOST_TEST(double{run.w[0]} == w1 - 0.2 / (std::sqrt(8.5) + 1e-7), tt::tolerance(1e-6));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
