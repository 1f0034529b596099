// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::rowwise_adagrad: Adagrad with one accumulator per row (FBGEMM's and TorchRec's
/// row-wise Adagrad), the optimizer of large embedding tables.
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/device/concepts.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/concepts.hpp>

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/memory.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

namespace dsgd::optim {

namespace detail {

/// optim::rowwise_adagrad's rule for one row of @p dim weights and its accumulator
/// `slots[0]`: the one rule of its dense apply, its sparse apply and a table's rows.
struct rowwise_adagrad_rule {
  float learning_rate;
  float epsilon;
  float grad_scale;
  float initial_accumulator;  // what an accumulator of 0 stands for (a row never updated)
  float decay;                // 1 - learning_rate * weight_decay: 1 (exact, w unchanged) without weight decay
  DSGD_HOST_DEVICE void operator()(float* w, float* slots, const float* g, std::size_t dim) const {
    if (dim == 0) return;  // no mean of nothing: the row and its accumulator stay
    float sum = 0.f;
    for (std::size_t c = 0; c < dim; ++c) {
      const float gi = grad_scale * g[c];
      sum += gi * gi;
    }
    const float a = (slots[0] == 0.f ? initial_accumulator : slots[0]) + sum / static_cast<float>(dim);
    slots[0] = a;
    const float rate = learning_rate / (sqrtf(a) + epsilon);
    for (std::size_t c = 0; c < dim; ++c) {
      const float gi = grad_scale * g[c];
      w[c] *= decay;
      w[c] -= rate * gi;
    }
  }
};

/// The rule over the rows of a dense variable, row k of the map at element `at.value(k *
/// width)` of the variable and `at.gradient(k * width)` of the gradient (whole_index: every
/// row in order; row_index: the rows of a sparse push). The dense state keeps one float per
/// element (see rowwise_adagrad::state): the rule reads and writes the row's first, and the
/// others are set to it.
template <class Index>
struct rowwise_adagrad_kernel {
  rowwise_adagrad_rule rule;
  Index at;
  float* w;
  float* acc;
  const float* g;
  std::size_t width;
  DSGD_HOST_DEVICE void operator()(std::size_t k) const {
    const std::size_t first = at.value(k * width);
    float* a = acc + first;
    rule(w + first, a, g + at.gradient(k * width), width);
    for (std::size_t c = 1; c < width; ++c) a[c] = a[0];
  }
};

}  // namespace detail

/// Row-wise Adagrad, as FBGEMM's `EXACT_ROWWISE_ADAGRAD` (TorchRec's row-wise Adagrad for
/// embedding tables): one accumulator per row instead of one per weight.
///
/// With `g = grad_scale * grad` and a row of `dim` weights with accumulator `a`:
///
///     a <- a + (sum over the row of g * g) / dim          (the mean of g^2 over the row)
///     w <- w - (learning_rate / (sqrt(a) + epsilon)) * g  (every weight of the row)
///
/// in float, the sum in column order; `a` starts at `initial_accumulator`. With
/// `weight_decay` (decoupled, as adagrad's), every weight of the row first decays by
/// `w <- w * (1 - learning_rate * weight_decay)`. Rows of width 1 are adagrad's formula
/// (rounded differently: the rate is computed before it multiplies g).
///
/// As a row optimizer (optim::row_optimizer) a table row keeps one float, its accumulator, set
/// to `initial_accumulator` for a new row: a table of width `dim` keeps `dim + 1` floats a row
/// where optim::adagrad keeps `2 * dim`.
///
/// On a dense variable a row is `row_width` consecutive elements (0, the default: the whole
/// variable is one row), local to the shard the ps holds: the placement must keep rows whole,
/// as row-partitioned placements do. The dense state keeps one float per element, each element
/// holding its row's accumulator: a slot of the variable's size, as every optimizer state has,
/// so shards and checkpoints hold it like adagrad's. Memory is saved in tables, not here.
/// A sparse push to a dense variable (apply_rows()) updates the rows given only.
///
/// No counter is read; an accumulator of 0 stands for `initial_accumulator` (as adagrad's).
struct rowwise_adagrad {
  float learning_rate = 0.01f;
  float initial_accumulator = 0.1f;  ///< where each row's accumulator starts; >= 0
  float epsilon = 1e-7f;
  float weight_decay = 0.f;   ///< decoupled weight decay per unit of learning rate; 0: none
  std::size_t row_width = 0;  ///< a dense variable's row: this many elements; 0: the whole variable

  /// The per-variable slot: each element holds its row's accumulator (all of a row's equal),
  /// in @p D's memory.
  template <Device D>
  struct state {
    /// Allocates @p n accumulators, all 0 (read as `initial_accumulator`), on @p device.
    state(const D&, std::size_t n) : accumulator(n, 0.f) {}
    /// The accumulator of each element's row; 0 for a row never updated.
    typename D::template vector<float> accumulator;
    /// Calls `f(name, slot)` for each slot: what a checkpoint holds of this state.
    template <class F>
    void visit(F&& f) {
      f("accumulator", accumulator);
    }
  };

  /// Applies one update to the @p n elements at @p w from the gradient at @p g (raw pointers into
  /// @p device's memory; @p w and @p g must not overlap), rows in parallel.
  /// @throws dsgd::error (errc::shape_mismatch) when @p s was made for a different size or
  ///         `row_width` does not divide @p n, before anything is written
  template <Device D>
  void apply(const D& device, state<D>& s, float* w, const float* g, std::size_t n, float grad_scale = 1.f) const {
    if (s.accumulator.size() != n)
      detail::throw_state_size("optim::rowwise_adagrad", s.accumulator.size(), "accumulators", n);
    if (n == 0) return;
    const std::size_t width = width_of(n, "apply");
    thrust::for_each_n(device.policy(), thrust::counting_iterator<std::size_t>(0), n / width,
                       detail::rowwise_adagrad_kernel<detail::whole_index>{
                           rule(grad_scale), {}, w, thrust::raw_pointer_cast(s.accumulator.data()), g, width});
  }

  /// A sparse apply (TensorFlow's SparseApply*): rows @p rows[0..count) (unique, local to the
  /// variable, unchecked) of the @p dim-wide rows at @p w, from the packed gradient rows @p g
  /// (count x dim); every other row and accumulator stays. Every pointer is in @p device's
  /// memory. The push's rows are the variable's rows: @p dim must be `row_width` (the
  /// variable's size when `row_width` is 0). Nothing reads a counter, so the rows of a push
  /// are an update of their own: this is what update::sparse_apply would call for it.
  /// @throws dsgd::error (errc::shape_mismatch) when @p dim is not the variable's row width
  ///         (a push of no rows is a no-op)
  template <Device D>
  void apply_rows(const D& device, state<D>& s, float* w, const std::uint64_t* rows, std::size_t count, std::size_t dim,
                  const float* g, float grad_scale = 1.f) const {
    if (count == 0) return;
    const std::size_t width = width_of(s.accumulator.size(), "apply_rows");
    if (dim != width)
      throw error(errc::shape_mismatch, "optim::rowwise_adagrad::apply_rows: rows of " + std::to_string(dim) +
                                            " floats, but the variable's rows are " + std::to_string(width) +
                                            " wide (row_width)");
    thrust::for_each_n(device.policy(), thrust::counting_iterator<std::size_t>(0), count,
                       detail::rowwise_adagrad_kernel<detail::row_index>{
                           rule(grad_scale), {rows, dim}, w, thrust::raw_pointer_cast(s.accumulator.data()), g, dim});
  }

  // --- rows of a table (optim::row_optimizer) --------------------------------------------------
  /// A row keeps one float, its accumulator, whatever its width.
  DSGD_HOST_DEVICE std::size_t row_slots(std::size_t) const noexcept { return 1; }
  /// A new row's accumulator is `initial_accumulator`.
  DSGD_HOST_DEVICE void init_row_slots(float* slots, std::size_t) const noexcept { slots[0] = initial_accumulator; }
  /// Calls @p f with the rule that updates one row and its accumulator.
  template <class F>
  void with_row_rule(float grad_scale, row_step, F&& f) const {
    f(rule(grad_scale));
  }
  /// Updates the row of @p dim weights at @p w and its accumulator `slots[0]` from the
  /// gradient row @p g.
  void apply_row(float* w, float* slots, const float* g, std::size_t dim, float grad_scale = 1.f,
                 row_step step = {}) const {
    detail::apply_one_row(*this, w, slots, g, dim, grad_scale, step);
  }

 private:
  detail::rowwise_adagrad_rule rule(float grad_scale) const {
    return {learning_rate, epsilon, grad_scale, initial_accumulator, detail::decay_factor(learning_rate, weight_decay)};
  }

  // The width of the rows of a dense variable of n elements; throws when they do not tile it.
  std::size_t width_of(std::size_t n, const char* what) const {
    const std::size_t width = row_width == 0 ? n : row_width;
    if (width == 0 || n % width != 0)
      throw error(errc::shape_mismatch, std::string("optim::rowwise_adagrad::") + what +
                                            ": rows of row_width = " + std::to_string(row_width) +
                                            " do not tile a variable of " + std::to_string(n) + " elements");
    return width;
  }
};

}  // namespace dsgd::optim
