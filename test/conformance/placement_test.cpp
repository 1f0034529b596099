// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Conformance of the Placement family: every shipped placement models dsgd::Placement, a user
// type that models only the concept makes plans the library accepts, and near-misses are refused
// (near_miss_placement.cpp checks the compiler's message names the concept).
#include <dsgd/placement/concepts.hpp>
#include <dsgd/placement/greedy_by_bytes.hpp>
#include <dsgd/placement/partitioned.hpp>
#include <dsgd/placement/round_robin.hpp>

#include <boost/test/unit_test.hpp>

#include <cstddef>
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
static_assert(dsgd::Placement<all_on_last>);
static_assert(!dsgd::Placement<wrong_result>);
static_assert(!dsgd::Placement<owner_only>);
static_assert(!dsgd::Placement<int>);

BOOST_AUTO_TEST_SUITE(conformance_placement)

BOOST_AUTO_TEST_CASE(a_user_placement_makes_a_plan_with_a_stable_fingerprint)
{
  std::vector<dsgd::placement::variable_info> vars{{"w", dsgd::shape{4, 3}}, {"b", dsgd::shape{3}}};
  const auto a = all_on_last{}.place(vars, 2);
  const auto b = all_on_last{}.place(vars, 2);
  BOOST_TEST(a.shards().size() == 2u);
  BOOST_TEST(a.shards()[0].ps_task == 1u);
  BOOST_TEST(a.fingerprint() == b.fingerprint());
  BOOST_TEST(a.fingerprint() != dsgd::placement::round_robin{}.place(vars, 2).fingerprint());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
