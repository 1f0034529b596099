// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/cluster/slurm.hpp>: host lists and task counts expanded as Slurm does. The
// expected lists are what `scontrol show hostnames` (Slurm 22.05, Debian 12) printed for each
// input; slurm_live_test.cpp compares random lists against a live scontrol.
#include <dsgd/cluster/environment.hpp>
#include <dsgd/cluster/slurm.hpp>

#include <support/error_checks.hpp>

#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(slurm_test)

namespace bdata = boost::unit_test::data;
using namespace dsgd::cluster;
using dsgd::test::contains;
using dsgd::test::error_of;

namespace {

struct expansion {
  std::string list;
  std::vector<std::string> hosts;
};
std::ostream& operator<<(std::ostream& os, const expansion& e) { return os << e.list; }

// Each row: the input and scontrol's output for it.
const std::vector<expansion> scontrol_outputs{
    {"node[01-04,07],gpu3", {"node01", "node02", "node03", "node04", "node07", "gpu3"}},
    {"n[1-3]", {"n1", "n2", "n3"}},
    {"a[8-11]", {"a8", "a9", "a10", "a11"}},
    {"rack[1-2]-n[01-02]", {"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}},
    {"x", {"x"}},
    {"n[001-003,9-10]", {"n001", "n002", "n003", "n9", "n10"}},
    {"host1,host2", {"host1", "host2"}},
    {"n[09-11]", {"n09", "n10", "n11"}},
    {"n[01-3]", {"n01", "n02", "n03"}},
    {"n[1-03]", {"n1", "n2", "n3"}},
    {"n[9-011]", {"n9", "n10", "n11"}},
    {"a[1-2]b[3-4]", {"a1b3", "a1b4", "a2b3", "a2b4"}},
    {"a,,b", {"a", "b"}},
    {"a[1-2],b[5]", {"a1", "a2", "b5"}},
    {"n[1-2],n[1-2]", {"n1", "n2", "n1", "n2"}},
    {"[1-2]", {"1", "2"}},
    {"n[1-2][3-4]", {"n13", "n14", "n23", "n24"}},
    {"n-[1-2]", {"n-1", "n-2"}},
    {"n[0001-0003]", {"n0001", "n0002", "n0003"}},
    {"n[1,1]", {"n1", "n1"}},
    {"n[0-0]", {"n0"}},
    {"", {}},
};

struct refusal {
  std::string list;
  std::string reason;
};
std::ostream& operator<<(std::ostream& os, const refusal& r) { return os << r.list; }

// Lists scontrol refuses ("Invalid hostlist"), and the reason dsgd names.
const std::vector<refusal> refused{
    {"n[1-3]x", "text after the last ']' at column 7"},
    {"n[1-3]-ib", "text after the last ']'"},
    {"a[1-2]b[3-4]c", "text after the last ']'"},
    {"n[3-1]", "range \"3-1\" runs backwards at column 3"},
    {"n[a-b]", "range \"a-b\" is not N or N-M with digits"},
    {"n[010-8]", "runs backwards"},
    {"n[1-100000]", "has too many hosts"},
    {"n[1-3", "'[' without ']' at column 2"},
    {"n1-3]", "']' without '['"},
    {"n[]", "is not N or N-M"},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(cluster_slurm)

BOOST_DATA_TEST_CASE(host_lists_expand_as_scontrol_expands_them, bdata::make(scontrol_outputs), e) {
  BOOST_TEST(expand_hostlist(e.list) == e.hosts, boost::test_tools::per_element());
}

BOOST_DATA_TEST_CASE(malformed_host_lists_are_refused_naming_the_list_and_the_column, bdata::make(refused), r) {
  const auto msg = error_of([&] { expand_hostlist(r.list); }, dsgd::errc::bad_cluster_spec);
  BOOST_TEST(contains(msg, "host list \"" + r.list + "\""), msg);
  BOOST_TEST(contains(msg, r.reason), msg);
}

BOOST_AUTO_TEST_CASE(task_counts_expand_their_repeats) {
  using dsgd::cluster::expand_task_counts;
  BOOST_TEST(expand_task_counts("2(x3),1") == (std::vector<int>{2, 2, 2, 1}), boost::test_tools::per_element());
  BOOST_TEST(expand_task_counts("4") == (std::vector<int>{4}), boost::test_tools::per_element());
  BOOST_TEST(contains(error_of([] { expand_task_counts("2(x3"); }, dsgd::errc::bad_cluster_spec), "without ')'"));
  BOOST_TEST(
      contains(error_of([] { expand_task_counts("two"); }, dsgd::errc::bad_cluster_spec), "\"two\" is not N or N(xM)"));
}

BOOST_AUTO_TEST_CASE(ranks_are_placed_on_nodes_in_block_order) {
  BOOST_TEST(dsgd::cluster::hosts_of_ranks("n[1-2],gpu3", "2(x2),1") ==
                 (std::vector<std::string>{"n1", "n1", "n2", "n2", "gpu3"}),
             boost::test_tools::per_element());
  BOOST_TEST(contains(error_of([] { dsgd::cluster::hosts_of_ranks("n[1-3]", "2,2"); }, dsgd::errc::bad_cluster_spec),
                      "names 3 nodes but the task counts \"2,2\" give 2"));
}

BOOST_AUTO_TEST_CASE(a_slurm_step_gets_its_hosts_from_the_node_list) {
  std::map<std::string, std::string> vars{{"SLURM_PROCID", "3"},
                                          {"SLURM_NTASKS", "4"},
                                          {"SLURM_JOB_NODELIST", "node[01-02]"},
                                          {"SLURM_TASKS_PER_NODE", "2(x2)"}};
  const dsgd::cluster::env_lookup env = [&](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  const auto r = dsgd::cluster::role_from_slurm({.num_ps = 1, .base_port = 3000}, env);
  BOOST_REQUIRE(r);
  BOOST_TEST(r->task.to_string() == "worker:2");
  BOOST_TEST(r->cluster.address("ps", 0).to_string() == "node01:3000");
  BOOST_TEST(r->cluster.address("worker", 0).to_string() == "node01:3001");
  BOOST_TEST(r->cluster.address("worker", 2).to_string() == "node02:3003");
  BOOST_TEST(contains(r->origin, "SLURM_JOB_NODELIST=node[01-02]"));
  vars["SLURM_STEP_NODELIST"] = "gpu[7-8]";  // a step's own list wins over the job's
  vars["SLURM_STEP_TASKS_PER_NODE"] = "3,1";
  BOOST_TEST(dsgd::cluster::role_from_slurm({.num_ps = 1}, env)->cluster.address("worker", 2).host == "gpu8");
  vars["SLURM_STEP_TASKS_PER_NODE"] = "3";
  BOOST_TEST(
      contains(error_of([&] { dsgd::cluster::role_from_slurm({.num_ps = 1}, env); }, dsgd::errc::bad_cluster_spec),
               "names 2 nodes"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
