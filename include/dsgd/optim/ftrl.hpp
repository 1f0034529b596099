// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::ftrl: FTRL-Proximal (McMahan et al. 2013), as TensorFlow 1's tf.train.FtrlOptimizer,
/// for sparse linear models such as the wide part of Wide & Deep.
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/detail/validate.hpp>
#include <dsgd/device/concepts.hpp>
#include <dsgd/optim/concepts.hpp>

#include <thrust/memory.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>

namespace dsgd::optim {

namespace detail {

/// optim::ftrl's rule for one element, its accumulator n and its linear term z. @p Sqrt: the
/// learning-rate power is -0.5, so `n^(-p)` is `sqrtf(n)` (TensorFlow's fast path); otherwise
/// `powf(n, -p)`. A template parameter, so that the per-element loop carries no branch.
template <bool Sqrt>
struct ftrl_rule {
  static constexpr std::size_t slot_count = 2;
  float learning_rate;
  float neg_power;            // -learning_rate_power (>= 0); unused with Sqrt
  float initial_accumulator;  // what an accumulator of 0 stands for (an element never updated)
  float l1;
  float two_l2;            // 2 * l2_regularization_strength
  float two_l2_shrinkage;  // 2 * l2_shrinkage_regularization_strength
  float grad_scale;

  DSGD_HOST_DEVICE float root(float x) const {
    if constexpr (Sqrt) {
      return sqrtf(x);
    } else {
      return powf(x, neg_power);
    }
  }

  DSGD_HOST_DEVICE void operator()(float& w, float g, float& n, float& z) const {
    const float gi = grad_scale * g;
    const float gz = gi + two_l2_shrinkage * w;  // exactly gi without shrinkage (w finite)
    const float n_old = n == 0.f ? initial_accumulator : n;
    const float n_new = n_old + gi * gi;
    const float root_new = root(n_new);
    z = z + (gz - (root_new - root(n_old)) / learning_rate * w);
    n = n_new;
    const float quadratic = root_new / learning_rate + two_l2;
    w = fabsf(z) > l1 ? ((z > 0.f ? l1 : -l1) - z) / quadratic : 0.f;
  }
};

}  // namespace detail

/// FTRL-Proximal, as TensorFlow 1's `tf.train.FtrlOptimizer(learning_rate, learning_rate_power,
/// initial_accumulator_value, l1_regularization_strength, l2_regularization_strength, ...,
/// l2_shrinkage_regularization_strength)` (kernels ApplyFtrl, ApplyFtrlV2; SparseApplyFtrl for
/// rows).
///
/// With `g = grad_scale * grad`, `p = learning_rate_power`, `lr = learning_rate`, every element
/// with accumulator `n` and linear term `z` is updated by
///
///     g_s   = g + 2 * l2_shrinkage * w                (g without shrinkage)
///     n_new = n + g * g
///     z     = z + (g_s - (n_new^(-p) - n^(-p)) / lr * w)
///     n     = n_new
///     w     = |z| > l1 ? (sign(z) * l1 - z) / (n_new^(-p) / lr + 2 * l2) : 0
///
/// in float, `n^(-p)` by `sqrtf` when `p` is exactly -0.5 and by `powf` otherwise. `n` starts at
/// `initial_accumulator_value` and `z` at 0. With `l1 > 0` the weights of features whose
/// gradients sum to less than `l1` are exactly 0: FTRL's sparsity.
///
/// No counter is read, so a part of an update (a chunk, some rows) is an update of its own:
/// ftrl is applied whole, chunk by chunk (update::chunked_apply) and to rows only
/// (update::sparse_apply, which updates no other row, as TensorFlow's SparseApplyFtrl). It
/// has no decoupled `weight_decay`: the update computes `w` afresh from `z` and `n`, so a decay
/// of `w` would be lost; use `l2_regularization_strength` or the shrinkage term.
///
/// Bad settings are refused by every apply with dsgd::error (errc::invalid_argument) naming the
/// field (see validate()).
struct ftrl {
  float learning_rate = 0.001f;                      ///< alpha; > 0
  float learning_rate_power = -0.5f;                 ///< p; <= 0 (0: a fixed rate)
  float initial_accumulator_value = 0.1f;            ///< where each accumulator starts; >= 0
  float l1_regularization_strength = 0.f;            ///< l1; >= 0
  float l2_regularization_strength = 0.f;            ///< l2 (stabilising, in the denominator); >= 0
  float l2_shrinkage_regularization_strength = 0.f;  ///< l2 added to the loss (ApplyFtrlV2); >= 0

  /// The per-variable slots: accumulator and linear term per element, in @p D's memory.
  template <Device D>
  struct state {
    /// Allocates @p n accumulators and linear terms, all 0, on @p device.
    state(const D&, std::size_t n) : accumulator(n, 0.f), linear(n, 0.f) {}
    /// The sum of squared gradients from `initial_accumulator_value`. An element that was never
    /// updated holds 0, which the update reads as `initial_accumulator_value` (the state cannot
    /// see the optimizer's settings); once updated it holds the true sum, which is > 0 unless
    /// the initial value and every gradient so far were 0, when 0 is the true sum as well. So
    /// each element starts exactly where TensorFlow's would, also a row first touched by a
    /// sparse update long after the others.
    typename D::template vector<float> accumulator;
    /// The linear term z.
    typename D::template vector<float> linear;
    /// Calls `f(name, slot)` for each slot: what a checkpoint holds of this state.
    template <class F>
    void visit(F&& f) {
      f("accumulator", accumulator);
      f("linear", linear);
    }
  };

  /// Applies one update to the @p n elements at @p w from the gradient at @p g (raw pointers into
  /// @p device's memory; @p w and @p g must not overlap), in one fused pass.
  /// @throws dsgd::error (errc::shape_mismatch) when @p s was made for a different size;
  ///         (errc::invalid_argument) for bad settings (validate()), before anything is written.
  template <Device D>
  void apply(const D& device, state<D>& s, float* w, const float* g, std::size_t n, float grad_scale = 1.f) const {
    if (s.accumulator.size() != n || s.linear.size() != n)
      detail::throw_state_size("optim::ftrl", s.accumulator.size(), "accumulators", n);
    detail::map_in_place(*this, device, s, w, g, n, grad_scale);
  }

  /// Checks the settings, naming a bad field by its path ("optim::ftrl.learning_rate_power").
  /// @throws dsgd::error (errc::invalid_argument)
  void validate(std::string_view path = "optim::ftrl") const {
    if (!(learning_rate > 0.f) || !std::isfinite(learning_rate))
      dsgd::detail::bad_option(path, "learning_rate",
                               "must be a finite number > 0 (it is " + std::to_string(learning_rate) + ")");
    if (!(learning_rate_power <= 0.f) || !std::isfinite(learning_rate_power))
      dsgd::detail::bad_option(path, "learning_rate_power",
                               "must be a finite number <= 0 (it is " + std::to_string(learning_rate_power) + ")");
    require_non_negative(path, "initial_accumulator_value", initial_accumulator_value);
    require_non_negative(path, "l1_regularization_strength", l1_regularization_strength);
    require_non_negative(path, "l2_regularization_strength", l2_regularization_strength);
    require_non_negative(path, "l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength);
  }

  /// Two slots, the accumulator and the linear term (optim::elementwise).
  static constexpr std::size_t slot_count = 2;
  /// @returns the slots' data of @p s: the accumulator and the linear term.
  template <class S>
  static auto slots_of(S& s) noexcept {
    return std::array{thrust::raw_pointer_cast(s.accumulator.data()), thrust::raw_pointer_cast(s.linear.data())};
  }
  /// Calls @p f with the element rule of the next update (optim::elementwise), after validate().
  template <class S, class F>
  void with_rule(const S&, float grad_scale, F&& f) const {
    validate();
    const float two_l2 = l2_regularization_strength * 2.f;
    const float two_shrinkage = l2_shrinkage_regularization_strength * 2.f;
    if (learning_rate_power == -0.5f) {
      f(detail::ftrl_rule<true>{learning_rate, 0.5f, initial_accumulator_value, l1_regularization_strength, two_l2,
                                two_shrinkage, grad_scale});
    } else {
      f(detail::ftrl_rule<false>{learning_rate, -learning_rate_power, initial_accumulator_value,
                                 l1_regularization_strength, two_l2, two_shrinkage, grad_scale});
    }
  }

  // --- rows of a table (optim::row_optimizer) --------------------------------------------------
  /// A row keeps its accumulators and linear terms: `2 * dim` floats, `n` then `z`.
  DSGD_HOST_DEVICE std::size_t row_slots(std::size_t dim) const noexcept { return 2 * dim; }
  /// A new row's accumulators are `initial_accumulator_value`, its linear terms 0.
  DSGD_HOST_DEVICE void init_row_slots(float* slots, std::size_t dim) const noexcept {
    detail::fill_row_slot(slots, dim, initial_accumulator_value);
    detail::fill_row_slot(slots + dim, dim, 0.f);
  }
  /// Calls @p f with the rule that updates one row and its slots as apply() updates each
  /// element (TensorFlow's SparseApplyFtrl), after validate().
  /// @throws dsgd::error (errc::invalid_argument) for bad settings
  template <class F>
  void with_row_rule(float grad_scale, row_step, F&& f) const {
    detail::with_element_row_rule(*this, grad_scale, f);
  }
  /// Updates the row of @p dim weights at @p w and its slots at @p slots from the gradient row
  /// @p g. In a loop over many rows, prefer with_row_rule(): it validates the settings once.
  /// @throws dsgd::error (errc::invalid_argument) for bad settings, before anything is written
  void apply_row(float* w, float* slots, const float* g, std::size_t dim, float grad_scale = 1.f,
                 row_step step = {}) const {
    detail::apply_one_row(*this, w, slots, g, dim, grad_scale, step);
  }

 private:
  static void require_non_negative(std::string_view path, std::string_view field, float value) {
    if (!(value >= 0.f) || !std::isfinite(value))
      dsgd::detail::bad_option(path, field, "must be a finite number >= 0 (it is " + std::to_string(value) + ")");
  }
};

}  // namespace dsgd::optim
