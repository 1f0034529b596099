// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::adagrad: per-element learning rates from the running sum of squared gradients.
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/device/concepts.hpp>
#include <dsgd/optim/concepts.hpp>

#include <thrust/memory.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace dsgd::optim {

namespace detail {

/// optim::adagrad's rule for one element and its accumulator.
struct adagrad_rule {
  static constexpr std::size_t slot_count = 1;
  float learning_rate;
  float epsilon;
  float grad_scale;
  float acc_offset;  // initial_accumulator on the first step, 0 afterwards
  float decay;       // 1 - learning_rate * weight_decay: 1 (exact, w unchanged) without weight decay
  DSGD_HOST_DEVICE void operator()(float& w, float g, float& acc) const {
    const float gi = grad_scale * g;
    const float ai = (acc + acc_offset) + gi * gi;
    acc = ai;
    w *= decay;
    w -= (learning_rate * gi) / (sqrtf(ai) + epsilon);
  }
};

}  // namespace detail

/// Adagrad, as Keras defines it (TensorFlow 2's tf.keras.optimizers.Adagrad).
///
/// With `g = grad_scale * grad`, every element is updated by `a <- a + g * g`, then
/// `w <- w - learning_rate * g / (sqrt(a) + epsilon)`; the accumulator `a` starts at
/// `initial_accumulator`.
///
/// With `weight_decay` (decoupled, as Keras' `Adagrad(weight_decay=...)`), every element first
/// decays by `w <- w * (1 - learning_rate * weight_decay)`.
struct adagrad {
  float learning_rate = 0.01f;
  float initial_accumulator = 0.1f;
  float epsilon = 1e-7f;
  float weight_decay = 0.f;  ///< decoupled weight decay per unit of learning rate; 0: none

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
  void apply(const D& device, state<D>& s, float* w, const float* g, std::size_t n, float grad_scale = 1.f) const {
    if (s.accumulator.size() != n) detail::throw_state_size("optim::adagrad", s.accumulator.size(), "accumulators", n);
    detail::map_in_place(*this, device, s, w, g, n, grad_scale);
  }

  /// One slot, the accumulator (optim::elementwise).
  static constexpr std::size_t slot_count = 1;
  /// The rule depends on the step count (the first step adds `initial_accumulator`).
  static constexpr bool counts_updates = true;
  /// @returns the slots' data of @p s: the accumulator.
  template <class S>
  static auto slots_of(S& s) noexcept {
    return std::array{thrust::raw_pointer_cast(s.accumulator.data())};
  }
  /// Calls @p f with the element rule of the next update of @p s (optim::elementwise).
  template <class S, class F>
  void with_rule(const S& s, float grad_scale, F&& f) const {
    f(detail::adagrad_rule{learning_rate, epsilon, grad_scale, s.steps == 0 ? initial_accumulator : 0.f,
                           detail::decay_factor(learning_rate, weight_decay)});
  }
  /// @p out's step count after one update of @p in.
  template <class S>
  void advance(const S& in, S& out) const noexcept {
    out.steps = in.steps + 1;
  }
};

}  // namespace dsgd::optim
