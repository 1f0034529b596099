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

BOOST_AUTO_TEST_SUITE(model_softmax_regression_accuracy_test)

BOOST_AUTO_TEST_SUITE(model_softmax_regression_accuracy)

BOOST_AUTO_TEST_CASE(softmax_regression_reaches_0_83_test_accuracy_in_5_epochs) {
  dsgd::model::softmax_regression<dsgd::device::cpu> model({}, {.seed = 1});
  dsgd::test::expect_trained_to(
      model, {.learning_rate = 0.02f, .decay = 0.6f, .momentum = 0.9f, .epochs = 5, .seed = 1}, 0.83);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
