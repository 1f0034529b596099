// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::adagrad: per-element learning rates from the running sum of squared gradients.
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/device/concepts.hpp>
#include <dsgd/error.hpp>

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/memory.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

namespace dsgd::optim {

namespace detail {

struct adagrad_kernel {
  float* w;
  float* acc;
  const float* g;
  float learning_rate;
  float epsilon;
  float grad_scale;
  float acc_offset;  // initial_accumulator on the first step, 0 afterwards
  DSGD_HOST_DEVICE void operator()(std::size_t i) const {
    const float gi = grad_scale * g[i];
    const float ai = (acc[i] + acc_offset) + gi * gi;
    acc[i] = ai;
    w[i] -= (learning_rate * gi) / (sqrtf(ai) + epsilon);
  }
};

}  // namespace detail

/// Adagrad, as Keras defines it (TensorFlow 2's tf.keras.optimizers.Adagrad).
///
/// With `g = grad_scale * grad`, every element is updated by `a <- a + g * g`, then
/// `w <- w - learning_rate * g / (sqrt(a) + epsilon)`; the accumulator `a` starts at
/// `initial_accumulator`.
struct adagrad {
  float learning_rate = 0.01f;
  float initial_accumulator = 0.1f;
  float epsilon = 1e-7f;

  /// The per-variable slot: one accumulator per element, in @p D's memory, and a step count.
  template <Device D>
  struct state {
    /// Allocates @p n accumulators on @p device.
    state(const D&, std::size_t n) : accumulator(n, 0.f) {}
    /// The sum of squared gradients, *without* `initial_accumulator` while `steps == 0`: the
    /// state cannot see the optimizer's settings, so the first apply() adds the initial value
    /// in the same pass as the first gradient.
    typename D::template vector<float> accumulator;
    /// How many updates have been applied.
    std::uint64_t steps = 0;
    /// Calls `f(name, slot)` for each slot and `f(name, counter)` for each counter: what a
    /// checkpoint holds of this state.
    template <class F>
    void visit(F&& f) {
      f("accumulator", accumulator);
      f("steps", steps);
    }
  };

  /// Applies one update to the @p n elements at @p w from the gradient at @p g (raw pointers into
  /// @p device's memory; @p w and @p g must not overlap), in one fused pass.
  /// @throws dsgd::error (errc::shape_mismatch) when @p s was made for a different size.
  template <Device D>
  void apply(const D& device, state<D>& s, float* w, const float* g, std::size_t n,
             float grad_scale = 1.f) const {
    if (s.accumulator.size() != n) {
      throw error(errc::shape_mismatch, "optim::adagrad::apply: the state holds " +
                                            std::to_string(s.accumulator.size()) +
                                            " accumulators but n = " + std::to_string(n));
    }
    const float offset = s.steps == 0 ? initial_accumulator : 0.f;
    thrust::for_each_n(device.policy(), thrust::counting_iterator<std::size_t>(0), n,
                       detail::adagrad_kernel{w, thrust::raw_pointer_cast(s.accumulator.data()),
                                              g, learning_rate, epsilon, grad_scale, offset});
    ++s.steps;
  }
};

}  // namespace dsgd::optim
