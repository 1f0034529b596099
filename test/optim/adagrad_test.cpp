// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/optim/adagrad.hpp>: hand-computed steps from the initial accumulator.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/adagrad.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>

BOOST_AUTO_TEST_SUITE(optim_adagrad_test)

namespace {

namespace tt = boost::test_tools;
using cpu = dsgd::device::cpu;
using cpu_vector = cpu::vector<float>;

}  // namespace

static_assert(dsgd::Optimizer<dsgd::optim::adagrad, dsgd::device::cpu>);

BOOST_AUTO_TEST_SUITE(optimizers_on_cpu)

BOOST_AUTO_TEST_CASE(adagrad_starts_from_the_initial_accumulator) {
  // a = 0.5 + 2^2 = 4.5, w = 1 - 0.1 * 2 / (sqrt(4.5) + 1e-7); then a = 8.5.
  cpu_vector w(1, 1.f);
  const cpu_vector g(1, 2.f);
  const dsgd::optim::adagrad opt{0.1f, 0.5f, 1e-7f};
  dsgd::optim::adagrad::state<cpu> s(cpu{}, 1);
  opt.apply(cpu{}, s, w.data(), g.data(), 1);
  const double w1 = 1.0 - 0.2 / (std::sqrt(4.5) + 1e-7);
  BOOST_TEST(s.steps == 1u);
  BOOST_TEST(s.accumulator[0] == 4.5f, tt::tolerance(1e-6f));
  BOOST_TEST(double{w[0]} == w1, tt::tolerance(1e-6));
  opt.apply(cpu{}, s, w.data(), g.data(), 1);
  BOOST_TEST(s.accumulator[0] == 8.5f, tt::tolerance(1e-6f));
  BOOST_TEST(double{w[0]} == w1 - 0.2 / (std::sqrt(8.5) + 1e-7), tt::tolerance(1e-6));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
