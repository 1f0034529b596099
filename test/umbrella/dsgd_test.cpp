// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/dsgd.hpp>: the umbrella header compiles alone, as the only include, and brings
// every family's entry points (a cluster spec, a placement, a trainer type, a saver, a tensor).
#include <dsgd/dsgd.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(dsgd_test)

static_assert(dsgd::Device<dsgd::device::cpu>);
static_assert(dsgd::Placement<dsgd::placement::round_robin>);
static_assert(dsgd::Optimizer<dsgd::optim::momentum, dsgd::device::cpu>);
static_assert(dsgd::UpdateRule<dsgd::update::sync_average>);

BOOST_AUTO_TEST_SUITE(umbrella)

BOOST_AUTO_TEST_CASE(one_include_is_enough_to_describe_and_place_a_cluster) {
  auto spec = dsgd::cluster::cluster_spec::from_json_string(
      R"({"ps": ["localhost:2222", "localhost:2223"], "worker": ["localhost:2224"]})");
  BOOST_TEST(spec.num_tasks("ps") == 2u);
  BOOST_TEST(dsgd::cluster::replicas::count(spec) == 1u);
  dsgd::tensor<dsgd::device::cpu> w(dsgd::device::cpu{}, dsgd::shape{2, 2});
  BOOST_TEST(w.size() == 4u);
  using trainer =
      dsgd::trainer<dsgd::device::cpu, dsgd::placement::round_robin, dsgd::update::sync_average, dsgd::optim::momentum>;
  trainer::options o{.connection = {.token = "t"}};
  BOOST_CHECK_NO_THROW(dsgd::validate(o));
  o.serving.step_timeout = std::chrono::milliseconds{0};
  BOOST_CHECK_EXCEPTION(dsgd::validate(o), dsgd::error, [](const dsgd::error& e) {
    return std::string(e.what()).find("trainer_options.serving.step_timeout") != std::string::npos;
  });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
