// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/placement/partitioned.hpp>: variables cut into row slices.
#include <dsgd/placement/partitioned.hpp>

#include <boost/test/unit_test.hpp>

#include "fixtures.hpp"

BOOST_AUTO_TEST_SUITE(placement_partitioned_test)

static_assert(dsgd::Placement<dsgd::placement::partitioned>);

using namespace placement_fixtures;

BOOST_AUTO_TEST_SUITE(placement)

BOOST_AUTO_TEST_CASE(fixed_size_partitioning_cuts_rows_and_spreads_slices) {
  std::vector<pl::variable_info> v{{"embedding", {10, 4}}, {"bias", {4}}};
  auto p = pl::partitioned::fixed_size(3).place(v, 2);
  auto emb = p.shards_of(0);
  BOOST_TEST_REQUIRE(emb.size() == 3u);
  BOOST_TEST(emb[0].elements == 16u);  // rows 4, 3, 3
  BOOST_TEST(emb[1].elements == 12u);
  BOOST_TEST(emb[2].elements == 12u);
  BOOST_TEST(emb[0].ps_task == 0u);
  BOOST_TEST(emb[1].ps_task == 1u);
  BOOST_TEST(emb[2].ps_task == 0u);
  BOOST_TEST(p.shards_of(1).size() == 3u);  // 4 rows: cut too, continuing the deal
  BOOST_TEST(p.shards_of(1)[0].ps_task == 1u);
  check_covers_every_element(p);
}

BOOST_AUTO_TEST_CASE(min_max_partitioning_keeps_slices_above_the_minimum) {
  std::vector<pl::variable_info> v{{"big", {1000, 256}}, {"small", {10}}};
  auto part = pl::partitioned::min_max(8, 256 * 1024);  // big is 1,024,000 bytes
  BOOST_TEST(part.slices(v[0]) == 3u);
  BOOST_TEST(part.slices(v[1]) == 1u);
  auto p = part.place(v, 4);
  check_covers_every_element(p);
  for (const auto& s : p.shards_of(0)) BOOST_TEST(s.elements * 4 >= 256u * 1024);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
