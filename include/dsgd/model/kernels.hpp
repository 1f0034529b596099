// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The elementwise and row-wise kernels of the dense models: fused bias + ReLU, the ReLU mask in
/// backpropagation, softmax cross-entropy with its gradient, and correct-prediction counting.
/// Functors over raw device pointers, so one definition serves every Thrust backend.
#pragma once

#include <dsgd/config.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace dsgd::model::kernels {

/// `z[i] = act(z[i] + bias[i mod cols])` over a row-major matrix with @c cols columns; act is
/// ReLU when @c Relu, else the identity.
template <bool Relu>
struct bias_activation {
  float* z;
  const float* bias;
  std::size_t cols;
  DSGD_HOST_DEVICE void operator()(std::size_t i) const {
    const float v = z[i] + bias[i % cols];
    if constexpr (Relu) {
      z[i] = v > 0.f ? v : 0.f;
    } else {
      z[i] = v;
    }
  }
};

/// Backpropagation through ReLU: `delta[i] = 0` where the activation @c a[i] was not positive.
struct relu_mask {
  float* delta;
  const float* a;
  DSGD_HOST_DEVICE void operator()(std::size_t i) const {
    if (!(a[i] > 0.f)) delta[i] = 0.f;
  }
};

/// Softmax cross-entropy of row @c r of the logits @c z (rows x classes): writes the loss of the
/// row to `loss[r]` and, when @c dz is not null, `scale * (softmax(z_r) - onehot(label_r))` to
/// row r of @c dz (scale = 1 / batch gives the gradient of the mean loss).
struct softmax_cross_entropy {
  const float* z;
  const std::int32_t* labels;
  float* loss;
  float* dz;
  std::size_t classes;
  float scale;
  DSGD_HOST_DEVICE void operator()(std::size_t r) const {
    const float* row = z + r * classes;
    float top = row[0];
    for (std::size_t j = 1; j < classes; ++j) top = row[j] > top ? row[j] : top;
    float sum = 0.f;
    for (std::size_t j = 0; j < classes; ++j) sum += expf(row[j] - top);
    const float log_sum = top + logf(sum);
    const auto label = static_cast<std::size_t>(labels[r]);
    loss[r] = log_sum - row[label];
    if (dz == nullptr) return;
    float* out = dz + r * classes;
    for (std::size_t j = 0; j < classes; ++j) out[j] = scale * (expf(row[j] - log_sum) - (j == label ? 1.f : 0.f));
  }
};

/// 1 when the arg-max of row @c r of the logits @c z (first maximum on ties) is its label.
struct correct_prediction {
  const float* z;
  const std::int32_t* labels;
  std::size_t classes;
  DSGD_HOST_DEVICE std::size_t operator()(std::size_t r) const {
    const float* row = z + r * classes;
    std::size_t best = 0;
    for (std::size_t j = 1; j < classes; ++j)
      if (row[j] > row[best]) best = j;
    return best == static_cast<std::size_t>(labels[r]) ? 1 : 0;
  }
};

}  // namespace dsgd::model::kernels
