// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The Placement concept: which ps task owns which variable or shard.
#pragma once

#include <dsgd/placement/plan.hpp>

#include <concepts>
#include <cstddef>
#include <vector>

namespace dsgd {

/// A Placement maps variables, in creation order, to ps tasks.
///
/// A model provides `p.place(variables, ps_tasks)` returning a placement::plan. It must be a
/// pure function of its arguments (and the policy's own settings): every worker computes the
/// plan on its own and the plans' fingerprints are compared at connect time. If you get an
/// error on a line that requires this concept, see docs/policies.md.
template <class P>
concept Placement = std::copy_constructible<P> && requires(const P& p, const std::vector<placement::variable_info>& v) {
  { p.place(v, std::size_t{1}) } -> std::same_as<placement::plan>;
};

}  // namespace dsgd
