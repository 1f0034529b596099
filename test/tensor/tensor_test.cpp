// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/tensor/tensor.hpp> on <dsgd/device/cpu.hpp>. The initialisers are in
// init_test.cpp, the arithmetic in ops_test.cpp.
#include <dsgd/device/cpu.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/tensor/tensor.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

BOOST_AUTO_TEST_SUITE(tensor_test)

static_assert(dsgd::Device<dsgd::device::cpu>);
static_assert(!dsgd::Device<int>);

using cpu_tensor = dsgd::tensor<dsgd::device::cpu>;

BOOST_AUTO_TEST_SUITE(tensor_on_cpu)

BOOST_AUTO_TEST_CASE(a_new_tensor_is_zero_and_has_its_shape) {
  cpu_tensor t({}, {2, 3});
  BOOST_TEST(t.size() == 6u);
  BOOST_TEST(t.bytes() == 24u);
  BOOST_TEST(t.shape().rank() == 2u);
  BOOST_TEST(t.shape().to_string() == "[2, 3]");
  auto h = t.to_host();
  BOOST_TEST(std::all_of(h.begin(), h.end(), [](float x) { return x == 0.f; }));
}

BOOST_AUTO_TEST_CASE(assign_rejects_a_wrong_number_of_values) {
  cpu_tensor t({}, {2, 2});
  std::vector<float> three{1, 2, 3};
  BOOST_CHECK_EXCEPTION(t.assign(three), dsgd::error, [](const dsgd::error& e) {
    return e.code() == dsgd::errc::shape_mismatch && std::string(e.what()).find("[2, 2]") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(to_copies_between_devices) {
  cpu_tensor t({}, {3}, dsgd::init::constant{1.5f});
  auto u = t.to(dsgd::device::cpu{});
  BOOST_TEST(u.to_host() == t.to_host());
  BOOST_TEST(u.data() != t.data());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
