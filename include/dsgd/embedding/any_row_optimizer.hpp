// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// embedding::any_row_optimizer: the row optimizer a row_optimizer_spec names, chosen at run
/// time: one type holding any of the shipped optim::row_optimizer models, so a ps updates every
/// table with one compiled update::table_shard per rule. Its updates are bit for bit those of
/// the optimizer it holds: with_row_rule() hands the callback that optimizer's own rule (the
/// callback is instantiated once per optimizer), so a push's per-row loop does not dispatch.
#pragma once

#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/optim/ftrl.hpp>
#include <dsgd/optim/lazy_adam.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/rowwise_adagrad.hpp>
#include <dsgd/optim/sgd.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>
#include <variant>

namespace dsgd::embedding {

/// The row optimizer a row_optimizer_spec names (optim::row_optimizer).
///
/// @code
/// auto opt = dsgd::embedding::make_row_optimizer(dsgd::embedding::row_optimizer_spec::adagrad(0.05f));
/// opt.with_row_rule(1.f / workers, dsgd::optim::row_step{t}, [&](const auto& rule) {
///   for (auto& r : rows) rule(r.weights, r.slots, r.grad, dim);  // optim::adagrad's own rule
/// });
/// @endcode
class any_row_optimizer {
 public:
  using variant_type = std::variant<optim::sgd, optim::momentum, optim::adagrad, optim::rowwise_adagrad, optim::adam,
                                    optim::lazy_adam, optim::ftrl>;

  /// optim::sgd with its defaults.
  any_row_optimizer() = default;
  /// The optimizer @p spec names, with its settings.
  /// @throws dsgd::error (errc::invalid_argument) naming the first bad setting.
  explicit any_row_optimizer(const row_optimizer_spec& spec) : opt_(make(spec)) {}
  /// Holds @p optimizer.
  template <class O>
  requires std::is_constructible_v<variant_type, O> &&
      (!std::is_same_v<std::remove_cvref_t<O>, any_row_optimizer>)explicit any_row_optimizer(O optimizer) noexcept
      : opt_(std::move(optimizer)) {}

  /// @returns the state floats a row of @p dim weights keeps under the held optimizer.
  std::size_t row_slots(std::size_t dim) const noexcept {
    return std::visit([&](const auto& o) -> std::size_t { return o.row_slots(dim); }, opt_);
  }
  /// Writes a new row's state, as the held optimizer does.
  void init_row_slots(float* slots, std::size_t dim) const noexcept {
    std::visit([&](const auto& o) { o.init_row_slots(slots, dim); }, opt_);
  }
  /// Calls @p f with the held optimizer's rule of one update (optim::row_optimizer).
  /// @throws dsgd::error as the held optimizer's with_row_rule()
  template <class F>
  void with_row_rule(float grad_scale, optim::row_step step, F&& f) const {
    std::visit([&](const auto& o) { o.with_row_rule(grad_scale, step, f); }, opt_);
  }
  /// Updates one row as the held optimizer's apply_row().
  /// @throws dsgd::error as the held optimizer's apply_row()
  void apply_row(float* w, float* slots, const float* g, std::size_t dim, float grad_scale = 1.f,
                 optim::row_step step = {}) const {
    std::visit([&](const auto& o) { o.apply_row(w, slots, g, dim, grad_scale, step); }, opt_);
  }

  /// @returns the spec of the held optimizer.
  row_optimizer_spec spec() const {
    return std::visit([](const auto& o) { return row_optimizer_spec::of(o); }, opt_);
  }
  /// @returns the held optimizer if it is an @p O, else nullptr.
  template <class O>
  const O* get_if() const noexcept {
    return std::get_if<O>(&opt_);
  }

 private:
  static variant_type make(const row_optimizer_spec& s) {
    s.validate();
    using kind = row_optimizer_spec::kind;
    switch (s.optimizer) {
      case kind::momentum:
        return optim::momentum{.learning_rate = s.learning_rate,
                               .momentum = s.momentum,
                               .nesterov = s.nesterov,
                               .weight_decay = s.weight_decay};
      case kind::adagrad:
        return optim::adagrad{.learning_rate = s.learning_rate,
                              .initial_accumulator = s.initial_accumulator,
                              .epsilon = s.epsilon,
                              .weight_decay = s.weight_decay};
      case kind::rowwise_adagrad:
        return optim::rowwise_adagrad{.learning_rate = s.learning_rate,
                                      .initial_accumulator = s.initial_accumulator,
                                      .epsilon = s.epsilon,
                                      .weight_decay = s.weight_decay};
      case kind::adam:
        return optim::adam{.learning_rate = s.learning_rate,
                           .beta1 = s.beta1,
                           .beta2 = s.beta2,
                           .epsilon = s.epsilon,
                           .weight_decay = s.weight_decay};
      case kind::lazy_adam:
        return optim::lazy_adam{.learning_rate = s.learning_rate,
                                .beta1 = s.beta1,
                                .beta2 = s.beta2,
                                .epsilon = s.epsilon,
                                .weight_decay = s.weight_decay};
      case kind::ftrl:
        return optim::ftrl{.learning_rate = s.learning_rate,
                           .learning_rate_power = s.learning_rate_power,
                           .initial_accumulator_value = s.initial_accumulator,
                           .l1_regularization_strength = s.l1,
                           .l2_regularization_strength = s.l2,
                           .l2_shrinkage_regularization_strength = s.l2_shrinkage};
      case kind::sgd:
        break;
    }
    return optim::sgd{.learning_rate = s.learning_rate, .weight_decay = s.weight_decay};
  }

  variant_type opt_;
};

static_assert(optim::row_optimizer<any_row_optimizer>);

/// @returns the row optimizer @p spec names.
/// @throws dsgd::error (errc::invalid_argument) naming the first bad setting.
inline any_row_optimizer make_row_optimizer(const row_optimizer_spec& spec) { return any_row_optimizer(spec); }

}  // namespace dsgd::embedding
