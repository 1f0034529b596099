// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// What every learning-rate schedule (optim::exponential_decay, piecewise_constant,
/// cosine_decay) shares: its state, the inner optimizer's slots and the count of updates
/// applied, both visited for checkpoints; and its apply, the inner optimizer run at the rate of
/// that count.
// IWYU pragma: private
#pragma once

#include <dsgd/device/concepts.hpp>
#include <dsgd/optim/concepts.hpp>

#include <cstddef>
#include <cstdint>

namespace dsgd::optim::detail {

/// The state of a schedule around optimizer @p O on device @p D: the inner optimizer's slots and
/// the number of updates applied, the step the schedule is at.
template <class O, Device D>
struct schedule_state {
  /// Allocates the inner optimizer's slots for @p n elements on @p device; no update applied.
  schedule_state(const D& device, std::size_t n) : inner(device, n) {}
  /// The inner optimizer's slots (momentum's velocity, adam's moments and t).
  typename O::template state<D> inner;
  /// How many updates have been applied: the schedule's step, 0 before the first.
  std::uint64_t updates = 0;
  /// Calls `f(name, slot)` for each of the inner optimizer's slots and counters under their own
  /// names (so that `w/velocity` reads the same with or without a schedule), then
  /// `f("schedule_step", updates)`: what a checkpoint holds of this state.
  template <class F>
  void visit(F&& f) {
    if constexpr (checkpointable_state<typename O::template state<D>>) inner.visit(f);
    f("schedule_step", updates);
  }
};

/// One update of a schedule: runs @p base at @p learning_rate (the schedule's rate at step
/// `s.updates`) on the inner slots, then counts the update.
template <class O, class Dev, class S>
void apply_at_rate(const O& base, float learning_rate, const Dev& device, S& s, float* w, const float* g, std::size_t n,
                   float grad_scale) {
  O now = base;
  now.learning_rate = learning_rate;
  now.apply(device, s.inner, w, g, n, grad_scale);
  ++s.updates;
}

}  // namespace dsgd::optim::detail
