// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::adam: Adam with bias correction, epsilon added to sqrt(v_hat) as in PyTorch.
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/device/concepts.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/concepts.hpp>

#include <thrust/memory.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace dsgd::optim {

namespace detail {

/// optim::adam's rule for one element and its two moments.
struct adam_rule {
  static constexpr std::size_t slot_count = 2;
  float learning_rate;
  float beta1;
  float one_minus_beta1;
  float beta2;
  float one_minus_beta2;
  float inv_correction1;  // 1 / (1 - beta1^t)
  float inv_correction2;  // 1 / (1 - beta2^t)
  float epsilon;
  float grad_scale;
  float decay;  // 1 - learning_rate * weight_decay: 1 (exact, w unchanged) without weight decay
  DSGD_HOST_DEVICE void operator()(float& w, float g, float& m, float& v) const {
    const float gi = grad_scale * g;
    const float mi = beta1 * m + one_minus_beta1 * gi;
    const float vi = beta2 * v + one_minus_beta2 * (gi * gi);
    m = mi;
    v = vi;
    const float m_hat = mi * inv_correction1;
    const float v_hat = vi * inv_correction2;
    w *= decay;
    w -= (learning_rate * m_hat) / (sqrtf(v_hat) + epsilon);
  }
};

}  // namespace detail

/// Adam (Kingma & Ba) with bias correction.
///
/// With `g = grad_scale * grad` and t the 1-based step count, every element is updated by
/// `m <- beta1 * m + (1 - beta1) * g`, `v <- beta2 * v + (1 - beta2) * g * g`,
/// `m_hat = m / (1 - beta1^t)`, `v_hat = v / (1 - beta2^t)`, then
/// `w <- w - learning_rate * m_hat / (sqrt(v_hat) + epsilon)`.
/// Epsilon is added to `sqrt(v_hat)`, as in PyTorch's torch.optim.Adam and the paper's
/// Algorithm 1, not to the uncorrected `sqrt(v)` as TensorFlow 1.x's AdamOptimizer does; the two
/// differ only while `v` is tiny.
///
/// With `weight_decay` this is AdamW (Loshchilov & Hutter, decoupled weight decay), as
/// PyTorch's torch.optim.AdamW and Keras' `AdamW`: every element first decays by
/// `w <- w * (1 - learning_rate * weight_decay)`, outside the moments. (Note that PyTorch's
/// AdamW defaults to weight_decay = 0.01; here the default is 0, plain Adam.)
///
/// The rule reads the step count, so a part of an update is none of its own: adam has no
/// chunked or sparse apply (update::chunked_apply, update::sparse_apply), and a sparse push to
/// it under async or SSP is refused. As a row optimizer (optim::row_optimizer) it is lazy Adam:
/// a table row keeps its `m` and `v` (`2 * dim` floats, 0 for a new row) and only the rows
/// given change, with the bias corrections of the table's update count `row_step::t`; see
/// optim::lazy_adam, which is the same on a dense variable's sparse pushes.
struct adam {
  float learning_rate = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  float weight_decay = 0.f;  ///< decoupled weight decay per unit of learning rate; 0: none (AdamW otherwise)

  /// The per-variable slots: first and second moments per element, in @p D's memory, and the
  /// number of steps taken.
  template <Device D>
  struct state {
    /// Allocates @p n zero first and second moments on @p device.
    state(const D&, std::size_t n) : m(n, 0.f), v(n, 0.f) {}
    /// The first moment (running mean of gradients).
    typename D::template vector<float> m;
    /// The second moment (running mean of squared gradients).
    typename D::template vector<float> v;
    /// How many updates have been applied (t of the last update).
    std::uint64_t t = 0;
    /// Calls `f(name, slot)` for each slot and `f(name, counter)` for each counter: what a
    /// checkpoint holds of this state.
    template <class F>
    void visit(F&& f) {
      f("m", m);
      f("v", v);
      f("t", t);
    }
  };

  /// Applies one update to the @p n elements at @p w from the gradient at @p g (raw pointers into
  /// @p device's memory; @p w and @p g must not overlap), in one fused pass; advances `s.t`.
  /// @throws dsgd::error (errc::shape_mismatch) when @p s was made for a different size.
  template <Device D>
  void apply(const D& device, state<D>& s, float* w, const float* g, std::size_t n, float grad_scale = 1.f) const {
    if (s.m.size() != n || s.v.size() != n) detail::throw_state_size("optim::adam", s.m.size(), "moments", n);
    detail::map_in_place(*this, device, s, w, g, n, grad_scale);
  }

  /// Two slots, the moments (optim::elementwise).
  static constexpr std::size_t slot_count = 2;
  /// The rule depends on the step count (the bias corrections).
  static constexpr bool counts_updates = true;
  /// @returns the slots' data of @p s: m and v.
  template <class S>
  static auto slots_of(S& s) noexcept {
    return std::array{thrust::raw_pointer_cast(s.m.data()), thrust::raw_pointer_cast(s.v.data())};
  }
  /// Calls @p f with the element rule of the next update of @p s, step t = s.t + 1
  /// (optim::elementwise).
  template <class S, class F>
  void with_rule(const S& s, float grad_scale, F&& f) const {
    f(rule_at(s.t + 1, grad_scale));
  }
  /// The element rule of update number @p t (>= 1).
  detail::adam_rule rule_at(std::uint64_t t, float grad_scale) const {
    // The corrections are computed in double: beta2^t loses most of its digits in float when
    // beta2 is close to 1.
    const double correction1 = 1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(t));
    const double correction2 = 1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(t));
    return detail::adam_rule{learning_rate,
                             beta1,
                             1.f - beta1,
                             beta2,
                             1.f - beta2,
                             static_cast<float>(1.0 / correction1),
                             static_cast<float>(1.0 / correction2),
                             epsilon,
                             grad_scale,
                             detail::decay_factor(learning_rate, weight_decay)};
  }
  /// @p out's step count after one update of @p in.
  template <class S>
  void advance(const S& in, S& out) const noexcept {
    out.t = in.t + 1;
  }

  // --- rows of a table (optim::row_optimizer): lazy Adam -------------------------------------
  /// A row keeps its first and second moments: `2 * dim` floats, `m` then `v`.
  DSGD_HOST_DEVICE std::size_t row_slots(std::size_t dim) const noexcept { return 2 * dim; }
  /// A new row's moments are 0.
  DSGD_HOST_DEVICE void init_row_slots(float* slots, std::size_t dim) const noexcept {
    detail::fill_row_slot(slots, 2 * dim, 0.f);
  }
  /// Calls @p f with the rule that updates one row and its moments as apply() updates each
  /// element at step `step.t`: TF1's LazyAdamOptimizer, the beta powers global, `m`, `v` and
  /// `w` updated on the rows given only.
  /// @throws dsgd::error (errc::invalid_argument) when `step.t` is 0 (the updates count from 1)
  template <class F>
  void with_row_rule(float grad_scale, row_step step, F&& f) const {
    if (step.t == 0)
      throw error(errc::invalid_argument, "optim::adam::with_row_rule: row_step.t is 0, but updates count from 1");
    f(detail::element_row_rule<detail::adam_rule>{rule_at(step.t, grad_scale)});
  }
  /// Updates the row of @p dim weights at @p w and its moments at @p slots from the gradient
  /// row @p g, as update number `step.t` of the table.
  /// @throws dsgd::error (errc::invalid_argument) when `step.t` is 0
  void apply_row(float* w, float* slots, const float* g, std::size_t dim, float grad_scale = 1.f,
                 row_step step = {}) const {
    detail::apply_one_row(*this, w, slots, g, dim, grad_scale, step);
  }
};

}  // namespace dsgd::optim
