// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/optim/sgd.hpp>: a hand-computed step.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/sgd.hpp>

#include <boost/test/unit_test.hpp>

#include <vector>

BOOST_AUTO_TEST_SUITE(optim_sgd_test)

namespace {

namespace tt = boost::test_tools;
using cpu = dsgd::device::cpu;
using cpu_vector = cpu::vector<float>;

std::vector<float> to_std(const cpu_vector& v) { return {v.begin(), v.end()}; }

}  // namespace

static_assert(dsgd::Optimizer<dsgd::optim::sgd, dsgd::device::cpu>);

BOOST_AUTO_TEST_SUITE(optimizers_on_cpu)

BOOST_AUTO_TEST_CASE(sgd_steps_against_the_scaled_gradient) {
  cpu_vector w(3, 1.f);
  const cpu_vector g = std::vector<float>{2.f, -4.f, 0.f};
  dsgd::optim::sgd::state<cpu> s(cpu{}, 3);
  dsgd::optim::sgd{0.5f}.apply(cpu{}, s, w.data(), g.data(), 3, 0.5f);
  BOOST_TEST(to_std(w) == (std::vector<float>{0.5f, 2.f, 1.f}), tt::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
