// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// A user's model written with Eigen, for examples/05_eigen_model.cpp and
// test/adapt/eigen_softmax_test.cpp: softmax regression on Fashion-MNIST whose parameters and
// gradients live in Eigen storage of its own, with its forward and backward passes as Eigen
// expressions. views() makes them dsgd variables in place (<dsgd/adapt/eigen.hpp>).
#pragma once

#include <dsgd/adapt/eigen.hpp>
#include <dsgd/data/fashion_mnist.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace eigen_example {

using row_major = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct softmax_regression {
  Eigen::MatrixXf w = Eigen::MatrixXf::Zero(784, 10), dw = Eigen::MatrixXf::Zero(784, 10);
  Eigen::VectorXf b = Eigen::VectorXf::Zero(10), db = Eigen::VectorXf::Zero(10);

  // The parameters and their gradients as dsgd variables: pulls write w and b, pushes read dw, db.
  std::vector<dsgd::variable_view> views() {
    return {dsgd::adapt::eigen::view("softmax/w", w, dw), dsgd::adapt::eigen::view("softmax/b", b, db)};
  }
  Eigen::MatrixXf logits(const Eigen::Ref<const row_major>& x) const { return (x * w).rowwise() + b.transpose(); }
  // The mean cross-entropy gradient of batch @p x with labels @p y, times @p scale, into dw and
  // db. @returns the batch's mean loss.
  float backward(const Eigen::Ref<const row_major>& x, const std::vector<int>& y, float scale) {
    Eigen::MatrixXf p = logits(x);
    const Eigen::VectorXf top = p.rowwise().maxCoeff();  // evaluated first: p is overwritten next
    p = (p.colwise() - top).array().exp().matrix();
    const Eigen::VectorXf sum = p.rowwise().sum();
    p.array().colwise() /= sum.array();
    float loss = 0;
    for (Eigen::Index i = 0; i < p.rows(); ++i) {
      loss -= std::log(std::max(p(i, y[std::size_t(i)]), 1e-30f));
      p(i, y[std::size_t(i)]) -= 1.f;
    }
    p *= scale / float(p.rows());
    dw.noalias() = x.transpose() * p;
    db = p.colwise().sum().transpose();
    return loss / float(p.rows());
  }
  double accuracy(const dsgd::data::fashion_mnist::dataset& d) const {
    const Eigen::Map<const row_major> x(d.images.data(), Eigen::Index(d.size()), Eigen::Index(d.features()));
    const Eigen::MatrixXf z = logits(x);
    std::size_t right = 0;
    for (Eigen::Index i = 0; i < z.rows(); ++i) {
      Eigen::Index best = 0;
      z.row(i).maxCoeff(&best);
      right += best == d.labels[std::size_t(i)];
    }
    return double(right) / double(d.size());
  }
  // Copies examples @p order[first, first + x.rows()) of @p d into the batch @p x and @p y.
  static void gather(const dsgd::data::fashion_mnist::dataset& d, const std::vector<std::size_t>& order,
                     std::size_t first, row_major& x, std::vector<int>& y) {
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
      const auto n = order[first + std::size_t(i)];
      x.row(i) = Eigen::Map<const Eigen::RowVectorXf>(d.images.data() + n * d.features(), Eigen::Index(d.features()));
      y[std::size_t(i)] = d.labels[n];
    }
  }
};

}  // namespace eigen_example
