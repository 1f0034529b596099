// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/cluster/cores.hpp>: how many tasks of a cluster share a task's host (the
// loopback names as one), and the share of the cores a task takes unless OMP_NUM_THREADS is set.
#include <dsgd/cluster/cores.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

BOOST_AUTO_TEST_SUITE(cluster_cores_test)

using dsgd::cluster::cluster_spec;
using dsgd::cluster::task_id;
using jobs = std::map<std::string, std::vector<std::string>>;

namespace {
// An environment with only the variables of @p vars.
dsgd::cluster::env_lookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}
}  // namespace

BOOST_AUTO_TEST_CASE(tasks_on_a_host_are_those_whose_address_names_it) {
  const cluster_spec spec(jobs{{"ps", {"a:2222", "b:2222"}}, {"worker", {"a:2223", "b:2223", "a:2224"}}});
  BOOST_TEST(dsgd::cluster::tasks_on_host(spec, {"ps", 0}) == 3u);  // ps:0, worker:0, worker:2 on a
  BOOST_TEST(dsgd::cluster::tasks_on_host(spec, {"worker", 1}) == 2u);
  // localhost, 127.0.0.1 and ::1 are all this host.
  const cluster_spec local(jobs{{"ps", {"localhost:2222"}}, {"worker", {"127.0.0.1:2223", "[::1]:2224", "c:1"}}});
  BOOST_TEST(dsgd::cluster::tasks_on_host(local, {"worker", 1}) == 3u);
  BOOST_TEST(dsgd::cluster::tasks_on_host(local, {"worker", 2}) == 1u);
}

BOOST_AUTO_TEST_CASE(a_task_sharing_its_host_takes_its_share_of_the_cores_and_says_so) {
  const cluster_spec spec(jobs{{"ps", {"localhost:2222"}}, {"worker", {"localhost:2223", "localhost:2224"}}});
  std::vector<std::string> said;
  const auto log = [&](std::string_view s) { said.emplace_back(s); };
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  // A thread of its own: omp_set_num_threads sets the calling thread's count, not the suite's.
  std::thread([&] {
    const auto share = dsgd::cluster::share_cores(spec, {"worker", 1}, log, env_of({}));
#ifdef _OPENMP
    BOOST_REQUIRE(share.has_value());
    BOOST_TEST(share->tasks == 3u);
    BOOST_TEST(share->threads == int(std::max(1u, cores / 3)));
    BOOST_TEST(omp_get_max_threads() == share->threads);
    BOOST_REQUIRE_EQUAL(said.size(), 1u);
    BOOST_TEST(said[0] == "worker:1: 3 tasks of the cluster share this host's " + std::to_string(cores) +
                              " cores: " + std::to_string(share->threads) + " compute thread" +
                              (share->threads == 1 ? "" : "s") + " per task (set OMP_NUM_THREADS to choose)");
#else
    BOOST_TEST(!share.has_value());
#endif
  }).join();
  // The user's OMP_NUM_THREADS wins, and a task alone on its host changes nothing.
  said.clear();
  BOOST_TEST(!dsgd::cluster::share_cores(spec, {"worker", 1}, log, env_of({{"OMP_NUM_THREADS", "2"}})).has_value());
  const cluster_spec apart(jobs{{"ps", {"a:2222"}}, {"worker", {"b:2223"}}});
  BOOST_TEST(!dsgd::cluster::share_cores(apart, {"worker", 0}, log, env_of({})).has_value());
  BOOST_TEST(said.empty());
}

BOOST_AUTO_TEST_SUITE_END()
