// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/adapt/eigen.hpp>: views of Eigen matrices, vectors, arrays and Maps point
// into their storage with the row-major shape of its memory; what is not float, has no storage
// of its own or a fixed inner stride is refused at compile time (the traits say so), and blocks
// or strided Maps that are not contiguous are named errors. A model trained through them across
// a ps and two workers is in eigen_softmax_test.cpp.
#include <dsgd/adapt/eigen.hpp>

#include <support/error_checks.hpp>

#include <Eigen/Core>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(adapt_eigen_test)

namespace eigen = dsgd::adapt::eigen;
using dsgd::test::contains;
using dsgd::test::error_of;
using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

static_assert(eigen::is_viewable_v<Eigen::MatrixXf>);
static_assert(eigen::is_viewable_v<Eigen::VectorXf&>);
static_assert(eigen::is_viewable_v<Eigen::ArrayXXf>);
static_assert(eigen::is_viewable_v<Eigen::Map<Eigen::MatrixXf>>);
static_assert(eigen::is_viewable_v<Eigen::Matrix<float, 3, 4>>);
static_assert(!eigen::is_viewable_v<Eigen::MatrixXd>);                                  // not float32
static_assert(!eigen::is_viewable_v<decltype(Eigen::MatrixXf() + Eigen::MatrixXf())>);  // no storage
static_assert(!eigen::is_viewable_v<decltype(Eigen::MatrixXf() * Eigen::MatrixXf())>);
static_assert(!eigen::is_viewable_v<Eigen::Map<Eigen::VectorXf, 0, Eigen::InnerStride<2>>>);  // every other float
static_assert(!eigen::is_viewable_v<std::vector<float>>);  // not Eigen (dsgd::view takes it)
static_assert(eigen::is_writable_v<Eigen::MatrixXf&>);
static_assert(!eigen::is_writable_v<const Eigen::MatrixXf&>);
static_assert(!eigen::is_writable_v<Eigen::Map<const Eigen::MatrixXf>>);

BOOST_AUTO_TEST_CASE(views_point_into_eigen_storage_with_the_row_major_shape_of_its_memory) {
  Eigen::MatrixXf w(784, 10), dw(784, 10);  // column-major: 10 rows of 784 floats in memory
  const auto v = eigen::view("w", w, dw);
  BOOST_TEST(v.name == "w");
  BOOST_TEST(v.values.data() == w.data());
  BOOST_TEST(v.gradients.data() == dw.data());
  BOOST_TEST(v.values.size() == 7840u);
  BOOST_TEST(v.shape.to_string() == "[10, 784]");
  v.values[785] = 3.f;  // memory element 785 is column 1, row 1
  BOOST_TEST(w(1, 1) == 3.f);

  row_major r(4, 6), dr(4, 6);
  BOOST_TEST(eigen::view("r", r, dr).shape.to_string() == "[4, 6]");
  Eigen::VectorXf b(10), db(10);
  BOOST_TEST(eigen::view("b", b, db).shape.to_string() == "[10]");
  Eigen::RowVectorXf rv(7);
  BOOST_TEST(eigen::view("rv", rv).shape.to_string() == "[7]");

  std::vector<float> mine(12), my_grads(12);
  const auto m =
      eigen::view("m", Eigen::Map<row_major>(mine.data(), 3, 4), Eigen::Map<const row_major>(my_grads.data(), 3, 4));
  BOOST_TEST(m.values.data() == mine.data());
  BOOST_TEST(m.gradients.data() == my_grads.data());
  BOOST_TEST(m.shape.to_string() == "[3, 4]");

  Eigen::MatrixXf tall(5, 3);
  const auto column = eigen::view("column", tall.col(2));  // one column of column-major storage: contiguous
  BOOST_TEST(column.values.data() == tall.data() + 10);
  BOOST_TEST(column.values.size() == 5u);
}

BOOST_AUTO_TEST_CASE(storage_that_is_not_contiguous_is_a_named_error) {
  Eigen::MatrixXf m(5, 4), g(5, 4);
  auto msg =
      error_of([&] { eigen::view("conv1/w", m.block(0, 0, 3, 4), g.block(0, 0, 3, 4)); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg,
                      "the values of 'conv1/w' (3 x 4) are not contiguous: inner stride 1, outer stride 5; "
                      "expected inner stride 1 and outer stride 3"));
  msg = error_of([&] { eigen::view("row", m.row(1)); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "the values of 'row' (1 x 4) are not contiguous: inner stride 5; expected 1"));
  std::vector<float> raw(20);
  msg = error_of(
      [&] {
        eigen::view("strided",
                    Eigen::Map<Eigen::VectorXf, 0, Eigen::InnerStride<>>(raw.data(), 10, Eigen::InnerStride<>(2)));
      },
      dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "'strided' (10 x 1) are not contiguous: inner stride 2; expected 1"));

  Eigen::MatrixXf w(3, 4), small(3, 3);
  msg = error_of([&] { eigen::view("w", w, small); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(contains(msg, "variable 'w' (0) has 9 gradients for 12 values"));
  Eigen::MatrixXf empty;
  msg = error_of([&] { eigen::view("e", empty); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "the values of 'e' are empty"));
}

BOOST_AUTO_TEST_SUITE_END()
