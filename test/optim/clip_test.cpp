// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/optim/clip.hpp>: the global norm over several arrays against a hand-computed
// one, clipping that keeps the direction and brings the norm to clip_norm (tf.clip_by_global_norm),
// nothing changed below the threshold or for a non-finite norm, over dsgd::tensor and
// std::span alike, and a bad clip_norm named.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/clip.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/tensor/tensor.hpp>

#include <support/error_checks.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <span>
#include <vector>

BOOST_AUTO_TEST_SUITE(optim_clip_test)

namespace {

namespace tt = boost::test_tools;
using cpu = dsgd::device::cpu;

}  // namespace

BOOST_AUTO_TEST_CASE(the_global_norm_is_the_norm_of_all_arrays_together) {
  // 3-4-12-84: sqrt(9 + 16 + 144 + 7056) = 85.
  std::vector<float> a{3.f, 4.f}, b{12.f}, c{}, d{84.f};
  const std::vector<std::span<float>> all{a, b, c, d};
  BOOST_TEST(dsgd::optim::global_norm(cpu{}, all) == 85.f);
  BOOST_TEST(dsgd::optim::global_norm(cpu{}, std::vector<std::span<float>>{}) == 0.f);
}

BOOST_AUTO_TEST_CASE(clipping_scales_every_array_by_clip_norm_over_the_global_norm) {
  std::vector<float> a{3.f, 4.f}, b{12.f, 0.f, -84.f};
  std::vector<std::span<float>> all{a, b};
  const float norm = dsgd::optim::clip_by_global_norm(cpu{}, all, 17.f);
  BOOST_TEST(norm == 85.f);  // the norm before clipping, as TensorFlow returns it
  // Scale 17 / 85 = 0.2 on every element: the direction of the whole update is kept.
  BOOST_TEST(a == (std::vector<float>{0.6f, 0.8f}), tt::tolerance(1e-6f) << tt::per_element());
  BOOST_TEST(b[0] == 2.4f, tt::tolerance(1e-6f));
  BOOST_TEST(b[1] == 0.f);
  BOOST_TEST(b[2] == -16.8f, tt::tolerance(1e-6f));
  BOOST_TEST(dsgd::optim::global_norm(cpu{}, all) == 17.f, tt::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE(gradients_within_the_norm_are_left_exactly_as_they_are) {
  std::vector<float> a{0.3f, -0.4f};
  std::vector<std::span<float>> all{a};
  BOOST_TEST(dsgd::optim::clip_by_global_norm(cpu{}, all, 0.5f) == 0.5f, tt::tolerance(1e-6f));
  BOOST_TEST(dsgd::optim::clip_by_global_norm(cpu{}, all, 10.f) == 0.5f, tt::tolerance(1e-6f));
  BOOST_TEST(a[0] == 0.3f);
  BOOST_TEST(a[1] == -0.4f);
}

BOOST_AUTO_TEST_CASE(tensors_are_clipped_in_place) {
  std::vector<dsgd::tensor<cpu>> grads;
  grads.emplace_back(cpu{}, dsgd::shape{2, 2}, dsgd::init::constant{1.f});  // norm 2
  grads.emplace_back(cpu{}, dsgd::shape{5}, dsgd::init::zeros{});
  const float norm = dsgd::optim::clip_by_global_norm(cpu{}, grads, 1.f);
  BOOST_TEST(norm == 2.f);
  for (float x : grads[0].to_host()) BOOST_TEST(x == 0.5f);
  for (float x : grads[1].to_host()) BOOST_TEST(x == 0.f);
  BOOST_TEST(dsgd::optim::global_norm(cpu{}, grads) == 1.f);
}

BOOST_AUTO_TEST_CASE(a_non_finite_norm_leaves_the_gradients_for_the_push_check_to_name) {
  std::vector<float> a{1.f, std::numeric_limits<float>::infinity()}, b{2.f};
  std::vector<std::span<float>> all{a, b};
  BOOST_TEST(std::isinf(dsgd::optim::clip_by_global_norm(cpu{}, all, 1.f)));
  BOOST_TEST(a[0] == 1.f);
  BOOST_TEST(b[0] == 2.f);
  a[1] = std::numeric_limits<float>::quiet_NaN();
  BOOST_TEST(std::isnan(dsgd::optim::clip_by_global_norm(cpu{}, all, 1.f)));
  BOOST_TEST(b[0] == 2.f);
}

BOOST_AUTO_TEST_CASE(a_clip_norm_that_is_not_a_positive_number_is_named) {
  std::vector<float> a{1.f};
  std::vector<std::span<float>> all{a};
  for (float bad : {0.f, -1.f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    const auto msg =
        dsgd::test::error_of([&] { dsgd::optim::clip_by_global_norm(cpu{}, all, bad); }, dsgd::errc::invalid_argument);
    BOOST_TEST(dsgd::test::contains(msg, "clip_by_global_norm: clip_norm is"), msg);
  }
  BOOST_TEST(a[0] == 1.f);
}

BOOST_AUTO_TEST_SUITE_END()
