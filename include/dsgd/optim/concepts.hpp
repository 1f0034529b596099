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
#include <cstdint>
#include <string_view>

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

/// @returns optimizer @p o's slots for @p n elements on @p device: `o.make_state(device, n)`
/// where @p o chooses its state at run time (optim::per_variable), else `O::state<D>(device, n)`.
template <class O, Device D>
typename O::template state<D> make_state(const O& o, const D& device, std::size_t n) {
  if constexpr (requires { o.make_state(device, n); }) return o.make_state(device, n);
  else return typename O::template state<D>(device, n);
}

/// @returns the optimizer that variable @p name applies: `o.for_variable(name)` where @p o
/// gives variables their own (optim::per_variable), else @p o.
template <class O>
O for_variable(const O& o, std::string_view name) {
  if constexpr (requires { o.for_variable(name); }) return o.for_variable(name);
  else return o;
}

/// An optimizer that applies one of several, chosen at run time (optim::per_variable): it
/// provides `o.with_applied(f)`, calling `f(index, optimizer)` with the one it applies and that
/// one's index (a std::integral_constant), and `O::slots_of(index, s)`, the slots of that
/// optimizer a state of it holds. update::chunked_apply and update::sparse_apply then forward to
/// the applied optimizer's where it has them (update::can_apply_chunked, can_apply_sparse).
template <class O>
concept chosen_at_run_time = requires(const O& o) {
  o.with_applied([](auto, const auto&) {});
};

/// True for an elementwise optimizer whose rule depends on a counter of its state: a part of a
/// push (some rows) is then no update of its own, so such optimizers have no sparse or chunked
/// apply.
template <class O>
inline constexpr bool counts_updates_v = requires {
  requires O::counts_updates;
};

/// What one update of a table's rows needs that is not per row: the same for every row of one
/// push, so a push's rows can be applied in any order, one by one or in parallel.
struct row_step {
  /// The 1-based number of this update among the table's updates (its update count once this
  /// one is applied): lazy Adam's bias corrections `1 - beta^t`, as TF1's LazyAdamOptimizer
  /// takes them from the optimizer's global beta powers. Every push applied to the table counts
  /// once, whichever rows it touches. Rules without a counter ignore it.
  std::uint64_t t = 1;
};

/// An optimizer that updates the rows of an embedding table, each row's state kept next to the
/// row (the table stores `dim` weights and `o.row_slots(dim)` floats of state per row, and
/// knows nothing else of the optimizer). A model provides
///  - `o.row_slots(dim)`: how many state floats a row of @p dim weights keeps;
///  - `o.init_row_slots(slots, dim)`: writes a new row's state (Adagrad's and FTRL's initial
///    accumulators, zeros for momentum and Adam) to the `row_slots(dim)` floats at @p slots;
///  - `o.with_row_rule(grad_scale, step, f)`: calls `f(rule)` with the rule of one update (the
///    push numbered `step.t`, gradient `grad_scale * g`), a copyable DSGD_HOST_DEVICE callable
///    `rule(float* w, float* slots, const float* g, std::size_t dim)` that updates one row in
///    place; it holds everything that is not per row, so a table computes it once per push and
///    maps it over the push's rows in a loop or in a Thrust kernel;
///  - `o.apply_row(w, slots, g, dim, grad_scale, step)`: that rule applied to one row.
///
/// An optim::elementwise optimizer's rule over a row is its element rule mapped over the row's
/// columns, slot `j` of column `c` at `slots[j * dim + c]` (optim::detail::element_row_rule):
/// the same arithmetic as its dense apply, so a row updated alone ends bit for bit where the
/// dense apply leaves that row. optim::sgd, momentum, adagrad, adam (as lazy Adam: only the
/// rows given change), ftrl, rowwise_adagrad and lazy_adam are row optimizers.
template <class O>
concept row_optimizer = std::copy_constructible<O> &&
    requires(const O& o, float* w, float* slots, const float* g, std::size_t dim, row_step step) {
  { o.row_slots(dim) } -> std::convertible_to<std::size_t>;
  o.init_row_slots(slots, dim);
  o.with_row_rule(1.f, step, [](const auto&) {});
  o.apply_row(w, slots, g, dim, 1.f, step);
};

}  // namespace optim

}  // namespace dsgd
