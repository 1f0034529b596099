// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Must NOT compile: a TF1-style owner(i, n) placement with no place(), given to the trainer. The
// test conformance_near_miss_placement passes when the compiler refuses it naming the concept.
#include <dsgd/trainer.hpp>

#include <cstddef>

struct owner_only {
  std::size_t owner(std::size_t i, std::size_t n) const { return i % n; }
};

dsgd::trainer<dsgd::device::cpu, owner_only>* refused = nullptr;
