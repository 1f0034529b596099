// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/cluster/device_spec.hpp>.
#include <dsgd/cluster/device_spec.hpp>

#include <support/error_checks.hpp>

#include <boost/test/unit_test.hpp>

#include <optional>
#include <string>
#include <string_view>

BOOST_AUTO_TEST_SUITE(device_spec_test)

using dsgd::cluster::device_spec;
using kind = dsgd::device::spec::kind;

static_assert(std::is_aggregate_v<device_spec>);

namespace {

// A bad device string: see dsgd::test::check_rejected.
void check_rejected(std::string_view text, std::size_t column, std::string_view reason) {
  dsgd::test::check_rejected([](std::string_view t) { return device_spec::parse(t); }, text, column, reason);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cluster_device_spec)

BOOST_AUTO_TEST_CASE(the_strings_of_the_source_article_parse) {
  const auto ps = device_spec::parse("/job:ps/task:0");
  BOOST_TEST(ps.job.value() == "ps");
  BOOST_TEST(ps.task.value() == 0);
  BOOST_TEST(!ps.replica.has_value());
  BOOST_TEST(!ps.device.has_value());

  const auto w = device_spec::parse("/job:worker/task:1/cpu:0");
  BOOST_TEST(w.job.value() == "worker");
  BOOST_TEST(w.task.value() == 1);
  BOOST_TEST((w.device.value() == dsgd::device::spec{kind::cpu, 0}));
}

BOOST_AUTO_TEST_CASE(full_tf_forms_parse_every_field) {
  const auto a = device_spec::parse("/job:worker/task:0/device:GPU:1");
  BOOST_TEST((a == device_spec{"worker", std::nullopt, 0, dsgd::device::spec{kind::cuda, 1}}));
  const auto b = device_spec::parse("/job:worker/replica:0/task:1/device:CPU:0");
  BOOST_TEST((b == device_spec{"worker", 0, 1, dsgd::device::spec{kind::cpu, 0}}));
  const auto c = device_spec::parse("/task:3/job:ps_2");  // any order, as TF accepts
  BOOST_TEST((c == device_spec{"ps_2", std::nullopt, 3, std::nullopt}));
}

BOOST_AUTO_TEST_CASE(partial_forms_leave_the_rest_unspecified) {
  BOOST_TEST((device_spec::parse("/job:ps") == device_spec{"ps", {}, {}, {}}));
  BOOST_TEST((device_spec::parse("/task:1") == device_spec{{}, {}, 1, {}}));
  BOOST_TEST((device_spec::parse("/cpu:0") == device_spec{{}, {}, {}, dsgd::device::spec{kind::cpu, 0}}));
  BOOST_TEST((device_spec::parse("/gpu:1") == device_spec{{}, {}, {}, dsgd::device::spec{kind::cuda, 1}}));
  BOOST_TEST(device_spec::parse("").empty());
}

BOOST_AUTO_TEST_CASE(to_string_is_canonical_and_round_trips) {
  BOOST_TEST(device_spec::parse("/task:1/job:worker/gpu:0").to_string() == "/job:worker/task:1/device:GPU:0");
  for (auto text : {"/job:ps/task:0", "/job:worker/replica:0/task:1/device:CPU:0", "/gpu:1", "/job:ps", ""}) {
    const auto s = device_spec::parse(text);
    BOOST_TEST(device_spec::parse(s.to_string()) == s);
  }
}

BOOST_AUTO_TEST_CASE(merged_with_lets_the_other_spec_win_field_by_field) {
  const auto base = device_spec::parse("/job:ps/task:0/cpu:0");
  const auto other = device_spec::parse("/task:2/gpu:1");
  BOOST_TEST(base.merged_with(other).to_string() == "/job:ps/task:2/device:GPU:1");
  BOOST_TEST(other.merged_with(base).to_string() == "/job:ps/task:0/device:CPU:0");
  BOOST_TEST(base.merged_with(device_spec{}) == base);
}

BOOST_AUTO_TEST_CASE(with_defaults_fills_only_what_is_unspecified) {
  // replica_device_setter: a variable pinned to a GPU keeps it and gains the ps task.
  const auto pinned = device_spec::parse("/device:GPU:0");
  BOOST_TEST(pinned.with_defaults(device_spec::parse("/job:ps/task:1/cpu:0")).to_string() ==
             "/job:ps/task:1/device:GPU:0");
  BOOST_TEST(device_spec{}.with_defaults(device_spec::parse("/job:ps/task:1")).to_string() == "/job:ps/task:1");
}

BOOST_AUTO_TEST_CASE(an_unknown_component_is_rejected_at_its_name) {
  check_rejected("/jb:ps", 1, "unknown component \"jb\"");
  check_rejected("/job:ps/tsk:0", 8, "unknown component \"tsk\"");
}

BOOST_AUTO_TEST_CASE(a_missing_value_is_rejected_after_the_colon) {
  check_rejected("/job:", 5, "missing value for \"job\"");
  check_rejected("/job:ps/task:", 13, "missing value for \"task\"");
}

BOOST_AUTO_TEST_CASE(a_component_without_colon_is_rejected) {
  check_rejected("/job", 4, "expected ':' and a value after \"job\"");
  check_rejected("/job:ps/device", 14, "expected ':' and a device kind");
}

BOOST_AUTO_TEST_CASE(a_non_numeric_task_is_rejected_at_its_first_character) {
  check_rejected("/job:ps/task:x", 13, "expected a task index (digits), got 'x'");
  check_rejected("/replica:-1", 9, "replica index must be non-negative");
  check_rejected("/task:99999999999", 6, "too large");
}

BOOST_AUTO_TEST_CASE(a_duplicated_component_is_rejected_and_names_the_first) {
  check_rejected("/job:a/job:b", 7, "duplicate \"job\" component; the first is at column 1");
  check_rejected("/cpu:0/device:GPU:0", 7, "duplicate \"device\" component");
}

BOOST_AUTO_TEST_CASE(trailing_garbage_is_rejected_where_it_starts) {
  check_rejected("/job:ps/task:0xyz", 14, "unexpected character 'x' after the task index");
  check_rejected("/job:ps/", 8, "trailing '/'");
  check_rejected("/job:ps//task:0", 8, "empty component");
  check_rejected("/job:ps/task:0/gpu:1 ", 20, "unexpected character ' '");
}

BOOST_AUTO_TEST_CASE(a_bad_job_name_is_rejected_at_the_bad_character) {
  check_rejected("/job:wor-ker", 8, "invalid character '-' in job name");
  check_rejected("/job:1ps", 5, "invalid character '1' in job name");
}

BOOST_AUTO_TEST_CASE(device_errors_point_into_the_whole_string) {
  check_rejected("/job:ps/task:0/cuda:x", 20, "expected a device index");
  check_rejected("/job:ps/device:TPU:0", 15, "unknown device kind \"TPU\"");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
