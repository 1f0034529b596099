// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::exponential_decay<O>: a learning-rate schedule around any optimizer.
#pragma once

#include <dsgd/optim/concepts.hpp>
#include <dsgd/optim/detail/schedule.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace dsgd::optim {

/// Runs optimizer @p O with its learning rate decayed by the number of updates applied, as
/// TensorFlow's `tf.compat.v1.train.exponential_decay` and Keras' `ExponentialDecay`:
///
///   lr(t) = base.learning_rate * decay_rate ^ (t / decay_steps)   (integer division if staircase)
///
/// `t` counts the updates applied to the variable before this one (0 for the first), so on a ps
/// the schedule follows the global step under sync_average and the number of gradients applied
/// under async and SSP. The exponent is computed in double. PyTorch's `ExponentialLR(gamma)` is
/// `decay_steps = 1, decay_rate = gamma`; its `StepLR(step_size, gamma)` is
/// `decay_steps = step_size, decay_rate = gamma, staircase = true`.
///
/// The state holds the inner optimizer's slots under their own names and the step as the
/// counter `schedule_step`: a checkpoint restores both (docs/checkpoints.md). Every rule applies
/// it whole: it has no chunked or sparse apply (the step counts whole updates).
template <class O>
struct exponential_decay {
  O base{};  ///< the inner optimizer; its learning_rate is the rate at step 0
  float decay_rate = 1.f;
  std::uint64_t decay_steps = 1;  ///< 0 is taken as 1
  bool staircase = true;

  /// The inner optimizer's slots and the update count (optim::detail::schedule_state).
  template <Device D>
  using state = detail::schedule_state<O, D>;

  /// @returns the learning rate after @p updates updates.
  float learning_rate_at(std::uint64_t updates) const noexcept {
    const std::uint64_t steps = decay_steps == 0 ? 1 : decay_steps;
    const double e =
        staircase ? static_cast<double>(updates / steps) : static_cast<double>(updates) / static_cast<double>(steps);
    return static_cast<float>(base.learning_rate * std::pow(static_cast<double>(decay_rate), e));
  }

  /// Applies one update of @p O at learning_rate_at(s.updates), then counts it.
  template <Device D>
  void apply(const D& device, state<D>& s, float* w, const float* g, std::size_t n, float grad_scale = 1.f) const {
    detail::apply_at_rate(base, learning_rate_at(s.updates), device, s, w, g, n, grad_scale);
  }
};

}  // namespace dsgd::optim
