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

namespace dsgd::optim {

namespace detail {

/// optim::adagrad's rule for one element and its accumulator.
struct adagrad_rule {
  static constexpr std::size_t slot_count = 1;
  float learning_rate;
  float epsilon;
  float grad_scale;
  float initial_accumulator;  // what an accumulator of 0 stands for (an element never updated)
  float decay;                // 1 - learning_rate * weight_decay: 1 (exact, w unchanged) without weight decay
  DSGD_HOST_DEVICE void operator()(float& w, float g, float& acc) const {
    const float gi = grad_scale * g;
    const float ai = (acc == 0.f ? initial_accumulator : acc) + gi * gi;
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
///
/// The initial accumulator is a per-element thing, as FTRL's (optim::ftrl): an element whose
/// accumulator is 0 was never updated and starts from `initial_accumulator`. No counter is
/// read, so a part of an update (a chunk, some rows) is an update of its own: adagrad is
/// applied chunk by chunk (update::chunked_apply) and to rows only (update::sparse_apply, as
/// TensorFlow's SparseApplyAdagrad: other rows and their accumulators stay as they are, and a
/// row first touched late starts from `initial_accumulator` like every other).
///
/// As a row optimizer (optim::row_optimizer) a table row keeps `dim` accumulators, a new row's
/// set to `initial_accumulator`; optim::rowwise_adagrad keeps one per row.
struct adagrad {
  float learning_rate = 0.01f;
  float initial_accumulator = 0.1f;  ///< where each accumulator starts; >= 0 (Keras requires it)
  float epsilon = 1e-7f;
  float weight_decay = 0.f;  ///< decoupled weight decay per unit of learning rate; 0: none

  /// The per-variable slot: one accumulator per element, in @p D's memory.
  template <Device D>
  struct state {
    /// Allocates @p n accumulators, all 0, on @p device.
    state(const D&, std::size_t n) : accumulator(n, 0.f) {}
    /// The sum of squared gradients from `initial_accumulator`. An element that was never
    /// updated holds 0, which the update reads as `initial_accumulator` (the state cannot see
    /// the optimizer's settings); once updated it holds the true sum, which is > 0 unless the
    /// initial value and every gradient so far were 0, when 0 is the true sum as well. A
    /// checkpoint written when the state also held a step count ("steps") restores to the same
    /// accumulators: a shard restores the slots its state visits and ignores the rest.
    typename D::template vector<float> accumulator;
    /// Calls `f(name, slot)` for each slot: what a checkpoint holds of this state.
    template <class F>
    void visit(F&& f) {
      f("accumulator", accumulator);
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
  /// @returns the slots' data of @p s: the accumulator.
  template <class S>
  static auto slots_of(S& s) noexcept {
    return std::array{thrust::raw_pointer_cast(s.accumulator.data())};
  }
  /// Calls @p f with the element rule of the next update (optim::elementwise).
  template <class S, class F>
  void with_rule(const S&, float grad_scale, F&& f) const {
    f(detail::adagrad_rule{learning_rate, epsilon, grad_scale, initial_accumulator,
                           detail::decay_factor(learning_rate, weight_decay)});
  }

  // --- rows of a table (optim::row_optimizer) --------------------------------------------------
  /// A row keeps one accumulator per weight: @p dim floats.
  DSGD_HOST_DEVICE std::size_t row_slots(std::size_t dim) const noexcept { return dim; }
  /// A new row's accumulators are `initial_accumulator`.
  DSGD_HOST_DEVICE void init_row_slots(float* slots, std::size_t dim) const noexcept {
    detail::fill_row_slot(slots, dim, initial_accumulator);
  }
  /// Calls @p f with the rule that updates one row and its accumulators as apply() updates each
  /// element.
  template <class F>
  void with_row_rule(float grad_scale, row_step, F&& f) const {
    detail::with_element_row_rule(*this, grad_scale, f);
  }
  /// Updates the row of @p dim weights at @p w and its accumulators at @p slots from the
  /// gradient row @p g.
  void apply_row(float* w, float* slots, const float* g, std::size_t dim, float grad_scale = 1.f,
                 row_step step = {}) const {
    detail::apply_one_row(*this, w, slots, g, dim, grad_scale, step);
  }
};

}  // namespace dsgd::optim
