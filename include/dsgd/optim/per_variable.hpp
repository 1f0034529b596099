// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// optim::per_variable: an Optimizer that is @p O for every variable except those named, which
/// each apply one of the shipped optimizers with settings of their own (TF1 trains a Wide & Deep
/// model's linear part with FTRL and its deep part with Adagrad).
#pragma once

#include <dsgd/device/concepts.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/optim/ftrl.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/rowwise_adagrad.hpp>
#include <dsgd/optim/sgd.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace dsgd::optim {

/// Every variable's optimizer is `all` (@p O, the trainer's Optimizer), unless `variables` names
/// it: an entry names one variable ("wide/w") or, ending in '/', every variable under that scope
/// ("wide/"); the first entry that matches wins. A named variable applies one of the shipped
/// optimizers (sgd, momentum, adagrad, rowwise_adagrad, adam, ftrl) with its own settings and
/// keeps that optimizer's slots, which checkpoints hold under its slot names.
///
/// A ps task gives each shard the optimizer of its variable (for_variable() with the variable's
/// name); workers need not know it, as they need not know the trainer's Optimizer. Tables name
/// their optimizer in their table_spec instead.
/// @code
///   using optimizer = dsgd::optim::per_variable<dsgd::optim::adagrad>;
///   opts.optimizer = {.all = {.learning_rate = 0.05f},
///                     .variables = {{"linear/", dsgd::optim::ftrl{.learning_rate = 0.1f}}}};
/// @endcode
///
/// Updates are bit for bit those of the optimizer applied. A variable's part of a push (a chunk
/// streamed in as it arrives, or some rows) is applied on its own where that optimizer can do
/// so (update::chunked_apply, update::sparse_apply); otherwise the push is applied whole and a
/// sparse push to it under async or SSP is the named error such an optimizer gives.
template <class O>
struct per_variable {
  /// The optimizers a named variable may apply.
  using named_optimizer = std::variant<sgd, momentum, adagrad, rowwise_adagrad, adam, ftrl>;
  /// How many optimizers a per_variable may apply: `all` and each named_optimizer.
  static constexpr std::size_t choices = 1 + std::variant_size_v<named_optimizer>;

  O all{};                                                           ///< every variable's, unless named
  std::vector<std::pair<std::string, named_optimizer>> variables{};  ///< overrides by name or scope
  /// The optimizer this copy applies: `all` when empty. for_variable() sets it; a ps applies
  /// each shard's copy.
  std::optional<named_optimizer> applied{};

  /// @returns whether entry @p pattern names variable @p name (the name itself, or a scope
  /// ending in '/' that @p name starts with).
  static bool matches(std::string_view pattern, std::string_view name) noexcept {
    if (!pattern.empty() && pattern.back() == '/') return name.substr(0, pattern.size()) == pattern;
    return pattern == name;
  }
  /// @returns the copy that variable @p name applies.
  per_variable for_variable(std::string_view name) const {
    per_variable out{all, variables, std::nullopt};
    for (const auto& [pattern, o] : variables)
      if (matches(pattern, name)) {
        out.applied = o;
        break;
      }
    return out;
  }

  /// Calls `f(index, optimizer)` with the optimizer this copy applies and its index among the
  /// choices (a std::integral_constant: 0 for `all`, 1 + its index in named_optimizer).
  template <class F>
  decltype(auto) with_applied(F&& f) const {
    if (!applied) return f(std::integral_constant<std::size_t, 0>{}, all);
    return std::visit(
        [&](const auto& o) -> decltype(auto) {
          return f(std::integral_constant<std::size_t, 1 + index_of<std::decay_t<decltype(o)>>()>{}, o);
        },
        *applied);
  }

  /// The slots of one variable: those of the optimizer it applies.
  template <Device D>
  struct state {
    using held_type = std::variant<typename O::template state<D>, sgd::state<D>, momentum::state<D>, adagrad::state<D>,
                                   rowwise_adagrad::state<D>, adam::state<D>, ftrl::state<D>>;
    /// `all`'s slots for @p n elements (make_state() makes another optimizer's).
    state(const D& device, std::size_t n) : held(std::in_place_index<0>, device, n) {}
    /// Holds @p h.
    explicit state(held_type h) : held(std::move(h)) {}
    held_type held;
    /// Calls `f(name, slot)` for each slot of the held state, as its own visit() does.
    template <class F>
    void visit(F&& f) {
      std::visit(
          [&](auto& s) {
            if constexpr (checkpointable_state<std::decay_t<decltype(s)>>) s.visit(f);
          },
          held);
    }
  };

  /// @returns the slots for @p n elements of the optimizer this copy applies.
  template <Device D>
  state<D> make_state(const D& device, std::size_t n) const {
    return with_applied([&](auto i, const auto&) {
      return state<D>(typename state<D>::held_type(std::in_place_index<decltype(i)::value>, device, n));
    });
  }

  /// Applies one update with the optimizer this copy applies.
  /// @throws dsgd::error (errc::invalid_argument) when @p s holds another optimizer's slots
  template <Device D>
  void apply(const D& device, state<D>& s, float* w, const float* g, std::size_t n, float grad_scale = 1.f) const {
    with_applied([&](auto i, const auto& o) { o.apply(device, slots_of(i, s), w, g, n, grad_scale); });
  }

  /// @returns the held state of @p s for choice @p I.
  /// @throws dsgd::error (errc::invalid_argument) when @p s holds another choice's slots
  template <std::size_t I, class S>
  static auto& slots_of(std::integral_constant<std::size_t, I>, S& s) {
    if (s.held.index() != I)
      throw error(errc::invalid_argument, "optim::per_variable: a variable's slots belong to optimizer choice " +
                                              std::to_string(s.held.index()) + ", but it applies choice " +
                                              std::to_string(I) + " (slots made by another variable's copy)");
    return std::get<I>(s.held);
  }

 private:
  template <class T, std::size_t I = 0>
  static constexpr std::size_t index_of() {
    static_assert(I < std::variant_size_v<named_optimizer>);
    if constexpr (std::is_same_v<T, std::variant_alternative_t<I, named_optimizer>>) return I;
    else return index_of<T, I + 1>();
  }
};

}  // namespace dsgd::optim
