// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::piecewise_constant<O>: a learning rate that is constant between step boundaries.
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/optim/detail/schedule.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dsgd::optim {

/// Runs optimizer @p O with a learning rate taken from @p values by step, as TensorFlow's
/// `tf.compat.v1.train.piecewise_constant(t, boundaries, values)` and Keras'
/// `PiecewiseConstantDecay`:
///
///   lr(t) = values[0] while t <= boundaries[0], values[i] while boundaries[i-1] < t <= boundaries[i],
///           values.back() once t > boundaries.back()
///
/// `t` counts the updates applied to the variable before this one (0 for the first), as in
/// optim::exponential_decay; `base.learning_rate` is not used. PyTorch's
/// `MultiStepLR(milestones, gamma)` changes the rate when its count *reaches* a milestone `m`:
/// it is `boundaries = m - 1` and `values = lr, lr * gamma, lr * gamma^2, ...`.
///
/// The state holds the inner optimizer's slots under their own names and the step as the
/// counter `schedule_step`: a checkpoint restores both. Applied whole by every rule.
template <class O>
struct piecewise_constant {
  O base{};                                 ///< the inner optimizer (its learning_rate is replaced)
  std::vector<std::uint64_t> boundaries{};  ///< strictly increasing steps
  std::vector<float> values{};              ///< boundaries.size() + 1 learning rates

  /// The inner optimizer's slots and the update count (optim::detail::schedule_state).
  template <Device D>
  using state = detail::schedule_state<O, D>;

  /// @returns the learning rate after @p updates updates.
  /// @throws dsgd::error (errc::invalid_argument) when values does not hold one more rate than
  ///         boundaries has steps, or the boundaries do not increase
  float learning_rate_at(std::uint64_t updates) const {
    check();
    const auto i = std::lower_bound(boundaries.begin(), boundaries.end(), updates) - boundaries.begin();
    return values[static_cast<std::size_t>(i)];
  }

  /// Applies one update of @p O at learning_rate_at(s.updates), then counts it.
  /// @throws dsgd::error (errc::invalid_argument) as learning_rate_at()
  template <Device D>
  void apply(const D& device, state<D>& s, float* w, const float* g, std::size_t n, float grad_scale = 1.f) const {
    detail::apply_at_rate(base, learning_rate_at(s.updates), device, s, w, g, n, grad_scale);
  }

 private:
  void check() const {
    if (values.size() != boundaries.size() + 1)
      throw error(errc::invalid_argument, "optim::piecewise_constant: values holds " + std::to_string(values.size()) +
                                              " rates for " + std::to_string(boundaries.size()) +
                                              " boundaries; expected one rate more than boundaries");
    for (std::size_t i = 1; i < boundaries.size(); ++i)
      if (boundaries[i] <= boundaries[i - 1])
        throw error(errc::invalid_argument, "optim::piecewise_constant: boundaries[" + std::to_string(i) + "] = " +
                                                std::to_string(boundaries[i]) + " does not exceed boundaries[" +
                                                std::to_string(i - 1) + "] = " + std::to_string(boundaries[i - 1]) +
                                                "; expected strictly increasing steps");
  }
};

}  // namespace dsgd::optim
