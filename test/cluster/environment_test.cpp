// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/cluster/environment.hpp>. The environment is always injected with
// env_from_map, so the tests never read or change the real one.
#include <dsgd/cluster/environment.hpp>
#include <dsgd/cluster/token.hpp>

#include <support/error_checks.hpp>

#include <boost/test/unit_test.hpp>

#include <string>
#include <string_view>

BOOST_AUTO_TEST_SUITE(environment_test)

using namespace dsgd::cluster;
using dsgd::test::contains;
using dsgd::test::error_of;

BOOST_AUTO_TEST_SUITE(cluster_environment)

BOOST_AUTO_TEST_CASE(ranks_below_num_ps_are_ps_and_the_rest_workers) {
  const rank_layout layout{.num_ps = 2};
  BOOST_TEST((task_for_rank(0, 5, layout) == task_id{"ps", 0}));
  BOOST_TEST((task_for_rank(1, 5, layout) == task_id{"ps", 1}));
  BOOST_TEST((task_for_rank(2, 5, layout) == task_id{"worker", 0}));
  BOOST_TEST((task_for_rank(4, 5, layout) == task_id{"worker", 2}));
  const auto c = cluster_from_ranks(5, layout);
  BOOST_TEST(c.num_tasks("ps") == 2u);
  BOOST_TEST(c.num_tasks("worker") == 3u);
  BOOST_TEST(c.address("ps", 1).to_string() == "localhost:2223");
  BOOST_TEST(c.address("worker", 2).to_string() == "localhost:2226");  // rank 4 -> base_port + 4
}

BOOST_AUTO_TEST_CASE(hosts_are_one_for_all_or_one_per_rank) {
  const auto shared = cluster_from_ranks(3, {.num_ps = 1, .hosts = {"node7"}, .base_port = 5000});
  BOOST_TEST(shared.address("worker", 1).to_string() == "node7:5002");
  const auto per_rank = cluster_from_ranks(3, {.num_ps = 1, .hosts = {"n0", "n1", "::1"}, .base_port = 5000});
  BOOST_TEST(per_rank.address("ps", 0).to_string() == "n0:5000");
  BOOST_TEST(per_rank.address("worker", 1).to_string() == "[::1]:5002");
}

BOOST_AUTO_TEST_CASE(zero_ps_gives_a_worker_only_cluster) {
  const auto c = cluster_from_ranks(2, {.num_ps = 0});
  BOOST_TEST(!c.has_job("ps"));
  BOOST_TEST(c.num_tasks("worker") == 2u);
}

BOOST_AUTO_TEST_CASE(a_layout_without_workers_is_rejected) {
  const auto msg = error_of([] { cluster_from_ranks(2, {.num_ps = 2}); }, dsgd::errc::bad_cluster_spec);
  BOOST_TEST(contains(msg, "num_ps is 2 but the job has only 2 rank(s)"));
}

BOOST_AUTO_TEST_CASE(a_host_list_of_the_wrong_length_is_rejected) {
  const auto msg = error_of([] { cluster_from_ranks(3, {.hosts = {"a", "b"}}); }, dsgd::errc::bad_cluster_spec);
  BOOST_TEST(contains(msg, "hosts has 2 entries; expected none, one, or one per rank (3)"));
}

BOOST_AUTO_TEST_CASE(ports_past_65535_are_rejected) {
  const auto msg = error_of([] { cluster_from_ranks(3, {.base_port = 65534}); }, dsgd::errc::bad_cluster_spec);
  BOOST_TEST(contains(msg, "base_port 65534 with 3 ranks"));
}

// No default secret: the token is DSGD_CLUSTER_TOKEN; without it a task fails, saying how to
// set one, unless DSGD_INSECURE_NO_TOKEN=1 opts out, which is logged.
BOOST_AUTO_TEST_CASE(the_cluster_token_has_no_default) {
  BOOST_TEST(token_from_environment({}, env_from_map({{"DSGD_CLUSTER_TOKEN", "s3cret"}})) == "s3cret");
  for (const auto& env : {env_from_map({}), env_from_map({{"DSGD_CLUSTER_TOKEN", ""}}),
                          env_from_map({{"DSGD_INSECURE_NO_TOKEN", "yes"}})}) {
    const auto msg = error_of([&] { token_from_environment({}, env); }, dsgd::errc::invalid_argument);
    BOOST_TEST(contains(msg, "DSGD_CLUSTER_TOKEN is not set"), msg);
    BOOST_TEST(contains(msg, "dsgd-launch gives a single-host job a random one"), msg);
    BOOST_TEST(contains(msg, "DSGD_INSECURE_NO_TOKEN=1"), msg);
  }
  std::string logged;
  BOOST_TEST(token_from_environment([&](std::string_view m) { logged = m; },
                                    env_from_map({{"DSGD_INSECURE_NO_TOKEN", "1"}})) == insecure_token);
  BOOST_TEST(contains(logged, "running without a cluster secret"), logged);
}

BOOST_AUTO_TEST_CASE(slurm_variables_give_the_role) {
  const auto env = env_from_map({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}});
  const auto r = resolve_from_environment({.num_ps = 1}, env);
  BOOST_TEST((r.source == role_source::slurm));
  BOOST_TEST((r.task == task_id{"worker", 2}));
  BOOST_TEST(r.cluster.size() == 4u);
  BOOST_TEST(!r.is_chief());
  BOOST_TEST(contains(r.origin, "SLURM_PROCID=3"));
  BOOST_TEST(role_from_slurm({.num_ps = 1}, env_from_map({{"SLURM_PROCID", "1"}, {"SLURM_NPROCS", "2"}}))
                 ->is_chief());  // worker 0 is rank num_ps; SLURM_NPROCS is the older name
}

BOOST_AUTO_TEST_CASE(open_mpi_variables_give_the_role) {
  const auto env = env_from_map({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "3"}});
  const auto r = resolve_from_environment({.num_ps = 1}, env);
  BOOST_TEST((r.source == role_source::open_mpi));
  BOOST_TEST((r.task == task_id{"ps", 0}));
  BOOST_TEST(to_string(r.source) == "Open MPI");
}

BOOST_AUTO_TEST_CASE(mpich_variables_give_the_role_and_win_over_an_inherited_slurm_procid) {
  const auto env = env_from_map({{"PMI_RANK", "2"}, {"PMI_SIZE", "3"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
  const auto r = resolve_from_environment({.num_ps = 1}, env);
  BOOST_TEST((r.source == role_source::mpich));
  BOOST_TEST((r.task == task_id{"worker", 1}));
  BOOST_TEST(to_string(r.source) == "MPICH");
  BOOST_TEST(contains(r.origin, "PMI_RANK=2"));
  BOOST_TEST(role_from_mpich({.num_ps = 1}, env)->task.to_string() == "worker:1");
}

BOOST_AUTO_TEST_CASE(tf_config_wins_over_mpi_and_slurm) {
  const auto env = env_from_map({{"TF_CONFIG", R"({"cluster": {"worker": ["a:1", "b:2"]},
                                                  "task": {"type": "worker", "index": 1}})"},
                                 {"OMPI_COMM_WORLD_RANK", "0"},
                                 {"OMPI_COMM_WORLD_SIZE", "3"},
                                 {"SLURM_PROCID", "0"},
                                 {"SLURM_NTASKS", "3"}});
  const auto r = resolve_from_environment({}, env);
  BOOST_TEST((r.source == role_source::tf_config));
  BOOST_TEST((r.task == task_id{"worker", 1}));
}

BOOST_AUTO_TEST_CASE(open_mpi_wins_over_a_slurm_procid_inherited_by_mpirun) {
  const auto env = env_from_map(
      {{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
  const auto r = resolve_from_environment({.num_ps = 1}, env);
  BOOST_TEST((r.source == role_source::open_mpi));
  BOOST_TEST((r.task == task_id{"worker", 1}));
}

BOOST_AUTO_TEST_CASE(an_empty_environment_names_every_missing_variable) {
  const auto msg = error_of([] { resolve_from_environment({}, env_from_map({})); }, dsgd::errc::not_found);
  BOOST_TEST(contains(msg, "TF_CONFIG: not set"));
  BOOST_TEST(contains(msg, "OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE are not set"));
  BOOST_TEST(contains(msg, "MPICH: PMI_RANK and PMI_SIZE are not set"));
  BOOST_TEST(contains(msg, "SLURM_PROCID and SLURM_NTASKS are not set"));
}

BOOST_AUTO_TEST_CASE(a_half_set_pair_is_named) {
  const auto msg = error_of(
      [] {
        resolve_from_environment({}, env_from_map({{"SLURM_PROCID", "1"}}));
      },
      dsgd::errc::not_found);
  BOOST_TEST(contains(msg, "SLURM_PROCID is set but SLURM_NTASKS is not"));
}

BOOST_AUTO_TEST_CASE(malformed_rank_variables_are_rejected_by_name) {
  const auto bad = [](std::map<std::string, std::string> vars) {
    return error_of([&] { resolve_from_environment({}, env_from_map(vars)); }, dsgd::errc::bad_cluster_spec);
  };
  BOOST_TEST(contains(bad({{"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "2"}}),
                      "SLURM_PROCID=\"x\" is not a non-negative integer"));
  BOOST_TEST(contains(bad({{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}}),
                      "OMPI_COMM_WORLD_RANK=4 is not below OMPI_COMM_WORLD_SIZE=4"));
  BOOST_TEST(contains(bad({{"TF_CONFIG", "{"}}), "TF_CONFIG: malformed JSON"));
}

BOOST_AUTO_TEST_CASE(the_process_environment_lookup_reads_real_variables) {
  // PATH is set in every test environment; a name this unlikely is not.
  BOOST_TEST(process_environment()("PATH").has_value());
  BOOST_TEST(!process_environment()("DSGD_SURELY_UNSET_VARIABLE_42").has_value());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
