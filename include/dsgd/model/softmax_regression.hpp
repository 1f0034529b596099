// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// model::softmax_regression<D>: multinomial logistic regression, 784 -> 10 by default.
#pragma once

#include <dsgd/device/concepts.hpp>
#include <dsgd/model/feed_forward.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace dsgd::model {

/// Softmax regression: one dense layer (`dense0/kernel`, `dense0/bias`) and softmax
/// cross-entropy; the whole feed_forward interface applies.
///
/// @code
/// dsgd::model::softmax_regression<dsgd::device::cpu> model({}, {.seed = 1});
/// double acc = model.accuracy(test_set);
/// @endcode
template <Device D>
class softmax_regression : public feed_forward<D> {
 public:
  /// The sizes and the seed of the weight initialisation.
  struct config {
    std::size_t inputs = 784;  ///< features per example
    std::size_t classes = 10;  ///< number of classes
    std::uint64_t seed = 0;    ///< same seed, same initial weights
  };

  /// Builds the model of @p c on @p device.
  explicit softmax_regression(D device = {}, const config& c = {})
      : feed_forward<D>(std::move(device), {c.inputs, c.classes}, c.seed) {}
};

}  // namespace dsgd::model
