// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// train::overlap: a worker's step communication overlapped with the model's compute, variable
/// by variable (worker::overlapped(), trainer::overlapped()).
#pragma once

#include <dsgd/client/ps_client.hpp>
#include <dsgd/error.hpp>
#include <dsgd/placement/plan.hpp>
#include <dsgd/tensor/tensor.hpp>
#include <dsgd/tensor/view.hpp>
#include <dsgd/update/concepts.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace dsgd::train {

/// The operation ps_client::start_pull() returns, whatever the client names it.
using pull_operation = decltype(std::declval<client::ps_client&>().start_pull(
    std::declval<const placement::plan&>(), std::uint64_t{}, std::declval<std::span<const std::span<float>>>()));
/// The operation ps_client::start_push() returns, whatever the client names it.
using push_operation = decltype(std::declval<client::ps_client&>().start_push(
    std::declval<const placement::plan&>(), std::uint64_t{}, std::declval<std::span<const std::span<const float>>>(),
    bool{}));

/// A step's communication overlapped with the model's compute, variable by variable, the way
/// PyTorch DDP overlaps its all-reduce with the backward pass: each gradient is pushed as soon
/// as the backward pass has finished it (the last layers' first), and the next step's values
/// are pulled in the order the forward pass reads them, each waited for only when the forward
/// pass first reads it. A model drives it through two hooks (model::feed_forward::
/// forward_backward(images, labels, n, hooks) calls them):
///   - parameters_needed(v): before the step first reads variable v; waits for its values;
///   - gradient_ready(v): once the step's gradient of v is final; sends it.
/// end_step() then sends any gradient not sent yet and, right behind it, the pull of the next
/// step's values, and waits for the push's answers only. Every step computes on the values and
/// pushes the gradients that push() then pull() would: only the waiting moves. The gradients
/// must stay untouched from gradient_ready() to end_step(), the values unread from end_step() to
/// parameters_needed().
///
/// @code
/// auto ex = t.overlapped(net.parameters(), net.gradients());
/// for (std::size_t i = 0; i < steps; ++i) {
///   auto b = batches.next();                        // while the values arrive
///   net.forward_backward(b.images, b.labels, b.size, ex);
///   ex.end_step();
/// }
/// @endcode
/// One overlap per worker at a time; the worker's own pull() and push() must not be called
/// while it lives, and evaluating the model needs step() first (the values may still be
/// arriving). Its destructor completes the pull in flight. A hook or end_step() throws what
/// pull() and push() throw; then destroy the overlap, recover() the worker if the error is
/// recoverable(), and start a new one. Off the host the values and gradients go through the
/// worker's one staging buffer (train/staging.hpp).
///
/// @tparam Worker the worker it exchanges for (train::worker)
/// @tparam Values what it exchanges: the worker's tensors (values and gradients in two vectors)
///         or variable_views (one set of views of the model's own host memory, tensor/view.hpp)
template <class Worker, class Values = std::vector<tensor<typename Worker::device_type>>>
class overlap {
  static constexpr bool of_views = std::is_same_v<Values, variable_views>;
  // Views are held by value (a set of views is itself a view); tensors by reference.
  using values_ref = std::conditional_t<of_views, variable_views, Values&>;
  using gradients_ref = std::conditional_t<of_views, variable_views, const Values&>;

 public:
  using device_type = typename Worker::device_type;

  /// Starts overlapping @p w's exchanges of @p variables (holding the values of w.step()) and
  /// their @p gradients. @throws dsgd::error(errc::shape_mismatch) when their counts differ
  overlap(Worker& w, Values& variables, const Values& gradients) requires(!of_views)
      : overlap(w, variables, gradients, 0) {
    if (gradients.size() != variables.size())
      throw error(errc::shape_mismatch, "trainer::overlapped: " + std::to_string(gradients.size()) + " gradients for " +
                                            std::to_string(variables.size()) + " variables");
  }
  /// Starts overlapping @p w's exchanges of the values and gradients @p views name (the values
  /// those of w.step()). @throws dsgd::error as train::worker::push(variable_views)
  overlap(Worker& w, variable_views views) requires(of_views) : overlap(w, views, views, 0) {}
  overlap(const overlap&) = delete;
  overlap& operator=(const overlap&) = delete;
  /// Completes the pull in flight, so that no value lands after it; a failure is logged.
  ~overlap() {
    try {
      if (pull_) w_.client_->wait(*pull_);
      if (push_) w_.client_->wait(*push_);
    } catch (const std::exception& e) {
      w_.log_(std::string("trainer::overlap: the exchange in flight failed: ") + e.what());
    }
  }

  /// Waits until variable @p v holds the values of the step being computed.
  void parameters_needed(std::size_t v) {
    if (!pull_ || v >= needed_.size() || !needed_[v]) return;
    try {
      w_.client_->wait(*pull_, v);
      needed_[v] = false;
      w_.buffers_.land(variables_, v);
      if (--needed_count_ == 0) {
        w_.step_ = w_.client_->wait(*pull_);
        pull_.reset();
      }
    } catch (...) {
      pull_.reset();  // every answer is collected when a wait throws
      throw;
    }
  }

  /// Sends the gradient of variable @p v (final for this step) now; once a step.
  void gradient_ready(std::size_t v) {
    if (v >= gradients_.size() || w_.is_sparse(v)) return;
    begin_push();
    if (sent_[v]) return;
    sent_[v] = true;
    w_.buffers_.stage(gradients_, v);
    w_.client_->push_variable(*push_, v);
    w_.client_->flush();  // on its way while the backward pass goes on
  }

  /// Ends the step: sends the gradients not sent yet and, right behind them, the pull of the
  /// next step's values, then waits for the push's answers. @returns how many shards dropped
  /// the push (a backup worker that came late), as worker::push().
  std::size_t end_step() {
    for (std::size_t v = 0; v < gradients_.size(); ++v) gradient_ready(v);
    begin_push();  // every variable is sparse: the push still counts the step
    // The pull goes out right behind the push, as in push_pull().
    pull_.emplace(w_.client_->start_pull(w_.plan_, w_.pull_after_push(), w_.value_spans(variables_)));
    auto pushing = std::move(*push_);
    push_.reset();
    std::size_t dropped = 0;
    try {
      dropped = w_.finish_behind(pushing, *pull_);
    } catch (...) {
      pull_.reset();  // collected by finish_behind()
      throw;
    }
    std::fill(needed_.begin(), needed_.end(), true);
    needed_count_ = needed_.size();
    if (needed_count_ == 0) {
      w_.step_ = w_.client_->wait(*pull_);
      pull_.reset();
    }
    return dropped;
  }

  /// Waits for every value of the pull in flight. @returns the step they belong to (the
  /// worker's step()).
  std::uint64_t step() {
    wait_values();
    return w_.step_;
  }

 private:
  overlap(Worker& w, values_ref variables, gradients_ref gradients, int)
      : w_(w),
        variables_(variables),
        gradients_(gradients),
        needed_(variables.size(), false),
        sent_(variables.size(), false) {
    w_.reserve_for(variables_);
  }

  // Opens the step's push, at the step of the values it was computed on.
  void begin_push() {
    if (push_) return;
    wait_values();  // a model that did not ask for every variable
    push_.emplace(w_.client_->start_push(w_.plan_, w_.step_, w_.gradient_spans(gradients_),
                                         update::applies_each_push_v<typename Worker::update_rule_type>));
    std::fill(sent_.begin(), sent_.end(), false);
  }
  void wait_values() {
    for (std::size_t v = 0; v < needed_.size(); ++v) parameters_needed(v);
  }

  Worker& w_;
  values_ref variables_;
  gradients_ref gradients_;
  std::optional<pull_operation> pull_;  // the pull in flight, until every value has landed
  std::optional<push_operation> push_;  // the step's push, from its first gradient to end_step()
  std::vector<bool> needed_;            // variables whose values of this step are still to be waited for
  std::size_t needed_count_ = 0;
  std::vector<bool> sent_;  // variables of push_ sent
};

}  // namespace dsgd::train
