// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/optim/adam.hpp>: the bias correction and where epsilon goes.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/adam.hpp>

#include <support/host_steps.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

BOOST_AUTO_TEST_SUITE(optim_adam_test)

using dsgd::optim::adam;
namespace tt = boost::test_tools;

static_assert(dsgd::Optimizer<adam, dsgd::device::cpu>);

BOOST_AUTO_TEST_SUITE(optimizers_on_cpu)

BOOST_AUTO_TEST_CASE(adam_bias_correction_makes_early_steps_the_full_learning_rate) {
  // With a constant gradient, m_hat = g and v_hat = g^2 at every step once corrected, so each
  // step moves w by lr * g / (|g| + eps), about lr; without the correction the first step would
  // be lr * (1 - beta1) / sqrt(1 - beta2) = 3.16 lr.
  constexpr float lr = 0.01f;
  const float grads[] = {3.f, -0.5f, 1e-3f};
  dsgd::test::host_steps run(adam{lr, 0.9f, 0.999f, 1e-8f}, std::vector<float>(3, 0.f),
                             {std::begin(grads), std::end(grads)});
  for (int t = 1; t <= 5; ++t) {
    run.step();
    BOOST_TEST(run.s.t == std::uint64_t(t));
    for (std::size_t i = 0; i < 3; ++i) {
      BOOST_TEST_CONTEXT("t " << t << ", element " << i) {
        const double step = double{lr} * grads[i] / (std::abs(grads[i]) + 1e-8);
        BOOST_TEST(double{run.w[i]} == -t * step, tt::tolerance(1e-4));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(adam_adds_epsilon_to_the_corrected_root) {
  // One step with g = 1e-4 and eps = 1e-4: m_hat = 1e-4 and v_hat = 1e-8, so the step is
  // lr * 1e-4 / (1e-4 + 1e-4) = lr / 2. TensorFlow 1.x's form, eps added to the uncorrected
  // sqrt(v) = sqrt(1e-11), would step lr * sqrt(1e-3) / 0.1 * 1e-5 / (3.2e-6 + 1e-4) = 0.03 lr.
  dsgd::test::host_steps run(adam{0.1f, 0.9f, 0.999f, 1e-4f}, {0.f}, {1e-4f});
  run.step();
  BOOST_TEST(run.w[0] == -0.05f, tt::tolerance(1e-4f));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
