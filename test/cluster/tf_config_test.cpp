// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/cluster/tf_config.hpp>. The samples follow the TF_CONFIG examples of
// TensorFlow's distributed-training documentation (Estimator RunConfig, MultiWorkerMirrored and
// ParameterServer strategies).
#include <dsgd/cluster/tf_config.hpp>

#include <support/error_checks.hpp>

#include <boost/test/unit_test.hpp>

#include <string>

BOOST_AUTO_TEST_SUITE(tf_config_test)

using dsgd::cluster::tf_config;
using dsgd::test::contains;

namespace {

const std::string tf2_cluster = R"("cluster": {"chief": ["host0:2222"],
                                                "ps": ["host1:2222", "host2:2222"],
                                                "worker": ["host3:2222", "host4:2222", "host5:2222"]})";

tf_config tf2(const std::string& task) { return tf_config::parse("{" + tf2_cluster + ", \"task\": " + task + "}"); }

// The message of the error parsing @p text fails with (bad_cluster_spec).
std::string error_of(const std::string& text) {
  return dsgd::test::error_of([&] { (void)tf_config::parse(text); }, dsgd::errc::bad_cluster_spec);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cluster_tf_config)

BOOST_AUTO_TEST_CASE(a_tf2_worker_gets_cluster_and_task_and_is_not_chief) {
  const auto c = tf2(R"({"type": "worker", "index": 1})");
  BOOST_TEST(c.task.job == "worker");
  BOOST_TEST(c.task.index == 1);
  BOOST_TEST(c.cluster.num_tasks("worker") == 3u);
  BOOST_TEST(c.cluster.address("ps", 1).to_string() == "host2:2222");
  BOOST_TEST(!c.is_chief());
  BOOST_TEST(!tf2(R"({"type": "worker", "index": 0})").is_chief());  // the chief job exists
  BOOST_TEST(!tf2(R"({"type": "ps", "index": 0})").is_chief());
}

BOOST_AUTO_TEST_CASE(the_chief_job_task_is_the_chief) {
  const auto c = tf2(R"({"type": "chief", "index": 0})");
  BOOST_TEST(c.is_chief());
  BOOST_TEST(!c.is_evaluator());
}

BOOST_AUTO_TEST_CASE(an_evaluator_outside_the_cluster_is_accepted_and_not_chief) {
  const auto c = tf2(R"({"type": "evaluator", "index": 0})");
  BOOST_TEST(c.is_evaluator());
  BOOST_TEST(!c.is_chief());
  BOOST_TEST(!c.cluster.has_job("evaluator"));
  BOOST_TEST(contains(error_of("{" + tf2_cluster + R"(, "task": {"type": "evaluator", "index": 1}})"),
                      "field \"task.index\" of the evaluator must be 0"));
}

BOOST_AUTO_TEST_CASE(in_tf1_style_worker_zero_is_the_chief) {
  const std::string cluster = R"({"cluster": {"worker": ["localhost:12345", "localhost:23456"]}, "task": )";
  BOOST_TEST(tf_config::parse(cluster + R"({"type": "worker", "index": 0}})").is_chief());
  BOOST_TEST(!tf_config::parse(cluster + R"({"type": "worker", "index": 1}})").is_chief());
}

BOOST_AUTO_TEST_CASE(a_master_job_makes_master_zero_the_chief) {
  const auto c = tf_config::parse(R"({"cluster": {"master": ["m:1"], "worker": ["w:1"], "ps": ["p:1"]},
                                      "task": {"type": "worker", "index": 0}})");
  BOOST_TEST(!c.is_chief());
  BOOST_TEST(dsgd::cluster::is_chief(c.cluster, {"master", 0}));
}

BOOST_AUTO_TEST_CASE(optional_fields_are_read_and_unknown_ones_ignored) {
  const auto c = tf_config::parse(R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "extra": 1},
                                      "environment": "cloud", "rpc_layer": "grpc", "unknown": [1, 2]})");
  BOOST_TEST(c.task.index == 0);  // absent index means 0, as in RunConfig
  BOOST_TEST(c.environment == "cloud");
  BOOST_TEST(c.rpc_layer == "grpc");
  BOOST_TEST(tf_config::parse(R"({"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": "1"}})")
                 .task.index == 1);
}

BOOST_AUTO_TEST_CASE(to_json_round_trips) {
  auto c = tf2(R"({"type": "ps", "index": 1})");
  c.environment = "cloud";
  BOOST_TEST(tf_config::parse(c.to_json().dump()) == c);
}

BOOST_AUTO_TEST_CASE(from_environment_reads_tf_config_and_treats_blank_as_unset) {
  using dsgd::cluster::env_from_map;
  BOOST_TEST(!tf_config::from_environment(env_from_map({})).has_value());
  BOOST_TEST(!tf_config::from_environment(env_from_map({{"TF_CONFIG", "  \n"}})).has_value());
  const auto c = tf_config::from_environment(
      env_from_map({{"TF_CONFIG", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}})"}}));
  BOOST_TEST(c.has_value());
  BOOST_TEST(c->task.to_string() == "worker:0");
}

BOOST_AUTO_TEST_CASE(a_missing_task_type_is_named) {
  BOOST_TEST(contains(error_of(R"({"cluster": {"worker": ["a:1"]}, "task": {"index": 0}})"),
                      "TF_CONFIG: missing field \"task.type\""));
}

BOOST_AUTO_TEST_CASE(a_missing_task_or_cluster_is_named) {
  BOOST_TEST(contains(error_of(R"({"cluster": {"worker": ["a:1"]}})"), "missing field \"task\""));
  BOOST_TEST(contains(error_of(R"({"task": {"type": "worker"}})"), "missing field \"cluster\""));
}

BOOST_AUTO_TEST_CASE(a_task_index_out_of_range_names_the_job_and_its_size) {
  const auto msg = error_of("{" + tf2_cluster + R"(, "task": {"type": "worker", "index": 3}})");
  BOOST_TEST(contains(msg, "field \"task.index\" is 3, out of range for job \"worker\", which has 3 task(s)"));
}

BOOST_AUTO_TEST_CASE(a_bad_task_index_is_named) {
  const std::string head = R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": )";
  BOOST_TEST(contains(error_of(head + "-1}}"), "field \"task.index\" is -1; it must be non-negative"));
  BOOST_TEST(contains(error_of(head + "1.5}}"), "field \"task.index\" must be a non-negative integer, got number"));
  BOOST_TEST(contains(error_of(head + "\"1x\"}}"), "field \"task.index\" is \"1x\""));
}

BOOST_AUTO_TEST_CASE(an_unknown_job_in_task_type_is_named_with_the_known_jobs) {
  const auto msg = error_of("{" + tf2_cluster + R"(, "task": {"type": "wroker", "index": 0}})");
  BOOST_TEST(contains(msg, "field \"task.type\" is \"wroker\", which is not a job of the cluster"));
  BOOST_TEST(contains(msg, "(jobs: chief, ps, worker)"));
}

BOOST_AUTO_TEST_CASE(malformed_json_gives_the_parse_position) {
  const auto msg = error_of("{\"cluster\": {\"worker\": [\"a:1\"]},\n \"task\": {\"type\": worker}}");
  BOOST_TEST(contains(msg, "TF_CONFIG: malformed JSON at line 2, column 18"));
}

BOOST_AUTO_TEST_CASE(two_chiefs_are_rejected) {
  BOOST_TEST(contains(error_of(R"({"cluster": {"chief": ["a:1", "b:2"]}, "task": {"type": "chief"}})"),
                      "field \"cluster.chief\" has 2 tasks; there may be at most one chief"));
}

BOOST_AUTO_TEST_CASE(cluster_errors_name_the_cluster_field) {
  const auto msg = error_of(R"({"cluster": {"worker": ["a:1", "a:1"]}, "task": {"type": "worker"}})");
  BOOST_TEST(contains(msg, "TF_CONFIG: field \"cluster\": duplicate address a:1: used by both worker:0 and worker:1"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
