// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Accuracy of <dsgd/model/softmax_regression.hpp> on real Fashion-MNIST: one replica, momentum
// SGD, fixed seeds. Published logistic regression baselines are around 0.84.
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/model/softmax_regression.hpp>

#include "fashion_mnist_training.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdio>

BOOST_AUTO_TEST_SUITE(model_softmax_regression_accuracy_test)

namespace fm = dsgd::data::fashion_mnist;

BOOST_AUTO_TEST_SUITE(model_softmax_regression_accuracy)

BOOST_AUTO_TEST_CASE(softmax_regression_reaches_0_83_test_accuracy_in_5_epochs) {
  const auto train = fm::load(fm::split::train), test = fm::load(fm::split::test);
  dsgd::model::softmax_regression<dsgd::device::cpu> model({}, {.seed = 1});
  BOOST_TEST(model.accuracy(test) < 0.3);  // an untrained model is near chance
  const auto accuracy = dsgd::test::train_and_evaluate(
      model, train, test, {.learning_rate = 0.02f, .decay = 0.6f, .momentum = 0.9f, .epochs = 5, .seed = 1});
  const auto first = std::find_if(accuracy.begin(), accuracy.end(), [](double a) { return a >= 0.83; });
  std::printf("0.83 first reached after epoch %td\n", first - accuracy.begin() + 1);
  BOOST_TEST(accuracy.back() >= 0.83);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
