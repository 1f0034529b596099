// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// A device and an optimizer that model nothing but their concepts: the UpdateRule concept
/// asks a rule's shard for these, so that it names no concrete policy of another family and a
/// rule that leans on more than the concepts promise is refused.
// IWYU pragma: private, include <dsgd/update/concepts.hpp>
#pragma once

#include <dsgd/device/concepts.hpp>

#include <thrust/execution_policy.h>
#include <thrust/host_vector.h>

#include <cstddef>
#include <string>

namespace dsgd::update::detail {

/// A Device and nothing more: host memory, the sequential policy.
struct archetype_device {
  /// Host memory.
  template <class T>
  using vector = thrust::host_vector<T>;
  /// Raw pointers are host pointers.
  static constexpr bool is_host = true;
  /// @returns the sequential host policy.
  auto policy() const { return thrust::seq; }
  /// Nothing to wait for.
  void synchronize() const {}
  /// @returns a name no device parser knows.
  std::string name() const { return "archetype"; }
};

/// An Optimizer for any Device and nothing more: no visit, no element rule, no chunked or
/// sparse apply.
struct archetype_optimizer {
  /// No slots.
  template <Device D>
  struct state {
    state(const D&, std::size_t) {}
  };
  /// Leaves the values as they are.
  template <Device D>
  void apply(const D&, state<D>&, float*, const float*, std::size_t, float = 1.f) const {}
};

}  // namespace dsgd::update::detail
