// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// model::mlp<D>: a multilayer perceptron for Fashion-MNIST, 784-256-128-10 with ReLU by default.
#pragma once

#include <dsgd/device/concepts.hpp>
#include <dsgd/model/feed_forward.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace dsgd::model {

/// A multilayer perceptron: inputs -> hidden... (ReLU) -> classes, softmax cross-entropy.
///
/// @code
/// dsgd::model::mlp<dsgd::device::cpu> net({}, {.seed = 42});   // 784-256-128-10
/// float loss = net.forward_backward(images, labels, 64);       // gradients() now hold the mean
/// @endcode
template <Device D>
class mlp : public feed_forward<D> {
 public:
  /// The layer sizes and the seed of the weight initialisation.
  struct config {
    std::vector<std::size_t> hidden{256, 128};  ///< widths of the hidden layers
    std::size_t inputs = 784;                   ///< features per example
    std::size_t classes = 10;                   ///< width of the output layer
    std::uint64_t seed = 0;                     ///< same seed, same initial weights
  };

  /// Builds the network of @p c on @p device.
  explicit mlp(D device = {}, const config& c = {}) : feed_forward<D>(std::move(device), layer_widths(c), c.seed) {}

 private:
  static std::vector<std::size_t> layer_widths(const config& c) {
    std::vector<std::size_t> w{c.inputs};
    w.insert(w.end(), c.hidden.begin(), c.hidden.end());
    w.push_back(c.classes);
    return w;
  }
};

}  // namespace dsgd::model
