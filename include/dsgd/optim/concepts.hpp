// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The Optimizer concept: how a combined gradient changes a variable.
#pragma once

#include <dsgd/device/concepts.hpp>
#include <dsgd/optim/detail/elementwise.hpp>

#include <concepts>
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
concept Optimizer = Device<D> && std::copy_constructible<O> &&
    requires(const O& o, const D& d, typename O::template state<D>& s, float* p, const float* g, std::size_t n) {
  typename O::template state<D>;
  requires std::constructible_from < typename O::template state<D>,
  const D&, std::size_t > ;
  o.apply(d, s, p, g, n, 1.f);
};

/// An optimizer state whose slots and counters checkpoints hold: it has `visit(f)` (see
/// Optimizer).
template <class S>
concept checkpointable_state = requires(S& s) {
  s.visit([](const char*, auto&) {});
};

namespace optim {

/// An Optimizer whose update is one rule per element, written once and mapped in place over a
/// variable (its apply()), out of place over a range (update::chunked_apply) and over rows
/// (update::sparse_apply); optim::sgd, momentum, adagrad, adam and ftrl are. A model provides
///  - `O::slot_count`: how many per-element slots its state holds;
///  - `O::slots_of(s)`: a `std::array` of the slots' raw data pointers (const for a const @p s);
///  - `o.with_rule(s, grad_scale, f)`: calls `f(rule)` with the DSGD_HOST_DEVICE rule of the
///    next update of @p s, `rule(float& w, float g, float& slot...)` (`rule::slot_count` slots);
///  - and, when the rule depends on a counter of the state (adam's t), `O::counts_updates`
///    (true) and `o.advance(in, out)`: sets `out`'s counters to `in`'s after one update.
/// Its apply() is then `optim::detail::map_in_place(*this, device, s, w, g, n, grad_scale)`.
template <class O>
concept elementwise = requires {
  { O::slot_count } -> std::convertible_to<std::size_t>;
};

/// True for an elementwise optimizer whose rule depends on a counter of its state: a part of a
/// push (some rows) is then no update of its own, so such optimizers have no sparse or chunked
/// apply.
template <class O>
inline constexpr bool counts_updates_v = requires {
  requires O::counts_updates;
};

}  // namespace optim

}  // namespace dsgd
