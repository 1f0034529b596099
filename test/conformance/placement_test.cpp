// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Conformance of the Placement family: every shipped placement models dsgd::Placement, a user
// type that models only the concept makes plans the library accepts, and near-misses are refused
// (near_miss_placement.cpp checks the compiler's message names the concept); a cluster of two ps
// tasks and two workers trains softmax regression on Fashion-MNIST with the user's placement, and
// the ps tasks hold the shards its plan names.
#include <dsgd/device/cpu.hpp>
#include <dsgd/placement/concepts.hpp>
#include <dsgd/placement/greedy_by_bytes.hpp>
#include <dsgd/placement/partitioned.hpp>
#include <dsgd/placement/pinned.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/sync_average.hpp>

#include "user_policy_cluster.hpp"

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <mutex>
#include <vector>

BOOST_AUTO_TEST_SUITE(conformance_placement_test)

namespace {

// A user's placement from the concept alone: everything on the last ps task.
struct all_on_last {
  dsgd::placement::plan place(const std::vector<dsgd::placement::variable_info>& vars, std::size_t ps_tasks) const {
    std::vector<dsgd::placement::shard> shards;
    for (std::size_t i = 0; i < vars.size(); ++i) shards.push_back({i, ps_tasks - 1, 0, vars[i].shape.elements()});
    return dsgd::placement::plan(vars, ps_tasks, std::move(shards));
  }
};

struct wrong_result {  // near-miss: returns owners, not a plan
  std::vector<std::size_t> place(const std::vector<dsgd::placement::variable_info>& vars, std::size_t) const {
    return std::vector<std::size_t>(vars.size());
  }
};

struct owner_only {  // near-miss: the TF1-style owner(i, n) alone
  std::size_t owner(std::size_t i, std::size_t n) const { return i % n; }
};

}  // namespace

static_assert(dsgd::Placement<dsgd::placement::round_robin>);
static_assert(dsgd::Placement<dsgd::placement::greedy_by_bytes>);
static_assert(dsgd::Placement<dsgd::placement::partitioned>);
static_assert(dsgd::Placement<dsgd::placement::pinned<>>);
static_assert(dsgd::Placement<all_on_last>);
static_assert(!dsgd::Placement<wrong_result>);
static_assert(!dsgd::Placement<owner_only>);
static_assert(!dsgd::Placement<int>);

BOOST_AUTO_TEST_SUITE(conformance_placement)

BOOST_AUTO_TEST_CASE(a_user_placement_makes_a_plan_with_a_stable_fingerprint) {
  std::vector<dsgd::placement::variable_info> vars{{"w", dsgd::shape{4, 3}}, {"b", dsgd::shape{3}}};
  const auto a = all_on_last{}.place(vars, 2);
  const auto b = all_on_last{}.place(vars, 2);
  BOOST_TEST(a.shards().size() == 2u);
  BOOST_TEST(a.shards()[0].ps_task == 1u);
  BOOST_TEST(a.fingerprint() == b.fingerprint());
  BOOST_TEST(a.fingerprint() != dsgd::placement::round_robin{}.place(vars, 2).fingerprint());
}

// The user's placement in a cluster: every worker computes its plan, the ps tasks create exactly
// the shards it names (all on ps:1, none on ps:0), and the model trains to its accuracy.
BOOST_AUTO_TEST_CASE(a_cluster_trains_softmax_regression_with_a_user_placement) {
  using ps_type =
      dsgd::train::ps_task<dsgd::update::sync_average, dsgd::test::decaying_momentum, dsgd::transport::inproc>;
  const auto o =
      dsgd::test::user_policy_options<all_on_last, dsgd::update::sync_average>(dsgd::test::decaying_momentum_over(469));
  const dsgd::model::softmax_regression<dsgd::device::cpu> model({}, {.seed = 1});
  std::vector<dsgd::placement::variable_info> vars;
  for (std::size_t v = 0; v < model.parameters().size(); ++v)
    vars.push_back({model.names()[v], model.parameters()[v].shape()});
  const auto expected = all_on_last{}.place(vars, 2);
  std::mutex m;
  std::vector<std::vector<std::size_t>> held(2);  // per ps task: the element count of each variable's shard 0, or 0
  const auto r = dsgd::test::train_softmax(o, 2, dsgd::device::cpu{}, [&](const ps_type& ps, std::size_t i) {
    std::lock_guard lock(m);
    for (std::uint32_t v = 0; v < vars.size(); ++v) {
      const auto* s = ps.server()->find(v, 0);
      held[i].push_back(s ? s->size() : 0);
    }
  });
  BOOST_TEST(r.plan.fingerprint() == expected.fingerprint());
  BOOST_TEST((r.plan.shards() == expected.shards()));
  BOOST_TEST(held[0] == (std::vector<std::size_t>{0, 0}), boost::test_tools::per_element());
  BOOST_TEST(held[1] == (std::vector<std::size_t>{7840, 10}), boost::test_tools::per_element());
  BOOST_TEST(r.steps[0] == r.pushes[0]);  // sync: one step per push of both workers
  BOOST_TEST(r.dropped == 0u);
  BOOST_TEST(r.accuracy >= 0.80);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()

// dsgd::trainer (over TCP) takes the user type as is: every member of the trainer compiles with it.
template class dsgd::trainer<dsgd::device::cpu, conformance_placement_test::all_on_last>;
