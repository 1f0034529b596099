// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The Optimizer concept: how a combined gradient changes a variable.
#pragma once

#include <dsgd/device/concepts.hpp>

#include <cstddef>

namespace dsgd {

/// An Optimizer @p O updates a variable in place, on device @p D, from a gradient.
///
/// A model provides
///  - `O::state<D>`: the per-variable slots (momentum, second moments, step count), constructed
///    as `state<D>(device, elements)`;
///  - `o.apply(device, state, param, grad, n, grad_scale)`: one fused in-place kernel over the
///    @p n elements at raw device pointers @p param and @p grad, using `grad_scale * grad` as the
///    gradient (so the sync rule can pass a sum of k gradients with grad_scale = 1/k and touch
///    memory once).
///
/// A state may also provide `s.visit(f)`, calling `f(name, slot)` for every per-element slot
/// (a `D::vector<float>` of the variable's size) and `f(name, counter)` for every
/// `std::uint64_t` counter: checkpoints then hold them (see checkpointable_state), and a restored
/// run continues exactly where it stopped. Without it the slots start afresh on restore.
///
/// Optimizers are pure: they know nothing of the network, the cluster or the session. If you get
/// an error on a line that requires this concept, see docs/policies.md for the required members.
template <class O, class D>
concept Optimizer =
    Device<D> && std::copy_constructible<O> &&
    requires(const O& o, const D& d, typename O::template state<D>& s, float* p, const float* g,
             std::size_t n) {
      typename O::template state<D>;
      requires std::constructible_from<typename O::template state<D>, const D&, std::size_t>;
      o.apply(d, s, p, g, n, 1.f);
    };

/// An optimizer state whose slots and counters checkpoints hold: it has `visit(f)` (see
/// Optimizer).
template <class S>
concept checkpointable_state = requires(S& s) { s.visit([](const char*, auto&) {}); };

}  // namespace dsgd
