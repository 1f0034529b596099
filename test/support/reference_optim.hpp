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

/// Row-wise Adagrad in double over the rows of a table, from FBGEMM's EXACT_ROWWISE_ADAGRAD
/// (TorchRec's row-wise Adagrad), one accumulator per row:
///   acc[r] += (sum over the row of g^2) / dim;  w -= lr / (sqrt(acc[r]) + eps) * g.
/// Rows not in a step keep their weights and accumulator.
struct reference_rowwise_adagrad {
  double learning_rate;
  double initial_accumulator;
  double epsilon;
  std::vector<double> accumulator;  // one per row; empty until the first step

  /// One update of rows @p rows (unique) of the @p dim-wide rows of @p w, from the packed
  /// gradient rows @p grad (rows.size() x dim).
  void step(std::vector<double>& w, std::size_t dim, const std::vector<std::uint64_t>& rows,
            const std::vector<float>& grad, double grad_scale) {
    if (accumulator.empty()) accumulator.assign(w.size() / dim, initial_accumulator);
    for (std::size_t k = 0; k < rows.size(); ++k) {
      double mean_square = 0.0;
      for (std::size_t c = 0; c < dim; ++c) {
        const double g = grad_scale * double{grad[k * dim + c]};
        mean_square += g * g / double(dim);
      }
      double& acc = accumulator[rows[k]];
      acc += mean_square;
      const double multiplier = learning_rate / (std::sqrt(acc) + epsilon);
      for (std::size_t c = 0; c < dim; ++c)
        w[rows[k] * dim + c] -= multiplier * (grad_scale * double{grad[k * dim + c]});
    }
  }
};

/// TF1 contrib's LazyAdamOptimizer in double over the rows of a variable: the beta powers are
/// global (t counts every step, whichever rows it has), and only the rows in a step change:
///   m_r = beta1 m_r + (1 - beta1) g;  v_r = beta2 v_r + (1 - beta2) g^2;
///   TF1:   w_r -= lr sqrt(1 - beta2^t) / (1 - beta1^t) * m_r / (sqrt(v_r) + eps)
///   dsgd:  w_r -= lr (m_r / (1 - beta1^t)) / (sqrt(v_r / (1 - beta2^t)) + eps)   (PyTorch's eps)
/// (@p tf1_epsilon picks the first). With every row in every step it is dense Adam.
struct reference_lazy_adam {
  double learning_rate;
  double beta1;
  double beta2;
  double epsilon;
  bool tf1_epsilon;
  std::vector<double> m;
  std::vector<double> v;
  std::uint64_t t = 0;

  void step(std::vector<double>& w, std::size_t dim, const std::vector<std::uint64_t>& rows,
            const std::vector<float>& grad, double grad_scale) {
    if (m.empty()) {
      m.assign(w.size(), 0.0);
      v.assign(w.size(), 0.0);
    }
    ++t;
    const double beta1_power = std::pow(beta1, double(t));
    const double beta2_power = std::pow(beta2, double(t));
    for (std::size_t k = 0; k < rows.size(); ++k) {
      for (std::size_t c = 0; c < dim; ++c) {
        const std::size_t i = rows[k] * dim + c;
        const double g = grad_scale * double{grad[k * dim + c]};
        m[i] = beta1 * m[i] + (1.0 - beta1) * g;
        v[i] = beta2 * v[i] + (1.0 - beta2) * g * g;
        if (tf1_epsilon) {
          const double lr_t = learning_rate * std::sqrt(1.0 - beta2_power) / (1.0 - beta1_power);
          w[i] -= lr_t * m[i] / (std::sqrt(v[i]) + epsilon);
        } else {
          w[i] -= learning_rate * (m[i] / (1.0 - beta1_power)) / (std::sqrt(v[i] / (1.0 - beta2_power)) + epsilon);
        }
      }
    }
  }
};

}  // namespace dsgd::test
