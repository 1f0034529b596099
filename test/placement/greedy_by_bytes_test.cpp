// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/placement/greedy_by_bytes.hpp>: each variable to the least loaded ps task.
#include <dsgd/placement/greedy_by_bytes.hpp>

#include <boost/test/unit_test.hpp>

#include "fixtures.hpp"

BOOST_AUTO_TEST_SUITE(placement_greedy_by_bytes_test)

static_assert(dsgd::Placement<dsgd::placement::greedy_by_bytes>);

using namespace placement_fixtures;

BOOST_AUTO_TEST_SUITE(placement)

BOOST_AUTO_TEST_CASE(greedy_by_bytes_gives_each_variable_to_the_least_loaded_task) {
  // 784x256 floats go to ps:0; everything after is smaller than it, so it all goes to ps:1
  // until ps:1 passes ps:0, which never happens here.
  auto p = pl::greedy_by_bytes{}.place(mlp_variables(), 2);
  BOOST_TEST(owners(p) == (std::vector<std::size_t>{0, 1, 1, 1, 1, 1}), boost::test_tools::per_element());
  auto load = p.load();
  BOOST_TEST(load[0].bytes == 784u * 256 * 4);
  BOOST_TEST(load[1].variables == 5u);
}

BOOST_AUTO_TEST_CASE(greedy_by_bytes_balances_equal_variables_evenly) {
  std::vector<pl::variable_info> v(9, {"x", {100}});
  auto load = pl::greedy_by_bytes{}.place(v, 3).load();
  for (const auto& l : load) BOOST_TEST(l.bytes == 1200u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
