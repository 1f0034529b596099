// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/device/cpu.hpp>: the host device models dsgd::Device, runs Thrust kernels
// through its policy on host vectors, and names itself.
#include <dsgd/device/cpu.hpp>

#include <boost/test/unit_test.hpp>

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/reduce.h>

#include <cstddef>
#include <type_traits>

BOOST_AUTO_TEST_SUITE(device_cpu_test)

using dsgd::device::cpu;

static_assert(dsgd::Device<cpu>);
static_assert(cpu::is_host);
static_assert(std::is_same_v<cpu::vector<float>, thrust::host_vector<float>>);

BOOST_AUTO_TEST_SUITE(cpu_device)

BOOST_AUTO_TEST_CASE(a_kernel_through_the_policy_writes_every_element) {
  cpu::vector<float> v(1000, 0.f);
  float* data = v.data();
  thrust::for_each_n(cpu::policy(), thrust::counting_iterator<std::size_t>(0), v.size(),
                     [data](std::size_t i) { data[i] = static_cast<float>(i); });
  cpu::synchronize();
  BOOST_TEST(thrust::reduce(cpu::policy(), v.begin(), v.end(), 0.0) == 999.0 * 1000.0 / 2.0);
}

BOOST_AUTO_TEST_CASE(it_names_itself_and_uses_at_least_one_thread) {
  BOOST_TEST(cpu::name() == "cpu");
  BOOST_TEST(cpu::threads() >= 1);
}

BOOST_AUTO_TEST_CASE(every_cpu_is_the_same_device) {
  BOOST_TEST((cpu{} == cpu{}));
  BOOST_TEST(!(cpu{} != cpu{}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
