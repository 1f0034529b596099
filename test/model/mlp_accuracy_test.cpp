// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Accuracy of <dsgd/model/mlp.hpp> (784-256-128-10, ReLU) on real Fashion-MNIST: one replica,
// momentum SGD with a learning rate decaying every epoch, fixed seeds. The dataset's published
// table lists an MLP 256-128-100 at 0.8833.
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/model/mlp.hpp>

#include "fashion_mnist_training.hpp"

#include <boost/test/unit_test.hpp>

BOOST_AUTO_TEST_SUITE(model_mlp_accuracy)

BOOST_AUTO_TEST_CASE(mlp_784_256_128_10_reaches_0_88_test_accuracy_in_8_epochs) {
  dsgd::model::mlp<dsgd::device::cpu> model({}, {.hidden = {256, 128}, .seed = 1});
  dsgd::test::expect_trained_to(
      model, {.learning_rate = 0.05f, .decay = 0.7f, .momentum = 0.9f, .epochs = 8, .seed = 1}, 0.88);
}

BOOST_AUTO_TEST_SUITE_END()
