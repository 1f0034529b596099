// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/cluster/replicas.hpp>: replica count, index and chief, with a separate chief
// job (TF2 style) and without one (TF1 style, worker 0 is the chief).
#include <dsgd/cluster/replicas.hpp>

#include <support/error_checks.hpp>

#include <boost/test/unit_test.hpp>

#include <string>

BOOST_AUTO_TEST_SUITE(cluster_replicas_test)

using namespace dsgd::cluster;
using dsgd::test::contains;
using dsgd::test::error_of;

namespace {

cluster_spec with_chief() {
  return cluster_spec({{"chief", {"h0:2222"}}, {"worker", {"h1:2222", "h2:2222"}}, {"ps", {"h3:2222"}}});
}

cluster_spec without_chief() {
  return cluster_spec({{"worker", {"h1:2222", "h2:2222", "h4:2222"}}, {"ps", {"h3:2222", "h5:2222"}}});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(replica_order)

BOOST_AUTO_TEST_CASE(a_chief_job_is_replica_0_and_the_workers_follow) {
  const auto spec = with_chief();
  BOOST_TEST(replicas::count(spec) == 3u);
  BOOST_TEST(replicas::index_of(spec, task_id{"chief", 0}) == 0u);
  BOOST_TEST(replicas::index_of(spec, task_id{"worker", 0}) == 1u);
  BOOST_TEST(replicas::index_of(spec, task_id{"worker", 1}) == 2u);
  BOOST_TEST(replicas::is_chief(spec, task_id{"chief", 0}));
  BOOST_TEST(!replicas::is_chief(spec, task_id{"worker", 0}));
}

BOOST_AUTO_TEST_CASE(without_a_chief_job_worker_i_is_replica_i_and_worker_0_the_chief) {
  const auto spec = without_chief();
  BOOST_TEST(replicas::count(spec) == 3u);
  for (int i = 0; i < 3; ++i) BOOST_TEST(replicas::index_of(spec, task_id{"worker", i}) == std::size_t(i));
  BOOST_TEST(replicas::is_chief(spec, task_id{"worker", 0}));
  BOOST_TEST(!replicas::is_chief(spec, task_id{"worker", 1}));
  BOOST_TEST(!replicas::is_chief(spec, task_id{"ps", 0}));
}

BOOST_AUTO_TEST_CASE(a_cluster_without_training_jobs_has_no_replicas) {
  // One job of one task, written as a std::map: a bare {{"ps", {"h3:2222"}}} is ambiguous in C++
  // (std::map's iterator-pair constructor takes {"ps", {"h3:2222"}} as two const char*).
  const std::map<std::string, std::vector<std::string>> ps_only{{"ps", {"h3:2222"}}};
  BOOST_TEST(replicas::count(cluster_spec(ps_only)) == 0u);
}

BOOST_AUTO_TEST_CASE(a_ps_task_is_not_a_replica_and_the_error_names_it) {
  const std::string msg = error_of(
      [] {
        (void)replicas::index_of(with_chief(), task_id{"ps", 0});
      },
      dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "ps:0"));
  BOOST_TEST(contains(msg, "not a training replica"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
