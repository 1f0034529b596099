// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/optim/sgd.hpp>: a hand-computed step.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/sgd.hpp>

#include <support/host_steps.hpp>

#include <boost/test/unit_test.hpp>

#include <vector>

BOOST_AUTO_TEST_SUITE(optim_sgd_test)

static_assert(dsgd::Optimizer<dsgd::optim::sgd, dsgd::device::cpu>);

BOOST_AUTO_TEST_SUITE(optimizers_on_cpu)

BOOST_AUTO_TEST_CASE(sgd_steps_against_the_scaled_gradient) {
  dsgd::test::host_steps run(dsgd::optim::sgd{0.5f}, {1.f, 1.f, 1.f}, {2.f, -4.f, 0.f});
  run.step(0.5f);
  BOOST_TEST(run.weights() == (std::vector<float>{0.5f, 2.f, 1.f}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
