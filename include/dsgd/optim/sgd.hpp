// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::sgd: plain stochastic gradient descent, w <- w - lr * g.
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/device/concepts.hpp>
#include <dsgd/optim/concepts.hpp>

#include <array>
#include <cstddef>

namespace dsgd::optim {

namespace detail {

/// optim::sgd's rule for one element.
struct sgd_rule {
  static constexpr std::size_t slot_count = 0;
  float learning_rate;
  float grad_scale;
  float decay;  // 1 - learning_rate * weight_decay: 1 (exact, w unchanged) without weight decay
  // Scaling g first keeps the rounding identical to the other optimizers' `g = grad_scale * g`.
  DSGD_HOST_DEVICE void operator()(float& w, float g) const {
    w *= decay;
    w -= learning_rate * (grad_scale * g);
  }
};

}  // namespace detail

/// Plain SGD: with `g = grad_scale * grad`, `w <- w - learning_rate * g`.
///
/// With `weight_decay` (decoupled, SGDW; Keras' `SGD(weight_decay=...)`), every element first
/// decays by `w <- w * (1 - learning_rate * weight_decay)`.
struct sgd {
  float learning_rate = 0.01f;
  float weight_decay = 0.f;  ///< decoupled weight decay per unit of learning rate; 0: none

  /// SGD keeps no per-variable state.
  template <Device D>
  struct state {
    state(const D&, std::size_t) {}
    /// Plain SGD keeps no state beside the variable: nothing to visit.
    template <class F>
    void visit(F&&) {}
  };

  /// Applies one update to the @p n elements at @p w (raw pointers into @p device's memory).
  template <Device D>
  void apply(const D& device, state<D>& s, float* w, const float* g, std::size_t n, float grad_scale = 1.f) const {
    detail::map_in_place(*this, device, s, w, g, n, grad_scale);
  }

  /// No slots (optim::elementwise).
  static constexpr std::size_t slot_count = 0;
  /// @returns the slots' data of @p s: none.
  template <class S>
  static std::array<float*, 0> slots_of(S&) noexcept {
    return {};
  }
  /// Calls @p f with the element rule of the next update (optim::elementwise).
  template <class S, class F>
  void with_rule(const S&, float grad_scale, F&& f) const {
    f(detail::sgd_rule{learning_rate, grad_scale, detail::decay_factor(learning_rate, weight_decay)});
  }

  // --- rows of a table (optim::row_optimizer) --------------------------------------------------
  /// A row keeps no state.
  DSGD_HOST_DEVICE std::size_t row_slots(std::size_t) const noexcept { return 0; }
  /// Nothing to write.
  DSGD_HOST_DEVICE void init_row_slots(float*, std::size_t) const noexcept {}
  /// Calls @p f with the rule that updates one row as apply() updates each element.
  template <class F>
  void with_row_rule(float grad_scale, row_step, F&& f) const {
    detail::with_element_row_rule(*this, grad_scale, f);
  }
  /// Updates the row of @p dim weights at @p w from the gradient row @p g (@p slots unused).
  void apply_row(float* w, float* slots, const float* g, std::size_t dim, float grad_scale = 1.f,
                 row_step step = {}) const {
    detail::apply_one_row(*this, w, slots, g, dim, grad_scale, step);
  }
};

}  // namespace dsgd::optim
