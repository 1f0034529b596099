// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/tensor/ops.hpp>: elementwise arithmetic, shape checks and printing.
#include <dsgd/device/cpu.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/tensor/ops.hpp>
#include <dsgd/tensor/tensor.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(tensor_ops_test)

using cpu_tensor = dsgd::tensor<dsgd::device::cpu>;

BOOST_AUTO_TEST_SUITE(tensor_ops)

BOOST_AUTO_TEST_CASE(the_articles_w_and_b_add_multiply_and_divide) {
  cpu_tensor w({}, {2, 2}, dsgd::init::constant{2.f});
  cpu_tensor b({}, {2, 2}, dsgd::init::constant{5.f});
  BOOST_TEST(dsgd::to_string(w + b) == "[[7. 7.]\n [7. 7.]]");
  BOOST_TEST(dsgd::to_string(w * b) == "[[10. 10.]\n [10. 10.]]");
  BOOST_TEST(dsgd::to_string(w / b) == "[[0.4 0.4]\n [0.4 0.4]]");
  BOOST_TEST(dsgd::to_string(b - w) == "[[3. 3.]\n [3. 3.]]");
}

BOOST_AUTO_TEST_CASE(elementwise_ops_reject_mismatched_shapes) {
  cpu_tensor a({}, {2, 2});
  cpu_tensor b({}, {4});
  BOOST_CHECK_EXCEPTION(a + b, dsgd::error, [](const dsgd::error& e) {
    return e.code() == dsgd::errc::shape_mismatch && std::string(e.what()).find("[2, 2] and [4]") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(to_string_prints_vectors_and_3d_tensors_like_numpy) {
  cpu_tensor v({}, {3}, dsgd::init::constant{1.f});
  BOOST_TEST(dsgd::to_string(v) == "[1. 1. 1.]");
  cpu_tensor t({}, {2, 1, 2}, dsgd::init::constant{0.5f});
  BOOST_TEST(dsgd::to_string(t) == "[[[0.5 0.5]]\n\n [[0.5 0.5]]]");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
