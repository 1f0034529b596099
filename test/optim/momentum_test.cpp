// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/optim/momentum.hpp>: hand-computed steps, plain and Nesterov.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/momentum.hpp>

#include <boost/test/unit_test.hpp>

BOOST_AUTO_TEST_SUITE(optim_momentum_test)

namespace {

namespace tt = boost::test_tools;
using cpu = dsgd::device::cpu;
using cpu_vector = cpu::vector<float>;

}  // namespace

static_assert(dsgd::Optimizer<dsgd::optim::momentum, dsgd::device::cpu>);

BOOST_AUTO_TEST_SUITE(optimizers_on_cpu)

BOOST_AUTO_TEST_CASE(momentum_accumulates_velocity_as_tensorflow_does) {
  // lr 0.1, m 0.9, g = 1 twice: v = 1 then 1.9; w = 1 - 0.1 = 0.9, then 0.9 - 0.19 = 0.71.
  cpu_vector w(1, 1.f);
  const cpu_vector g(1, 1.f);
  const dsgd::optim::momentum opt{0.1f, 0.9f, false};
  dsgd::optim::momentum::state<cpu> s(cpu{}, 1);
  opt.apply(cpu{}, s, w.data(), g.data(), 1);
  BOOST_TEST(w[0] == 0.9f, tt::tolerance(1e-6f));
  opt.apply(cpu{}, s, w.data(), g.data(), 1);
  BOOST_TEST(s.velocity[0] == 1.9f, tt::tolerance(1e-6f));
  BOOST_TEST(w[0] == 0.71f, tt::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(nesterov_looks_ahead_with_the_updated_velocity) {
  // v = 1: w = 1 - 0.1 (1 + 0.9) = 0.81; v = 1.9: w = 0.81 - 0.1 (1 + 1.71) = 0.539.
  cpu_vector w(1, 1.f);
  const cpu_vector g(1, 1.f);
  const dsgd::optim::momentum opt{0.1f, 0.9f, true};
  dsgd::optim::momentum::state<cpu> s(cpu{}, 1);
  opt.apply(cpu{}, s, w.data(), g.data(), 1);
  BOOST_TEST(w[0] == 0.81f, tt::tolerance(1e-6f));
  opt.apply(cpu{}, s, w.data(), g.data(), 1);
  BOOST_TEST(w[0] == 0.539f, tt::tolerance(1e-6f));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
