// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Plain scalar reference implementations of the optimizers and the gradient mean, written
// straight from the update equations, one element at a time on std::vector. Tests compare
// dsgd's fused Thrust kernels against these. Each update is written with the same order of
// float operations as the formula in the optimizer's documentation, so kernel and reference
// agree to the last bit unless a compiler contracts operations differently.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace dsgd::test {

/// @p n values drawn uniformly from [@p lo, @p hi) by a generator seeded with @p seed.
inline std::vector<float> random_values(std::size_t n, std::uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(n);
  for (float& x : out) x = dist(gen);
  return out;
}

/// w <- w - lr * g, with g = grad_scale * grad.
struct reference_sgd {
  float learning_rate;
  void step(std::vector<float>& w, const std::vector<float>& grad, float grad_scale) {
    for (std::size_t i = 0; i < w.size(); ++i) {
      const float g = grad_scale * grad[i];
      w[i] = w[i] - learning_rate * g;
    }
  }
};

/// v <- m v + g; w <- w - lr v, or w <- w - lr (g + m v) with Nesterov.
struct reference_momentum {
  float learning_rate;
  float momentum;
  bool nesterov;
  std::vector<float> velocity;  // empty until the first step, then zeros

  void step(std::vector<float>& w, const std::vector<float>& grad, float grad_scale) {
    if (velocity.empty()) velocity.assign(w.size(), 0.f);
    for (std::size_t i = 0; i < w.size(); ++i) {
      const float g = grad_scale * grad[i];
      velocity[i] = momentum * velocity[i] + g;
      if (nesterov) {
        w[i] = w[i] - learning_rate * (g + momentum * velocity[i]);
      } else {
        w[i] = w[i] - learning_rate * velocity[i];
      }
    }
  }
};

/// a <- a + g^2 (a starts at initial_accumulator); w <- w - lr g / (sqrt(a) + eps).
struct reference_adagrad {
  float learning_rate;
  float initial_accumulator;
  float epsilon;
  std::vector<float> accumulator;

  void step(std::vector<float>& w, const std::vector<float>& grad, float grad_scale) {
    if (accumulator.empty()) accumulator.assign(w.size(), initial_accumulator);
    for (std::size_t i = 0; i < w.size(); ++i) {
      const float g = grad_scale * grad[i];
      accumulator[i] = accumulator[i] + g * g;
      w[i] = w[i] - (learning_rate * g) / (std::sqrt(accumulator[i]) + epsilon);
    }
  }
};

/// Adam with bias correction; epsilon is added to sqrt(v_hat).
struct reference_adam {
  float learning_rate;
  float beta1;
  float beta2;
  float epsilon;
  std::vector<float> m;
  std::vector<float> v;
  std::uint64_t t = 0;

  void step(std::vector<float>& w, const std::vector<float>& grad, float grad_scale) {
    if (m.empty()) {
      m.assign(w.size(), 0.f);
      v.assign(w.size(), 0.f);
    }
    ++t;
    const double correction1 = 1.0 - std::pow(double{beta1}, double(t));
    const double correction2 = 1.0 - std::pow(double{beta2}, double(t));
    for (std::size_t i = 0; i < w.size(); ++i) {
      const float g = grad_scale * grad[i];
      m[i] = beta1 * m[i] + (1.f - beta1) * g;
      v[i] = beta2 * v[i] + (1.f - beta2) * (g * g);
      const float m_hat = m[i] * static_cast<float>(1.0 / correction1);
      const float v_hat = v[i] * static_cast<float>(1.0 / correction2);
      w[i] = w[i] - (learning_rate * m_hat) / (std::sqrt(v_hat) + epsilon);
    }
  }
};

/// The element-wise mean of equally long arrays: their sum in order, divided by their count.
inline std::vector<float> reference_mean(const std::vector<std::vector<float>>& inputs) {
  std::vector<float> out(inputs.front().size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    float sum = 0.f;
    for (const auto& in : inputs) sum += in[i];
    out[i] = sum / static_cast<float>(inputs.size());
  }
  return out;
}

/// FTRL-Proximal in double (so compared with a tolerance, not bit for bit), one element at a
/// time, from TensorFlow's documented kernel
/// (tf.raw_ops.ApplyFtrlV2; ApplyFtrl is l2_shrinkage = 0):
///   g_s = g + 2 l2_shrinkage w;  n_new = n + g^2;  z += g_s - (n_new^(-p) - n^(-p)) / lr * w;
///   n = n_new;  w = |z| <= l1 ? 0 : -(z - sign(z) l1) / (n_new^(-p) / lr + 2 l2).
struct reference_ftrl {
  double learning_rate;
  double power;
  double initial_accumulator;
  double l1;
  double l2;
  double l2_shrinkage;
  std::vector<double> n;
  std::vector<double> z;

  void step(std::vector<double>& w, const std::vector<float>& grad, double grad_scale) {
    if (n.empty()) {
      n.assign(w.size(), initial_accumulator);
      z.assign(w.size(), 0.0);
    }
    for (std::size_t i = 0; i < w.size(); ++i) {
      const double g = grad_scale * double{grad[i]};
      const double g_shrunk = g + 2.0 * l2_shrinkage * w[i];
      const double n_new = n[i] + g * g;
      const double sigma = (std::pow(n_new, -power) - std::pow(n[i], -power)) / learning_rate;
      z[i] += g_shrunk - sigma * w[i];
      n[i] = n_new;
      const double sign = z[i] < 0 ? -1.0 : 1.0;
      w[i] = std::abs(z[i]) <= l1 ? 0.0 : -(z[i] - sign * l1) / (std::pow(n_new, -power) / learning_rate + 2.0 * l2);
    }
  }
};

}  // namespace dsgd::test
