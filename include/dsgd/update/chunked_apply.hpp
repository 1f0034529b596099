// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// update::chunked_apply and update::sparse_apply: an optimizer's element rule mapped over a
/// part of a variable, a range of elements out of place (a push applied chunk by chunk while
/// the rest is still arriving) or some rows in place (a sparse push).
#pragma once

#include <dsgd/device/concepts.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/update/detail/archetypes.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace dsgd::update {

/// True for an optimizer whose element rule these traits map by default: an elementwise one
/// (optim::elementwise) whose rule depends on no counter of its state (optim::sgd, momentum).
template <class O>
concept partially_applicable = optim::elementwise<O> && !optim::counts_updates_v<O>;

/// How optimizer @p O updates elements [first, first + count) of a variable out of place: new
/// values and slots are written to other buffers while the old ones stay readable. With it, the
/// async and bounded-staleness shards apply a push chunk by chunk as it arrives and publish the
/// result when the last chunk is in (docs/design.md, "Chunked apply"). Every
/// partially_applicable optimizer has one (its element rule, mapped out of place); another can
/// specialise this with `available = true` and the `apply` below, and without one it is applied
/// whole, when the push is complete. Reading only the old state and writing only the new is
/// what makes a push that never completes cost nothing: its half-written new buffers are simply
/// dropped.
template <class O>
struct chunked_apply {
  static constexpr bool available = false;  ///< O is applied whole
};

/// The out-of-place map of @p O's element rule (optim::detail::map_out_of_place).
template <partially_applicable O>
struct chunked_apply<O> {
  static constexpr bool available = true;  ///< O has a chunked apply
  /// Writes elements [first, first + count) of @p w_out (and of @p out's slots) from those of
  /// @p w_in (and @p in's slots) and @p g; every pointer is a whole variable in @p device's
  /// memory, and no output aliases an input.
  template <Device D>
  static void apply(const O& o, const D& device, const typename O::template state<D>& in,
                    typename O::template state<D>& out, const float* w_in, float* w_out, const float* g,
                    std::size_t first, std::size_t count, float grad_scale) {
    optim::detail::map_out_of_place(o, device, in, out, w_in, w_out, g, first, count, grad_scale);
  }
};

/// How optimizer @p O updates only some rows of a variable (TensorFlow's "sparse apply"): the
/// optimizer's rule on the elements of those rows and on their slots, every other row and slot
/// left as it is (for momentum, TensorFlow's SparseApplyMomentum). Async and bounded-staleness
/// shards need it for sparse pushes, and sync_average for a step of sparse pushes only (without
/// one it applies the dense mean). Every partially_applicable optimizer has one, as has every
/// optimizer with an `apply_rows` of its own (applies_rows); another can specialise this with
/// `available = true` and the `apply` below, and without one a sparse push under async or SSP
/// is an error that says so.
template <class O>
struct sparse_apply {
  static constexpr bool available = false;  ///< no sparse apply for O
};

/// True for an optimizer with a sparse apply of its own, `o.apply_rows(device, s, w, rows,
/// count, dim, g, grad_scale)`: one update of some rows of a dense variable that its element
/// rule alone cannot make (optim::lazy_adam advances its `t` once per push; optim::rowwise_adagrad
/// reduces over a row).
template <class O>
concept applies_rows = requires(const O& o, const detail::archetype_device& d,
                                typename O::template state<detail::archetype_device>& s, float* w,
                                const std::uint64_t* rows, const float* g, std::size_t n) {
  o.apply_rows(d, s, w, rows, n, n, g, 1.f);
};

/// An optimizer's own sparse apply (applies_rows): optim::lazy_adam, optim::rowwise_adagrad.
template <applies_rows O>
requires(!partially_applicable<O>) struct sparse_apply<O> {
  static constexpr bool available = true;  ///< O has a sparse apply
  /// Updates rows @p rows[0..count) (unique, local to the shard) of the @p dim-wide rows at
  /// @p w from the rows @p g (count x dim) with `o.apply_rows`; every pointer is in @p device's
  /// memory.
  template <Device D>
  static void apply(const O& o, const D& device, typename O::template state<D>& s, float* w, const std::uint64_t* rows,
                    std::size_t count, std::size_t dim, const float* g, float grad_scale) {
    o.apply_rows(device, s, w, rows, count, dim, g, grad_scale);
  }
};

/// The row map of @p O's element rule (optim::detail::map_rows).
template <partially_applicable O>
struct sparse_apply<O> {
  static constexpr bool available = true;  ///< O has a sparse apply
  /// Updates rows @p rows[0..count) (unique, local to the shard) of the @p dim-wide rows at
  /// @p w from the rows @p g (count x dim); every pointer is in @p device's memory.
  template <Device D>
  static void apply(const O& o, const D& device, typename O::template state<D>& s, float* w, const std::uint64_t* rows,
                    std::size_t count, std::size_t dim, const float* g, float grad_scale) {
    optim::detail::map_rows(o, device, s, w, rows, count, dim, g, grad_scale);
  }
};

/// The chunked apply of the optimizer an optim::chosen_at_run_time one applies (as
/// optim::per_variable does for each variable): available, since the choice is made at run
/// time; usable() says whether the applied one has a chunked apply.
template <optim::chosen_at_run_time O>
struct chunked_apply<O> {
  using optimizer_type = O;
  static constexpr bool available = true;  ///< where usable()
  /// @returns whether @p o's applied optimizer has a chunked apply.
  static bool usable(const optimizer_type& o) {
    return o.with_applied([](auto, const auto& a) { return chunked_apply<std::decay_t<decltype(a)>>::available; });
  }
  /// The applied optimizer's chunked apply; only where usable().
  template <Device D>
  static void apply(const optimizer_type& o, const D& device, const typename optimizer_type::template state<D>& in,
                    typename optimizer_type::template state<D>& out, const float* w_in, float* w_out, const float* g,
                    std::size_t first, std::size_t count, float grad_scale) {
    o.with_applied([&](auto i, const auto& a) {
      using A = std::decay_t<decltype(a)>;
      if constexpr (chunked_apply<A>::available)
        chunked_apply<A>::apply(a, device, optimizer_type::slots_of(i, in), optimizer_type::slots_of(i, out), w_in,
                                w_out, g, first, count, grad_scale);
      else throw error(errc::invalid_argument, "chunked apply of an optimizer without one (check usable())");
    });
  }
};

/// The sparse apply of the optimizer an optim::chosen_at_run_time one applies, as its
/// chunked_apply.
template <optim::chosen_at_run_time O>
struct sparse_apply<O> {
  using optimizer_type = O;
  static constexpr bool available = true;  ///< where usable()
  /// @returns whether @p o's applied optimizer has a sparse apply.
  static bool usable(const optimizer_type& o) {
    return o.with_applied([](auto, const auto& a) { return sparse_apply<std::decay_t<decltype(a)>>::available; });
  }
  /// The applied optimizer's sparse apply.
  /// @throws dsgd::error (errc::invalid_argument) where it has none (not usable())
  template <Device D>
  static void apply(const optimizer_type& o, const D& device, typename optimizer_type::template state<D>& s, float* w,
                    const std::uint64_t* rows, std::size_t count, std::size_t dim, const float* g, float grad_scale) {
    o.with_applied([&](auto i, const auto& a) {
      using A = std::decay_t<decltype(a)>;
      if constexpr (sparse_apply<A>::available)
        sparse_apply<A>::apply(a, device, optimizer_type::slots_of(i, s), w, rows, count, dim, g, grad_scale);
      else throw error(errc::invalid_argument, "sparse apply of an optimizer without one (check usable())");
    });
  }
};

/// @returns whether @p o can apply a part of a push out of place now: chunked_apply<O> is
/// available and, where it says so at run time (optim::chosen_at_run_time), usable for @p o.
template <class O>
bool can_apply_chunked(const O& o) {
  if constexpr (!chunked_apply<O>::available) return false;
  else if constexpr (requires { chunked_apply<O>::usable(o); }) return chunked_apply<O>::usable(o);
  else return true;
}

/// @returns whether @p o can apply some rows of a variable now (sparse_apply, as
/// can_apply_chunked()).
template <class O>
bool can_apply_sparse(const O& o) {
  if constexpr (!sparse_apply<O>::available) return false;
  else if constexpr (requires { sparse_apply<O>::usable(o); }) return sparse_apply<O>::usable(o);
  else return true;
}

}  // namespace dsgd::update
