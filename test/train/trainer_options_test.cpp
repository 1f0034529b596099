// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/train/trainer_options.hpp>: validate() names a bad field by its path, and
// every role refuses a bad trainer_options the same way before any I/O; the parts each role
// takes from the options.
#include <dsgd/train/trainer_options.hpp>
#include <dsgd/trainer.hpp>

#include <support/error_checks.hpp>
#include <support/loopback_cluster.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>

BOOST_AUTO_TEST_SUITE(trainer_options_test)

using namespace std::chrono_literals;
using cpu = dsgd::device::cpu;
using trainer = dsgd::trainer<cpu, dsgd::placement::round_robin, dsgd::update::sync_average, dsgd::optim::sgd>;

BOOST_AUTO_TEST_SUITE(trainer_options)

BOOST_AUTO_TEST_CASE(validate_names_the_bad_field_by_its_path) {
  trainer::options o;
  BOOST_CHECK_NO_THROW(dsgd::validate(o));  // the defaults are valid (request_timeout 0: derived)
  o.serving.step_timeout = 0ms;
  auto msg = dsgd::test::error_of([&] { dsgd::validate(o); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "trainer_options.serving.step_timeout"));
  o = {};
  o.requests.max_backoff = 1ms;
  o.requests.initial_backoff = 2ms;
  msg = dsgd::test::error_of([&] { dsgd::validate(o); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "trainer_options.requests.max_backoff"));
  o = {};
  o.connection.chunk_bytes = 0;
  msg = dsgd::test::error_of([&] { dsgd::validate(o); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "trainer_options.connection.chunk_bytes"));
}

BOOST_AUTO_TEST_CASE(a_trainer_of_either_role_refuses_a_bad_option_before_any_io) {
  const auto spec = dsgd::test::loopback_cluster(1, 1);
  trainer::options o;
  o.connection.log = [](std::string_view) {};
  o.serving.step_timeout = 0ms;
  for (const char* job : {"ps", "worker"}) {
    BOOST_TEST_CONTEXT(job) {
      const auto msg = dsgd::test::error_of([&] { trainer(spec, {job, 0}, o); }, dsgd::errc::invalid_argument);
      BOOST_TEST(dsgd::test::contains(msg, "trainer_options.serving.step_timeout"));
    }
  }
}

BOOST_AUTO_TEST_CASE(each_role_takes_its_part_of_the_options) {
  trainer::options o;
  o.connection.token = "t";
  o.serving.step_timeout = 5s;
  o.serving.ready_timeout = 7s;
  o.optimizer = {0.5f};
  const auto ps = dsgd::ps_options_of(o);
  BOOST_TEST(ps.connection.token == "t");
  BOOST_TEST((ps.serving.step_timeout == 5s));
  BOOST_TEST(ps.optimizer.learning_rate == 0.5f);
  auto c = dsgd::client_options_of(o);
  BOOST_TEST(c.connection.token == "t");
  BOOST_TEST((c.requests.request_timeout == 37s));  // max(5 s, 7 s) + 30 s
  o.requests.request_timeout = 3s;
  c = dsgd::client_options_of(o);
  BOOST_TEST((c.requests.request_timeout == 3s));  // given: kept
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
