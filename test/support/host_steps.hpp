// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support: an optimizer stepping a few weights on the host with one gradient, as the
// optimizers' hand-computed tests check it step by step (the weights and the state's slots are
// the test's to read after each step).
#pragma once

#include <dsgd/device/cpu.hpp>

#include <cstddef>
#include <vector>

namespace dsgd::test {

template <class Optimizer>
struct host_steps {
  using cpu = device::cpu;

  Optimizer opt;
  cpu::vector<float> w;
  const cpu::vector<float> g;
  typename Optimizer::template state<cpu> s;

  // Weights @p w0, each step with gradient @p grad (as many elements), from a fresh state.
  host_steps(Optimizer o, const std::vector<float>& w0, const std::vector<float>& grad)
      : opt(o), w(w0.begin(), w0.end()), g(grad.begin(), grad.end()), s(cpu{}, w0.size()) {}

  // One apply() of g, scaled by @p grad_scale.
  void step(float grad_scale = 1.f) { opt.apply(cpu{}, s, w.data(), g.data(), w.size(), grad_scale); }
  // The weights now.
  std::vector<float> weights() const { return {w.begin(), w.end()}; }
};

}  // namespace dsgd::test
