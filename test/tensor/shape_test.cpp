// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/tensor/shape.hpp>: rank, extents, element count, printing, equality and the
// named error for a dimension out of range.
#include <dsgd/tensor/shape.hpp>

#include <support/error_checks.hpp>

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(tensor_shape_test)

using dsgd::test::contains;
using dsgd::test::error_of;

BOOST_AUTO_TEST_SUITE(tensor_shape)

BOOST_AUTO_TEST_CASE(a_matrix_has_its_rank_extents_and_element_count) {
  const dsgd::shape s{2, 3};
  BOOST_TEST(s.rank() == 2u);
  BOOST_TEST(s[0] == 2u);
  BOOST_TEST(s[1] == 3u);
  BOOST_TEST(s.elements() == 6u);
  BOOST_TEST(s.extents() == (std::vector<std::size_t>{2, 3}));
  BOOST_TEST(s.to_string() == "[2, 3]");
}

BOOST_AUTO_TEST_CASE(a_scalar_has_no_extents_and_one_element) {
  const dsgd::shape s;
  BOOST_TEST(s.rank() == 0u);
  BOOST_TEST(s.elements() == 1u);
  BOOST_TEST(s.to_string() == "[]");
}

BOOST_AUTO_TEST_CASE(a_zero_extent_means_no_elements) { BOOST_TEST(dsgd::shape({4, 0, 2}).elements() == 0u); }

BOOST_AUTO_TEST_CASE(shapes_from_a_list_and_from_a_vector_compare_equal) {
  BOOST_TEST((dsgd::shape{784, 256} == dsgd::shape(std::vector<std::size_t>{784, 256})));
  BOOST_TEST((dsgd::shape{784, 256} != dsgd::shape{256, 784}));
  BOOST_TEST((dsgd::shape{6} != dsgd::shape{2, 3}));
}

BOOST_AUTO_TEST_CASE(streaming_writes_to_string) {
  std::ostringstream os;
  os << dsgd::shape{10, 4, 1};
  BOOST_TEST(os.str() == "[10, 4, 1]");
}

BOOST_AUTO_TEST_CASE(a_dimension_out_of_range_is_named) {
  const std::string msg = error_of([] { (void)dsgd::shape{2, 3}[2]; }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "[2, 3]"));
  BOOST_TEST(contains(msg, "no dimension 2"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
