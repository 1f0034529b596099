// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/tensor/tensor.hpp>, <dsgd/tensor/init.hpp> and <dsgd/device/cpu.hpp>.
#include <dsgd/device/cpu.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/tensor/tensor.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

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

BOOST_AUTO_TEST_CASE(constant_fills_every_element) {
  cpu_tensor t({}, {2, 2}, dsgd::init::constant{5.f});
  auto h = t.to_host();
  BOOST_TEST(h == (std::vector<float>{5, 5, 5, 5}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(seeded_initialisers_are_reproducible_and_seed_dependent) {
  cpu_tensor a({}, {1000}, dsgd::init::normal{0.f, 1.f, 42});
  cpu_tensor b({}, {1000}, dsgd::init::normal{0.f, 1.f, 42});
  cpu_tensor c({}, {1000}, dsgd::init::normal{0.f, 1.f, 43});
  BOOST_TEST(a.to_host() == b.to_host());
  BOOST_TEST(a.to_host() != c.to_host());
}

BOOST_AUTO_TEST_CASE(normal_has_the_requested_moments) {
  cpu_tensor t({}, {100000}, dsgd::init::normal{3.f, 2.f, 7});
  auto h = t.to_host();
  double mean = std::accumulate(h.begin(), h.end(), 0.0) / h.size();
  double var = 0;
  for (float x : h) var += (x - mean) * (x - mean);
  var /= h.size();
  BOOST_TEST(mean == 3.0, boost::test_tools::tolerance(0.01));
  BOOST_TEST(std::sqrt(var) == 2.0, boost::test_tools::tolerance(0.01));
}

BOOST_AUTO_TEST_CASE(uniform_and_glorot_stay_in_their_bounds) {
  cpu_tensor u({}, {10000}, dsgd::init::uniform{-0.5f, 0.25f, 1});
  auto h = u.to_host();
  BOOST_TEST(*std::min_element(h.begin(), h.end()) >= -0.5f);
  BOOST_TEST(*std::max_element(h.begin(), h.end()) < 0.25f);
  BOOST_TEST(*std::min_element(h.begin(), h.end()) < -0.45f);  // the range is actually used

  cpu_tensor g({}, {784, 256}, dsgd::init::glorot_uniform{784, 256, 3});
  float limit = std::sqrt(6.f / (784 + 256));
  auto gh = g.to_host();
  BOOST_TEST(*std::max_element(gh.begin(), gh.end()) <= limit);
  BOOST_TEST(*std::max_element(gh.begin(), gh.end()) > 0.9f * limit);
}

BOOST_AUTO_TEST_CASE(assign_rejects_a_wrong_number_of_values) {
  cpu_tensor t({}, {2, 2});
  std::vector<float> three{1, 2, 3};
  BOOST_CHECK_EXCEPTION(t.assign(three), dsgd::error, [](const dsgd::error& e) {
    return e.code() == dsgd::errc::shape_mismatch &&
           std::string(e.what()).find("[2, 2]") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(to_copies_between_devices) {
  cpu_tensor t({}, {3}, dsgd::init::constant{1.5f});
  auto u = t.to(dsgd::device::cpu{});
  BOOST_TEST(u.to_host() == t.to_host());
  BOOST_TEST(u.data() != t.data());
}

BOOST_AUTO_TEST_SUITE_END()

#include <dsgd/tensor/ops.hpp>

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
    return e.code() == dsgd::errc::shape_mismatch &&
           std::string(e.what()).find("[2, 2] and [4]") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(to_string_prints_vectors_and_3d_tensors_like_numpy) {
  cpu_tensor v({}, {3}, dsgd::init::constant{1.f});
  BOOST_TEST(dsgd::to_string(v) == "[1. 1. 1.]");
  cpu_tensor t({}, {2, 1, 2}, dsgd::init::constant{0.5f});
  BOOST_TEST(dsgd::to_string(t) == "[[[0.5 0.5]]\n\n [[0.5 0.5]]]");
}

BOOST_AUTO_TEST_SUITE_END()
