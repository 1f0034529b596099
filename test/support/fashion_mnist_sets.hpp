// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support: the Fashion-MNIST splits, read once per process however many trainings of a
// test executable use them.
#pragma once

#include <dsgd/data/fashion_mnist.hpp>

namespace dsgd::test {

inline const data::fashion_mnist::dataset& fashion_train() {
  static const auto d = data::fashion_mnist::load(data::fashion_mnist::split::train);
  return d;
}

inline const data::fashion_mnist::dataset& fashion_test() {
  static const auto d = data::fashion_mnist::load(data::fashion_mnist::split::test);
  return d;
}

}  // namespace dsgd::test
