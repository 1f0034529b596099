// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::lazy_adam: Adam whose sparse updates touch only the rows given, as TF1 contrib's
/// LazyAdamOptimizer, with the bias corrections of the global step.
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/device/concepts.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/concepts.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace dsgd::optim {

/// Lazy Adam, as TF1's `tf.contrib.opt.LazyAdamOptimizer`: on a sparse update (some rows of a
/// variable, or the rows of an embedding table) only those rows' `m`, `v` and weights change;
/// every other row, its moments included, stays as it is, where dense Adam would decay their
/// moments and keep moving their weights. The bias corrections use the global step: `t` counts
/// every update of the variable (or table), whichever rows it touched.
///
/// With `g = grad_scale * grad` and t the 1-based count of updates, every element of a row
/// updated is
///
///     m <- beta1 * m + (1 - beta1) * g
///     v <- beta2 * v + (1 - beta2) * g * g
///     w <- w - learning_rate * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + epsilon)
///
/// optim::adam's element rule, written once there: epsilon is added to `sqrt(v_hat)` as in
/// PyTorch, where TF1's Adam kernels add `epsilon` to `sqrt(v)` before the correction
/// `sqrt(1 - beta2^t)` (`w <- w - lr_t * m / (sqrt(v) + epsilon)`, `lr_t = learning_rate *
/// sqrt(1 - beta2^t) / (1 - beta1^t)`): the two differ only while `v` is tiny. `weight_decay`
/// (decoupled, AdamW) decays the rows updated only.
///
/// Dense (apply()) it is optim::adam, bit for bit, on the same state (adam::state). A sparse
/// push to a dense variable is apply_rows(): one update, `t` advanced once. As a row optimizer
/// (optim::row_optimizer) it is optim::adam's rows, named for what they are.
struct lazy_adam {
  float learning_rate = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  float weight_decay = 0.f;  ///< decoupled weight decay per unit of learning rate; 0: none (AdamW otherwise)

  /// The per-variable slots, optim::adam's: `m`, `v` per element and the update count `t`,
  /// each visited for checkpoints.
  template <Device D>
  using state = adam::state<D>;

  /// The same settings as dense Adam: what apply() runs.
  constexpr adam dense() const noexcept { return adam{learning_rate, beta1, beta2, epsilon, weight_decay}; }

  /// Applies one dense update to the @p n elements at @p w, as optim::adam; advances `s.t`.
  /// @throws dsgd::error (errc::shape_mismatch) when @p s was made for a different size
  template <Device D>
  void apply(const D& device, state<D>& s, float* w, const float* g, std::size_t n, float grad_scale = 1.f) const {
    dense().apply(device, s, w, g, n, grad_scale);
  }

  /// One lazy update of rows @p rows[0..count) (unique, local to the variable, unchecked) of the
  /// @p dim-wide rows at @p w, from the packed gradient rows @p g (count x dim): those rows'
  /// weights and moments change, no other's; `s.t` advances once. Every pointer is in
  /// @p device's memory. This is what update::sparse_apply would call for lazy Adam.
  /// @throws dsgd::error (errc::shape_mismatch) when rows of @p dim floats do not tile @p s
  template <Device D>
  void apply_rows(const D& device, state<D>& s, float* w, const std::uint64_t* rows, std::size_t count, std::size_t dim,
                  const float* g, float grad_scale = 1.f) const {
    if (dim == 0 || s.m.size() % dim != 0 || s.v.size() != s.m.size())
      throw error(errc::shape_mismatch, "optim::lazy_adam::apply_rows: rows of " + std::to_string(dim) +
                                            " floats do not tile a state of " + std::to_string(s.m.size()) +
                                            " moments");
    detail::map_rows(dense(), device, s, w, rows, count, dim, g, grad_scale);
  }

  /// Two slots, the moments (optim::elementwise), adam's.
  static constexpr std::size_t slot_count = adam::slot_count;
  /// The rule depends on the update count (the bias corrections).
  static constexpr bool counts_updates = true;
  /// @returns the slots' data of @p s: m and v.
  template <class S>
  static auto slots_of(S& s) noexcept {
    return adam::slots_of(s);
  }
  /// Calls @p f with adam's element rule of the next update of @p s (optim::elementwise).
  template <class S, class F>
  void with_rule(const S& s, float grad_scale, F&& f) const {
    dense().with_rule(s, grad_scale, f);
  }
  /// @p out's update count after one update of @p in.
  template <class S>
  void advance(const S& in, S& out) const noexcept {
    dense().advance(in, out);
  }

  // --- rows of a table (optim::row_optimizer) --------------------------------------------------
  /// A row keeps its first and second moments: `2 * dim` floats, `m` then `v`.
  DSGD_HOST_DEVICE std::size_t row_slots(std::size_t dim) const noexcept { return 2 * dim; }
  /// A new row's moments are 0.
  DSGD_HOST_DEVICE void init_row_slots(float* slots, std::size_t dim) const noexcept {
    detail::fill_row_slot(slots, 2 * dim, 0.f);
  }
  /// Calls @p f with the rule that updates one row and its moments at update `step.t` of the
  /// table.
  /// @throws dsgd::error (errc::invalid_argument) when `step.t` is 0 (the updates count from 1)
  template <class F>
  void with_row_rule(float grad_scale, row_step step, F&& f) const {
    dense().with_row_rule(grad_scale, step, f);
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
