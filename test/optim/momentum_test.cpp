// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/optim/momentum.hpp>: hand-computed steps, plain and Nesterov.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/momentum.hpp>

#include <support/host_steps.hpp>

#include <boost/test/unit_test.hpp>

BOOST_AUTO_TEST_SUITE(optim_momentum_test)

using dsgd::optim::momentum;
using dsgd::test::host_steps;
namespace tt = boost::test_tools;

static_assert(dsgd::Optimizer<momentum, dsgd::device::cpu>);

BOOST_AUTO_TEST_SUITE(optimizers_on_cpu)

BOOST_AUTO_TEST_CASE(momentum_accumulates_velocity_as_tensorflow_does) {
  // lr 0.1, m 0.9, g = 1 twice: v = 1 then 1.9; w = 1 - 0.1 = 0.9, then 0.9 - 0.19 = 0.71.
  host_steps run(momentum{0.1f, 0.9f, false}, {1.f}, {1.f});
  run.step();
  BOOST_TEST(run.w[0] == 0.9f, tt::tolerance(1e-6f));
  run.step();
  BOOST_TEST(run.s.velocity[0] == 1.9f, tt::tolerance(1e-6f));
  BOOST_TEST(run.w[0] == 0.71f, tt::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(nesterov_looks_ahead_with_the_updated_velocity) {
  // v = 1: w = 1 - 0.1 (1 + 0.9) = 0.81; v = 1.9: w = 0.81 - 0.1 (1 + 1.71) = 0.539.
  host_steps run(momentum{0.1f, 0.9f, true}, {1.f}, {1.f});
  for (const float after : {0.81f, 0.539f}) {
    run.step();
    BOOST_TEST(run.w[0] == after, tt::tolerance(1e-6f));
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
