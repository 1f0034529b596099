// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/cluster/cluster_spec.hpp>.
#include <dsgd/cluster/cluster_spec.hpp>

#include <support/error_checks.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(cluster_spec_test)

using dsgd::cluster::cluster_spec;
using dsgd::cluster::task_address;
using dsgd::cluster::task_id;
using jobs_map = std::map<std::string, std::vector<std::string>>;

static_assert(std::is_aggregate_v<task_address>);
static_assert(std::is_aggregate_v<task_id>);
static_assert(std::is_nothrow_move_constructible_v<cluster_spec>);

namespace {

using dsgd::test::contains;
using dsgd::test::error_of;

std::string spec_error(const jobs_map& jobs) {
  return error_of([&] { cluster_spec c(jobs); }, dsgd::errc::bad_cluster_spec);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(cluster_cluster_spec)

BOOST_AUTO_TEST_CASE(a_spec_built_in_code_answers_every_query) {
  cluster_spec c({{"ps", {"localhost:2222"}}, {"worker", {"localhost:2223", "localhost:2224"}}});
  BOOST_TEST(c.jobs() == (std::vector<std::string>{"ps", "worker"}), boost::test_tools::per_element());
  BOOST_TEST(c.num_tasks("worker") == 2u);
  BOOST_TEST(c.num_tasks("ps") == 1u);
  BOOST_TEST(c.size() == 3u);
  BOOST_TEST(c.has_job("ps"));
  BOOST_TEST(!c.has_job("chief"));
  BOOST_TEST(c.address("worker", 1).host == "localhost");
  BOOST_TEST(c.address("worker", 1).port == 2224);
  BOOST_TEST(c.address(task_id{"ps", 0}).to_string() == "localhost:2222");
  BOOST_TEST(c.tasks("worker").size() == 2u);
  BOOST_TEST(c.contains(task_id{"worker", 1}));
  BOOST_TEST(!c.contains(task_id{"worker", 2}));
  BOOST_TEST(!c.contains(task_id{"evaluator", 0}));
  const auto ids = c.task_ids();
  BOOST_TEST(ids.size() == 3u);
  BOOST_TEST(ids[0].to_string() == "ps:0");
  BOOST_TEST(ids[2].to_string() == "worker:1");
}

BOOST_AUTO_TEST_CASE(the_source_article_cluster_is_accepted) {
  cluster_spec c({{"worker", {"10.0.0.1:2222", "10.0.0.2:2222", "10.0.0.3:2222"}}, {"ps", {"10.0.0.4:2222"}}});
  BOOST_TEST(c.num_tasks("worker") == 3u);
  BOOST_TEST(c.jobs().front() == "ps");  // sorted, as TF's ClusterSpec
}

BOOST_AUTO_TEST_CASE(task_id_prints_short_and_device_forms) {
  const task_id t{"ps", 0};
  BOOST_TEST(t.to_string() == "ps:0");
  BOOST_TEST(t.device_string() == "/job:ps/task:0");
  BOOST_TEST(t.to_device_spec().to_string() == "/job:ps/task:0");
  BOOST_TEST((task_id{"ps", 1} < task_id{"worker", 0}));
}

BOOST_AUTO_TEST_CASE(json_round_trips_in_tf_format) {
  cluster_spec c({{"chief", {"host0:2222"}}, {"ps", {"[::1]:2222", "host5:2223"}}, {"worker", {"host1:2222"}}});
  const auto j = c.to_json();
  BOOST_TEST(j.dump() == R"({"chief":["host0:2222"],"ps":["[::1]:2222","host5:2223"],"worker":["host1:2222"]})");
  BOOST_TEST(cluster_spec::from_json(j) == c);
  BOOST_TEST(cluster_spec::from_json_string(j.dump(2)) == c);
  BOOST_TEST(cluster_spec::from_json(cluster_spec().to_json()).empty());
}

BOOST_AUTO_TEST_CASE(ipv6_addresses_in_brackets_are_accepted) {
  cluster_spec c({{"ps", {"[::1]:2222"}}, {"worker", {"[fe80::1%eth0]:2223", "127.0.0.1:2224"}}});
  BOOST_TEST(c.address("ps", 0).host == "::1");
  BOOST_TEST(c.address("ps", 0).port == 2222);
  BOOST_TEST(c.address("worker", 0).to_string() == "[fe80::1%eth0]:2223");
  BOOST_TEST((task_address::parse("[::1]:65535") == task_address{"::1", 65535}));
}

BOOST_AUTO_TEST_CASE(a_file_in_tf_format_is_read) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("dsgd_cluster_spec_test_" +
                     std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + ".json");
  std::ofstream(path) << R"({"worker": ["a:1", "b:2"], "ps": ["c:3"]})";
  const auto c = cluster_spec::from_file(path.string());
  std::filesystem::remove(path);
  BOOST_TEST(c.address("worker", 1).to_string() == "b:2");
  BOOST_TEST(c.num_tasks("ps") == 1u);
}

BOOST_AUTO_TEST_CASE(a_missing_file_is_not_found_and_named) {
  const auto msg = error_of([] { cluster_spec::from_file("no/such/cluster.json"); }, dsgd::errc::not_found);
  BOOST_TEST(contains(msg, "\"no/such/cluster.json\""));
}

BOOST_AUTO_TEST_CASE(malformed_json_is_reported_with_line_and_column) {
  const auto msg = error_of([] { cluster_spec::from_json_string("{\"ps\": [\"a:1\",\n  ]}", "c.json"); },
                            dsgd::errc::bad_cluster_spec);
  BOOST_TEST(contains(msg, "c.json: malformed JSON at line 2, column 2 (byte 17): syntax error"));
}

BOOST_AUTO_TEST_CASE(a_number_beyond_a_double_is_a_named_error_not_a_foreign_exception) {
  const auto msg = error_of([] { cluster_spec::from_json_string("1e400", "c.json"); }, dsgd::errc::bad_cluster_spec);
  BOOST_TEST(contains(msg, "c.json: unusable JSON"));
}

BOOST_AUTO_TEST_CASE(duplicate_addresses_name_both_tasks) {
  const auto msg = spec_error({{"ps", {"localhost:2222"}}, {"worker", {"localhost:2223", "LOCALHOST:2222"}}});
  BOOST_TEST(contains(msg, "duplicate address"));
  BOOST_TEST(contains(msg, "ps:0"));
  BOOST_TEST(contains(msg, "worker:1"));
}

BOOST_AUTO_TEST_CASE(an_empty_job_is_rejected_by_name) {
  BOOST_TEST(contains(spec_error({{"ps", {}}, {"worker", {"a:1"}}}), "job \"ps\" has no tasks"));
  BOOST_TEST(contains(error_of([] { cluster_spec::from_json_string(R"({"ps": []})"); }, dsgd::errc::bad_cluster_spec),
                      "job \"ps\" has no tasks"));
}

BOOST_AUTO_TEST_CASE(port_zero_is_rejected_with_job_task_and_column) {
  const auto msg = spec_error({{"worker", {"a:1", "host:0"}}});
  BOOST_TEST(contains(msg, "job \"worker\" task 1"));
  BOOST_TEST(contains(msg, "\"host:0\" at column 5"));
  BOOST_TEST(contains(msg, "port 0 is not allowed"));
}

BOOST_AUTO_TEST_CASE(a_port_above_65535_is_rejected) {
  const auto msg = spec_error({{"ps", {"localhost:65536"}}});
  BOOST_TEST(contains(msg, "port 65536 is out of range 1-65535"));
  BOOST_TEST(contains(msg, "at column 10"));
  BOOST_TEST(contains(spec_error({{"ps", {"h:99999999999999999999"}}}), "out of range"));
}

BOOST_AUTO_TEST_CASE(a_non_numeric_port_is_rejected_at_the_bad_character) {
  const auto msg = spec_error({{"ps", {"localhost:22x2"}}});
  BOOST_TEST(contains(msg, "invalid character 'x' in port"));
  BOOST_TEST(contains(msg, "at column 12"));
  // The caret sits under the 'x' (the echoed address is indented by two spaces).
  BOOST_TEST(msg.substr(msg.rfind('\n') + 1).starts_with(std::string(2 + 12, ' ') + "^"));
}

BOOST_AUTO_TEST_CASE(a_missing_port_is_rejected) {
  BOOST_TEST(contains(spec_error({{"ps", {"localhost"}}}), "missing port"));
  BOOST_TEST(contains(spec_error({{"ps", {"localhost:"}}}), "missing port after ':'"));
  BOOST_TEST(contains(spec_error({{"ps", {"[::1]"}}}), "missing port"));
}

BOOST_AUTO_TEST_CASE(an_empty_host_is_rejected) {
  BOOST_TEST(contains(spec_error({{"ps", {":2222"}}}), "empty host"));
  BOOST_TEST(contains(spec_error({{"ps", {"[]:2222"}}}), "empty host"));
  BOOST_TEST(contains(spec_error({{"ps", {""}}}), "empty address"));
}

BOOST_AUTO_TEST_CASE(an_unbracketed_ipv6_address_is_rejected) {
  BOOST_TEST(contains(spec_error({{"ps", {"::1:2222"}}}), "needs brackets"));
}

BOOST_AUTO_TEST_CASE(a_bad_host_character_is_rejected_at_its_column) {
  const auto msg = spec_error({{"ps", {"local host:1"}}});
  BOOST_TEST(contains(msg, "invalid character ' ' in host name"));
  BOOST_TEST(contains(msg, "at column 5"));
}

BOOST_AUTO_TEST_CASE(bad_job_names_are_rejected) {
  const auto msg = spec_error({{"wor ker", {"a:1"}}});
  BOOST_TEST(contains(msg, "bad job name \"wor ker\" at column 3"));
  BOOST_TEST(contains(spec_error({{"", {"a:1"}}}), "empty job name"));
  BOOST_TEST(contains(spec_error({{"2ps", {"a:1"}}}), "invalid character '2'"));
}

BOOST_AUTO_TEST_CASE(json_of_the_wrong_shape_names_the_field) {
  const auto err = [](const char* text) {
    return error_of([&] { cluster_spec::from_json_string(text); }, dsgd::errc::bad_cluster_spec);
  };
  BOOST_TEST(contains(err(R"(["a:1"])"), "expected a JSON object"));
  BOOST_TEST(contains(err(R"({"ps": "a:1"})"), "job \"ps\": expected an array"));
  BOOST_TEST(contains(err(R"({"ps": {"0": "a:1"}})"), "sparse task maps are not supported"));
  BOOST_TEST(
      contains(err(R"({"ps": ["a:1", 2222]})"), "job \"ps\" task 1: expected a \"host:port\" string, got number"));
}

BOOST_AUTO_TEST_CASE(address_out_of_range_names_the_job_and_its_size) {
  cluster_spec c({{"worker", {"a:1", "b:2"}}});
  const auto msg = error_of([&] { (void)c.address("worker", 2); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "task index 2 is out of range for job \"worker\", which has 2 task(s)"));
  BOOST_TEST(contains(error_of([&] { (void)c.address("worker", -1); }, dsgd::errc::invalid_argument), "-1"));
}

BOOST_AUTO_TEST_CASE(an_unknown_job_is_not_found_and_the_known_jobs_are_listed) {
  cluster_spec c({{"ps", {"a:1"}}, {"worker", {"b:2"}}});
  const auto msg = error_of([&] { (void)c.num_tasks("chief"); }, dsgd::errc::not_found);
  BOOST_TEST(contains(msg, "no job \"chief\" in the cluster (jobs: ps, worker)"));
}

BOOST_AUTO_TEST_CASE(task_address_parse_reports_a_caret) {
  const auto msg = error_of([] { (void)task_address::parse("h:1:2"); }, dsgd::errc::bad_cluster_spec);
  BOOST_TEST(contains(msg, "bad address \"h:1:2\" at column 0"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
