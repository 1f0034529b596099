// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/placement/round_robin.hpp>: variables dealt in creation order.
#include <dsgd/placement/round_robin.hpp>

#include <boost/test/unit_test.hpp>

#include "fixtures.hpp"

BOOST_AUTO_TEST_SUITE(placement_round_robin_test)

static_assert(dsgd::Placement<dsgd::placement::round_robin>);

namespace pl = dsgd::placement;
using placement_fixtures::check_covers_every_element;
using placement_fixtures::mlp_variables;

BOOST_AUTO_TEST_SUITE(placement)

BOOST_AUTO_TEST_CASE(round_robin_deals_variables_in_creation_order) {
  auto p = pl::round_robin{}.place(mlp_variables(), 2);
  std::vector<std::size_t> owners;
  for (const auto& s : p.shards()) owners.push_back(s.ps_task);
  BOOST_TEST(owners == (std::vector<std::size_t>{0, 1, 0, 1, 0, 1}), boost::test_tools::per_element());
  BOOST_TEST(pl::round_robin::owner(4, 3) == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
