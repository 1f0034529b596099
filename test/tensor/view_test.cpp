// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/tensor/view.hpp>: views point into the buffers they are made of (vectors,
// spans, arrays, host tensors; never a tensor off the host), take a tensor's shape, and name the
// variable and both sizes when a buffer is null or empty or the sizes disagree. Training through
// views is in test/train/worker_views_test.cpp.
#include <dsgd/device/cpu.hpp>
#include <dsgd/tensor/view.hpp>

#include <support/error_checks.hpp>
#include <support/off_host_device.hpp>

#include <boost/test/unit_test.hpp>

#include <array>
#include <span>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(tensor_view_test)

using cpu = dsgd::device::cpu;
using dsgd::test::contains;
using dsgd::test::error_of;

static_assert(dsgd::float_buffer<std::vector<float>>);
static_assert(dsgd::float_buffer<std::span<float>>);
static_assert(dsgd::float_buffer<std::array<float, 3>>);
static_assert(dsgd::float_buffer<dsgd::tensor<cpu>>);
static_assert(!dsgd::float_buffer<dsgd::tensor<dsgd::test::off_host>>);  // device memory
static_assert(!dsgd::float_buffer<std::vector<double>>);
static_assert(!dsgd::float_buffer<std::vector<int>>);

BOOST_AUTO_TEST_CASE(a_view_points_into_its_buffers_and_has_their_shape) {
  std::vector<float> w(12, 1.f), dw(12, 2.f);
  const auto v = dsgd::view("w", {3, 4}, w, dw);
  BOOST_TEST(v.name == "w");
  BOOST_TEST(v.shape.to_string() == "[3, 4]");
  BOOST_TEST(v.values.data() == w.data());
  BOOST_TEST(v.gradients.data() == dw.data());
  BOOST_TEST(v.values.size() == 12u);

  const auto flat = dsgd::view("b", std::span<float>(w));
  BOOST_TEST(flat.shape.to_string() == "[12]");
  BOOST_TEST(flat.gradients.empty());

  dsgd::tensor<cpu> t({}, {2, 5}), g({}, {2, 5});
  const auto tv = dsgd::view("t", t, g);
  BOOST_TEST(tv.shape.to_string() == "[2, 5]");
  BOOST_TEST(tv.values.data() == t.data());
  BOOST_TEST(tv.gradients.data() == g.data());
}

BOOST_AUTO_TEST_CASE(views_of_a_models_buffers_keep_their_order_names_and_memory) {
  std::vector<std::vector<float>> values{std::vector<float>(12), std::vector<float>(5)};
  std::vector<std::vector<float>> grads{std::vector<float>(12), std::vector<float>(5)};
  const auto vs = dsgd::views(values, grads, {"w", "b"}, {{3, 4}, {5}});
  BOOST_TEST_REQUIRE(vs.size() == 2u);
  BOOST_TEST(vs[0].name == "w");
  BOOST_TEST(vs[1].name == "b");
  BOOST_TEST(vs[0].shape.to_string() == "[3, 4]");
  BOOST_TEST(vs[1].values.data() == values[1].data());
  BOOST_TEST(vs[1].gradients.data() == grads[1].data());

  const auto unnamed = dsgd::views(values);
  BOOST_TEST(unnamed[1].name == "var1");
  BOOST_TEST(unnamed[0].shape.to_string() == "[12]");
  BOOST_TEST(unnamed[0].gradients.empty());

  std::vector<dsgd::tensor<cpu>> tv, tg;
  tv.emplace_back(cpu{}, dsgd::shape{2, 3});
  tg.emplace_back(cpu{}, dsgd::shape{2, 3});
  const auto of_tensors = dsgd::views(tv, tg, {"w"});
  BOOST_TEST(of_tensors[0].shape.to_string() == "[2, 3]");
  BOOST_TEST(of_tensors[0].values.data() == tv[0].data());
}

BOOST_AUTO_TEST_CASE(a_null_or_empty_buffer_is_a_named_error) {
  auto msg = error_of([] { dsgd::view("w", {3, 4}, std::span<float>()); }, dsgd::errc::invalid_argument);
  BOOST_TEST(
      contains(msg, "variable 'w' (0) has no values buffer (null or empty); expected 12 floats for shape [3, 4]"));

  std::vector<float> w(12);
  msg = error_of(
      [&] {
        dsgd::check_view(dsgd::variable_view{"w", {3, 4}, w, {}}, 2, "push", true);
      },
      dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "push: variable 'w' (2) has no gradients buffer (null or empty); expected 12 floats"));
}

BOOST_AUTO_TEST_CASE(sizes_that_disagree_are_named_errors) {
  std::vector<float> w(10), dw(11);
  auto msg = error_of([&] { dsgd::view("w", {3, 4}, w); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(contains(msg, "variable 'w' (0) has 10 values; shape [3, 4] has 12 elements"));
  msg = error_of([&] { dsgd::view("w", std::span<float>(w), dw); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(contains(msg, "variable 'w' (0) has 11 gradients for 10 values"));

  std::vector<std::vector<float>> values{w, w}, grads{dw};
  msg = error_of([&] { dsgd::views(values, grads); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(contains(msg, "dsgd::views: 1 gradients buffers for 2 values buffers"));
  msg = error_of([&] { dsgd::views(values, {"a", "b"}, {{10}, {2, 4}}); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(contains(msg, "dsgd::views: variable 'b' (1) has 10 values; shape [2, 4] has 8 elements"));
}

BOOST_AUTO_TEST_SUITE_END()
