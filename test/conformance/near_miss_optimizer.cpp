// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Must NOT compile: an optimizer with a state but no apply(), given to the trainer. The test
// conformance_near_miss_optimizer passes when the compiler refuses it naming the concept.
#include <dsgd/trainer.hpp>

#include <cstddef>

struct no_apply {
  template <class D>
  struct state {
    state(const D&, std::size_t) {}
  };
};

dsgd::trainer<dsgd::device::cpu, dsgd::placement::round_robin, dsgd::update::sync_average, no_apply>* refused = nullptr;
