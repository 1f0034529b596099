// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/placement/round_robin.hpp>: variables dealt in creation order.
#include <dsgd/placement/round_robin.hpp>

#include <boost/test/unit_test.hpp>

#include "fixtures.hpp"

BOOST_AUTO_TEST_SUITE(placement_round_robin_test)

static_assert(dsgd::Placement<dsgd::placement::round_robin>);

using namespace placement_fixtures;

BOOST_AUTO_TEST_SUITE(placement)

BOOST_AUTO_TEST_CASE(round_robin_deals_variables_in_creation_order) {
  BOOST_TEST(owners(pl::round_robin{}.place(mlp_variables(), 2)) == (std::vector<std::size_t>{0, 1, 0, 1, 0, 1}),
             boost::test_tools::per_element());
  BOOST_TEST(pl::round_robin::owner(4, 3) == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
