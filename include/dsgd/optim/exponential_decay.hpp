// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::exponential_decay<O>: a learning-rate schedule around any optimizer.
#pragma once

#include <dsgd/optim/concepts.hpp>

#include <cmath>
#include <cstdint>

namespace dsgd::optim {

/// Runs optimizer @p O with its learning rate decayed by the number of updates applied, as
/// TensorFlow's `exponential_decay`:
///
///   lr(t) = base.learning_rate * decay_rate ^ (t / decay_steps)   (integer division if staircase)
///
/// `t` counts the updates applied to the variable, so on a ps the schedule follows the global
/// step under sync_average and the number of gradients applied under async and SSP.
template <class O>
struct exponential_decay {
  O base{};
  float decay_rate = 1.f;
  std::uint64_t decay_steps = 1;
  bool staircase = true;

  /// The inner optimizer's slots and the update count.
  template <Device D>
  struct state {
    state(const D& device, std::size_t n) : inner(device, n) {}
    typename O::template state<D> inner;
    std::uint64_t updates = 0;
  };

  /// @returns the learning rate after @p updates updates.
  float learning_rate_at(std::uint64_t updates) const noexcept {
    const std::uint64_t steps = decay_steps == 0 ? 1 : decay_steps;
    const double e = staircase ? static_cast<double>(updates / steps)
                               : static_cast<double>(updates) / static_cast<double>(steps);
    return static_cast<float>(base.learning_rate * std::pow(static_cast<double>(decay_rate), e));
  }

  template <Device D>
  void apply(const D& device, state<D>& s, float* w, const float* g, std::size_t n,
             float grad_scale = 1.f) const {
    O now = base;
    now.learning_rate = learning_rate_at(s.updates++);
    now.apply(device, s.inner, w, g, n, grad_scale);
  }
};

}  // namespace dsgd::optim
