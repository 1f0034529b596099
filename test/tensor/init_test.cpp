// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/tensor/init.hpp>: constant, seeded normal, uniform and Glorot initialisers.
#include <dsgd/device/cpu.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/tensor/tensor.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

BOOST_AUTO_TEST_SUITE(tensor_init_test)

using cpu_tensor = dsgd::tensor<dsgd::device::cpu>;

BOOST_AUTO_TEST_SUITE(tensor_on_cpu)

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

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
