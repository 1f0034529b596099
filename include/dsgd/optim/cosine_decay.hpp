// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::cosine_decay<O>: cosine learning-rate decay after an optional linear warmup.
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/optim/detail/schedule.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>

namespace dsgd::optim {

/// Runs optimizer @p O with a learning rate that rises linearly for `warmup_steps` updates,
/// then follows half a cosine down to `alpha` times its peak over `decay_steps` updates and
/// stays there, as Keras' `CosineDecay(initial_learning_rate = warmup_initial, decay_steps,
/// alpha, warmup_target = base.learning_rate, warmup_steps)` (TensorFlow 2.13 and later):
///
///   lr(t) = warmup_initial + (peak - warmup_initial) * t / warmup_steps     while t < warmup_steps
///   lr(t) = peak * ((1 - alpha) * c + alpha),  c = (1 + cos(pi * d / decay_steps)) / 2,
///           d = min(t - warmup_steps, decay_steps)                          afterwards
///
/// with `peak = base.learning_rate`; without warmup (`warmup_steps = 0`) this is
/// `tf.compat.v1.train.cosine_decay(peak, t, decay_steps, alpha)`, and PyTorch's
/// `CosineAnnealingLR(T_max = decay_steps, eta_min = alpha * peak)`; with it, PyTorch's
/// `SequentialLR` of `LinearLR(start_factor = warmup_initial / peak, total_iters =
/// warmup_steps)` and that `CosineAnnealingLR`. `t` counts the updates applied to the variable
/// before this one (0 for the first). The rate is computed in double.
///
/// The state holds the inner optimizer's slots under their own names and the step as the
/// counter `schedule_step`: a checkpoint restores both. Applied whole by every rule.
template <class O>
struct cosine_decay {
  O base{};                        ///< the inner optimizer; its learning_rate is the peak rate
  std::uint64_t decay_steps = 1;   ///< length of the cosine, after the warmup; at least 1
  float alpha = 0.f;               ///< the final rate as a fraction of the peak
  std::uint64_t warmup_steps = 0;  ///< length of the linear warmup; 0: none
  float warmup_initial = 0.f;      ///< the rate at step 0 when there is a warmup

  /// The inner optimizer's slots and the update count (optim::detail::schedule_state).
  template <Device D>
  using state = detail::schedule_state<O, D>;

  /// @returns the learning rate after @p updates updates.
  /// @throws dsgd::error (errc::invalid_argument) for decay_steps = 0
  float learning_rate_at(std::uint64_t updates) const {
    if (decay_steps == 0)
      throw error(errc::invalid_argument, "optim::cosine_decay: decay_steps is 0; expected at least 1 step of decay");
    const double peak = base.learning_rate;
    if (updates < warmup_steps) {
      const double initial = warmup_initial;
      return static_cast<float>(initial +
                                (peak - initial) * (static_cast<double>(updates) / static_cast<double>(warmup_steps)));
    }
    const double d = static_cast<double>(std::min(updates - warmup_steps, decay_steps));
    const double c = 0.5 * (1.0 + std::cos(std::numbers::pi * d / static_cast<double>(decay_steps)));
    const double a = alpha;
    return static_cast<float>(peak * ((1.0 - a) * c + a));
  }

  /// Applies one update of @p O at learning_rate_at(s.updates), then counts it.
  /// @throws dsgd::error (errc::invalid_argument) as learning_rate_at()
  template <Device D>
  void apply(const D& device, state<D>& s, float* w, const float* g, std::size_t n, float grad_scale = 1.f) const {
    detail::apply_at_rate(base, learning_rate_at(s.updates), device, s, w, g, n, grad_scale);
  }
};

}  // namespace dsgd::optim
