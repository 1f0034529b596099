// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/placement/plan.hpp>: what every policy's plan promises (coverage,
// determinism, a named error for no ps task), the mismatch check and the load report. Each
// policy's own layout is tested in <policy>_test.cpp.
#include <dsgd/placement/greedy_by_bytes.hpp>
#include <dsgd/placement/partitioned.hpp>
#include <dsgd/placement/round_robin.hpp>

#include <boost/test/unit_test.hpp>

#include "fixtures.hpp"

#include <string>
#include <tuple>
#include <vector>

BOOST_AUTO_TEST_SUITE(placement_plan_test)

static_assert(dsgd::Placement<dsgd::placement::round_robin>);
static_assert(dsgd::Placement<dsgd::placement::greedy_by_bytes>);
static_assert(dsgd::Placement<dsgd::placement::partitioned>);
static_assert(!dsgd::Placement<int>);

namespace pl = dsgd::placement;
using placement_fixtures::check_covers_every_element;
using placement_fixtures::mlp_variables;

using policies = std::tuple<pl::round_robin, pl::greedy_by_bytes, pl::partitioned>;

BOOST_AUTO_TEST_SUITE(placement)

BOOST_AUTO_TEST_CASE_TEMPLATE(every_policy_covers_every_element_exactly_once, P, policies) {
  for (std::size_t ps = 1; ps <= 4; ++ps) check_covers_every_element(P{}.place(mlp_variables(), ps));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(placement_is_deterministic_and_order_sensitive, P, policies) {
  auto a = P{}.place(mlp_variables(), 3);
  auto b = P{}.place(mlp_variables(), 3);
  BOOST_TEST(a.fingerprint() == b.fingerprint());
  BOOST_TEST(a.describe() == b.describe());
  auto swapped = mlp_variables();
  std::swap(swapped[0], swapped[2]);
  auto c = P{}.place(swapped, 3);
  BOOST_TEST(a.fingerprint() != c.fingerprint());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(no_ps_task_is_a_clear_error, P, policies) {
  BOOST_CHECK_EXCEPTION(P{}.place(mlp_variables(), 0), dsgd::error, [](const dsgd::error& e) {
    return e.code() == dsgd::errc::invalid_argument && std::string(e.what()).find("no ps task") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(a_placement_mismatch_names_both_placements) {
  auto mine = pl::round_robin{}.place(mlp_variables(), 2);
  auto theirs = pl::greedy_by_bytes{}.place(mlp_variables(), 2);
  BOOST_CHECK_NO_THROW(pl::verify_same_placement(mine, mine.fingerprint(), mine.describe(), "worker:1"));
  BOOST_CHECK_EXCEPTION(pl::verify_same_placement(mine, theirs.fingerprint(), theirs.describe(), "worker:1"),
                        dsgd::error, [&](const dsgd::error& e) {
                          std::string w = e.what();
                          return e.code() == dsgd::errc::placement_mismatch &&
                                 w.find(mine.describe()) != std::string::npos &&
                                 w.find(theirs.describe()) != std::string::npos &&
                                 w.find("worker:1") != std::string::npos;
                        });
}

BOOST_AUTO_TEST_CASE(the_load_report_lists_every_ps_task) {
  auto p = pl::round_robin{}.place(mlp_variables(), 2);
  // ps:0 holds the three kernels, ps:1 the three biases.
  BOOST_TEST(p.load_report() == "ps:0 3 variables " + std::to_string((784 * 256 + 256 * 128 + 128 * 10) * 4) +
                                    " bytes\nps:1 3 variables " + std::to_string((256 + 128 + 10) * 4) + " bytes\n");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
