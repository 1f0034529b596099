// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// train::local_sgd: local SGD (periodic model averaging). Each worker applies its own
/// optimizer to its own copy of the variables for K steps, then the workers' copies are
/// averaged on the ps tasks and every worker goes on from the average. Communication falls to
/// one exchange per K steps; the optimizer's state (a momentum's velocity, a schedule's count)
/// stays on each worker.
///
/// The average is an ordinary sync step: each worker pushes its move since the last average,
/// `anchor - values`, as its gradient, and a ps running update::sync_average with a plain step
/// of 1 (ps_optimizer()) applies `w <- w - mean(anchor - values_k) = mean(values_k)`, since every
/// worker's anchor is the ps's value. So any trainer, session, transport, placement and
/// checkpoint works unchanged; a global step is one averaging.
#pragma once

#include <dsgd/device/concepts.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/tensor/tensor.hpp>

#include <thrust/copy.h>
#include <thrust/functional.h>
#include <thrust/transform.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace dsgd::train {

/// Local SGD on the worker: @p O (any dsgd optimizer, its schedule counting local steps) applied
/// to the worker's own variables, and every @p steps steps the move to push for the average.
///
/// @code
/// dsgd::train::local_sgd local(cpu, optimizer, 8, net.parameters());  // 8 local steps an average
/// while (!session.should_stop()) {
///   net.forward_backward(images, labels, batch);
///   if (!local.step(net.gradients(), net.parameters())) continue;   // a local step only
///   session.run(loss, local.deltas());         // the average lands in net.parameters()
///   local.restart_from(net.parameters());
/// }
/// @endcode
/// The ps tasks must apply a plain step of 1 to the mean of the pushes: update::sync_average
/// with optim::sgd{1.f}, or momentum{1.f, 0.f} (the same update).
template <class O, Device D>
requires Optimizer<O, D>
class local_sgd {
 public:
  /// @p optimizer applied on this worker, @p steps local steps between averages (>= 1; 1 is
  /// synchronous SGD by model averaging), from @p variables, the values of the last average.
  /// @throws dsgd::error(errc::invalid_argument) for 0 steps
  local_sgd(D device, O optimizer, std::size_t steps, const std::vector<tensor<D>>& variables)
      : device_(std::move(device)), optimizer_(std::move(optimizer)), steps_(steps) {
    if (steps_ == 0)
      throw error(errc::invalid_argument, "train::local_sgd: 0 local steps between averages; expected at least 1");
    for (const auto& v : variables) {
      slots_.emplace_back(device_, v.size());
      anchors_.push_back(v);
      deltas_.emplace_back(device_, v.shape());
    }
  }

  /// Applies @p gradients to @p variables with this worker's optimizer.
  /// @returns true when this was the last local step before an average: push deltas() now
  /// @throws dsgd::error(errc::shape_mismatch) when the variables are not those it started with
  bool step(const std::vector<tensor<D>>& gradients, std::vector<tensor<D>>& variables) {
    check(gradients, "gradients");
    check(variables, "variables");
    for (std::size_t v = 0; v < variables.size(); ++v)
      optimizer_.apply(device_, slots_[v], variables[v].data(), gradients[v].data(), variables[v].size(), 1.f);
    if (++since_average_ < steps_) return false;
    for (std::size_t v = 0; v < variables.size(); ++v)
      thrust::transform(device_.policy(), anchors_[v].data(), anchors_[v].data() + anchors_[v].size(),
                        variables[v].data(), deltas_[v].data(), thrust::minus<float>{});
    return true;
  }

  /// The move since the last average, `anchor - values`, per variable: what to push.
  const std::vector<tensor<D>>& deltas() const noexcept { return deltas_; }

  /// The next interval starts from @p variables (the average just pulled, or the values a
  /// recovery restored).
  void restart_from(const std::vector<tensor<D>>& variables) {
    check(variables, "variables");
    for (std::size_t v = 0; v < variables.size(); ++v)
      thrust::copy(device_.policy(), variables[v].data(), variables[v].data() + variables[v].size(),
                   anchors_[v].data());
    since_average_ = 0;
  }

  /// @returns local steps between averages.
  std::size_t steps() const noexcept { return steps_; }
  /// @returns local steps taken since the last average.
  std::size_t since_average() const noexcept { return since_average_; }

 private:
  void check(const std::vector<tensor<D>>& ts, const char* what) const {
    if (ts.size() != anchors_.size())
      throw error(errc::shape_mismatch, std::string("train::local_sgd: ") + std::to_string(ts.size()) + " " + what +
                                            ", expected " + std::to_string(anchors_.size()));
    for (std::size_t v = 0; v < ts.size(); ++v)
      if (ts[v].size() != anchors_[v].size())
        throw error(errc::shape_mismatch, std::string("train::local_sgd: ") + what + " " + std::to_string(v) + " has " +
                                              std::to_string(ts[v].size()) + " elements, expected " +
                                              std::to_string(anchors_[v].size()));
  }

  [[no_unique_address]] D device_;
  O optimizer_;
  std::size_t steps_;
  std::size_t since_average_ = 0;
  std::vector<typename O::template state<D>> slots_;
  std::vector<tensor<D>> anchors_, deltas_;
};

}  // namespace dsgd::train
