// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::momentum: SGD with (optionally Nesterov) momentum, in TensorFlow/PyTorch form.
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/device/concepts.hpp>
#include <dsgd/optim/concepts.hpp>

#include <thrust/memory.h>

#include <array>
#include <cstddef>

namespace dsgd::optim {

namespace detail {

/// optim::momentum's rule for one element and its velocity. Nesterov is a template parameter
/// so that the per-element loop carries no branch.
template <bool Nesterov>
struct momentum_rule {
  static constexpr std::size_t slot_count = 1;
  float learning_rate;
  float momentum;
  float grad_scale;
  float decay;  // 1 - learning_rate * weight_decay: 1 (exact, w unchanged) without weight decay
  DSGD_HOST_DEVICE void operator()(float& w, float g, float& v) const {
    const float gi = grad_scale * g;
    const float vi = momentum * v + gi;
    v = vi;
    w *= decay;
    if constexpr (Nesterov) {
      w -= learning_rate * (gi + momentum * vi);
    } else {
      w -= learning_rate * vi;
    }
  }
};

}  // namespace detail

/// SGD with momentum, as TensorFlow's MomentumOptimizer and PyTorch's SGD(momentum=m) define it.
///
/// With `g = grad_scale * grad`, every element is updated by
/// `v <- momentum * v + g`, then `w <- w - learning_rate * v`, or with Nesterov
/// `w <- w - learning_rate * (g + momentum * v)` using the updated `v`. The velocity starts at 0.
///
/// With `weight_decay` (decoupled, SGDW of Loshchilov & Hutter; Keras' `SGD(momentum=m,
/// weight_decay=...)`), every element first decays by `w <- w * (1 - learning_rate *
/// weight_decay)`, outside the velocity. PyTorch's `SGD(weight_decay=...)` is the coupled L2
/// form instead (added to the gradient): add `weight_decay * w` to your gradient for that.
struct momentum {
  float learning_rate = 0.01f;
  float momentum = 0.9f;
  bool nesterov = false;
  float weight_decay = 0.f;  ///< decoupled weight decay per unit of learning rate; 0: none

  /// The per-variable slot: one velocity per element, in @p D's memory.
  template <Device D>
  struct state {
    /// Allocates @p n zero velocities on @p device.
    state(const D&, std::size_t n) : velocity(n, 0.f) {}
    /// The velocity `v`, one per element of the variable.
    typename D::template vector<float> velocity;
    /// Calls `f(name, slot)` for each slot: what a checkpoint holds of this state.
    template <class F>
    void visit(F&& f) {
      f("velocity", velocity);
    }
  };

  /// Applies one update to the @p n elements at @p w from the gradient at @p g (raw pointers into
  /// @p device's memory; @p w and @p g must not overlap), in one fused pass.
  /// @throws dsgd::error (errc::shape_mismatch) when @p s was made for a different size.
  template <Device D>
  void apply(const D& device, state<D>& s, float* w, const float* g, std::size_t n, float grad_scale = 1.f) const {
    if (s.velocity.size() != n) detail::throw_state_size("optim::momentum", s.velocity.size(), "velocities", n);
    detail::map_in_place(*this, device, s, w, g, n, grad_scale);
  }

  /// One slot, the velocity (optim::elementwise).
  static constexpr std::size_t slot_count = 1;
  /// @returns the slots' data of @p s: the velocity.
  template <class S>
  static auto slots_of(S& s) noexcept {
    return std::array{thrust::raw_pointer_cast(s.velocity.data())};
  }
  /// Calls @p f with the element rule of the next update (optim::elementwise).
  template <class S, class F>
  void with_rule(const S&, float grad_scale, F&& f) const {
    const float decay = detail::decay_factor(learning_rate, weight_decay);
    if (nesterov) {
      f(detail::momentum_rule<true>{learning_rate, momentum, grad_scale, decay});
    } else {
      f(detail::momentum_rule<false>{learning_rate, momentum, grad_scale, decay});
    }
  }

  // --- rows of a table (optim::row_optimizer) --------------------------------------------------
  /// A row keeps its velocities: @p dim floats.
  DSGD_HOST_DEVICE std::size_t row_slots(std::size_t dim) const noexcept { return dim; }
  /// A new row's velocities are 0.
  DSGD_HOST_DEVICE void init_row_slots(float* slots, std::size_t dim) const noexcept {
    detail::fill_row_slot(slots, dim, 0.f);
  }
  /// Calls @p f with the rule that updates one row and its velocities as apply() updates each
  /// element (TensorFlow's SparseApplyMomentum: rows not pushed keep their velocity).
  template <class F>
  void with_row_rule(float grad_scale, row_step, F&& f) const {
    detail::with_element_row_rule(*this, grad_scale, f);
  }
  /// Updates the row of @p dim weights at @p w and its velocities at @p slots from the gradient
  /// row @p g.
  void apply_row(float* w, float* slots, const float* g, std::size_t dim, float grad_scale = 1.f,
                 row_step step = {}) const {
    detail::apply_one_row(*this, w, slots, g, dim, grad_scale, step);
  }
};

}  // namespace dsgd::optim
