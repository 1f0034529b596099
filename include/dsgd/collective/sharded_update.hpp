// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// collective::sharded_update: synchronous data-parallel SGD among the replicas themselves, on
/// a collective::ring: the gradients are reduce-scattered, each replica applies the optimizer to
/// the part it reduced (and keeps only that part's slots), and the values are all-gathered.
#pragma once

#include <dsgd/collective/ring.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/tensor/view.hpp>
#include <dsgd/transport/asio_tcp_policy.hpp>
#include <dsgd/transport/concepts.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsgd::collective {

/// One synchronous step of every replica of a ring, with no parameter server: for gradients
/// g_1..g_N of step t (one per replica),  w_{t+1} = opt(w_t, (1/N) sum_i g_i),  the update
/// sync_average makes on a ps, and the update of one process on the concatenated batch.
///
/// The variables are laid end to end in one buffer, cut into the ring's segments. Per step:
///  1. the gradients are copied into the buffer and reduce-scattered (ring::reduce_scatter):
///     each replica then holds the sum of its own segment;
///  2. each replica applies the optimizer, with grad_scale 1/N, to the values of its segment
///     (split at variable boundaries, each piece under its variable's optimizer:
///     optim::for_variable), and holds the optimizer's slots of that segment only, 1/N of them;
///  3. the segment's new values are all-gathered (ring::all_gather) and copied into every
///     replica's variables.
/// Every segment's values are computed by one replica and copied bit for bit to the others, so
/// the replicas stay bit-identical after every step. Each replica's CPU applies 1/N of the
/// update, and each replica sends and receives 2 (N - 1) / N of the model per step.
///
/// Where the steps' time went (sharded_update::time_spent), in seconds summed over the steps.
struct step_times {
  std::uint64_t steps = 0;
  double copy_in = 0;         ///< the gradients copied into the buffer
  double reduce_scatter = 0;  ///< ring::reduce_scatter: sends, receives (waits included), sums
  double apply = 0;           ///< the optimizer on the owned segment
  double all_gather = 0;      ///< ring::all_gather
  double copy_out = 0;        ///< the gathered values copied into the variables
};

/// @tparam O an Optimizer on the host
/// @tparam T the ring's Transport
template <class O, Transport T = transport::asio_tcp>
requires Optimizer<O, device::cpu>
class sharded_update {
 public:
  using state_type = typename O::template state<device::cpu>;

  /// The update of @p variables (their names, shapes and sizes; the same on every replica) on
  /// @p ring (connected), with @p optimizer.
  /// @throws dsgd::error(errc::invalid_argument) for no variables or a view whose values and
  ///         gradients differ in size
  sharded_update(ring<T>& ring, O optimizer, variable_views variables)
      : ring_(&ring), optimizer_(std::move(optimizer)) {
    if (variables.empty()) throw error(errc::invalid_argument, "collective::sharded_update: no variables");
    std::size_t total = 0;
    for (std::size_t v = 0; v < variables.size(); ++v) {
      const auto& x = variables[v];
      if (x.gradients.size() != x.values.size())
        throw error(errc::invalid_argument, "collective::sharded_update: " + dsgd::detail::view_name(x, v) + " has " +
                                                std::to_string(x.values.size()) + " values and " +
                                                std::to_string(x.gradients.size()) + " gradients");
      offsets_.push_back(total);
      sizes_.push_back(x.values.size());
      total += x.values.size();
    }
    flat_.resize(total);
    const segment mine = ring.owned(total);
    for (std::size_t v = 0; v < variables.size(); ++v) {
      const std::size_t begin = std::max(offsets_[v], mine.begin), end = std::min(offsets_[v] + sizes_[v], mine.end);
      if (begin >= end) continue;
      auto o = optim::for_variable(optimizer_, variables[v].name);
      auto s = optim::make_state(o, device::cpu{}, end - begin);
      pieces_.push_back({v, begin - offsets_[v], begin, end - begin, std::move(o), std::move(s)});
    }
  }

  /// @returns the elements of all variables together.
  std::size_t elements() const noexcept { return flat_.size(); }
  /// @returns the elements whose update this replica applies (and whose slots it holds).
  segment owned() const noexcept { return ring_->owned(flat_.size()); }

  /// Makes every replica's values those of replica @p root (the chief's initial values).
  /// @throws dsgd::error as ring::broadcast
  void broadcast_values(variable_views variables, std::size_t root = 0) {
    check(variables, "broadcast_values");
    gather_values(variables);
    ring_->broadcast(flat_, root, 0);
    scatter_values(variables, {0, flat_.size()});
  }

  /// One step (see the class): reads every variable's gradients, writes its new values.
  /// @p step names the step in frames and errors; every replica passes the same.
  /// @throws dsgd::error as ring::reduce_scatter (the ring is then closed, the values unchanged
  ///         or, where the all-gather failed, partly new: restore from a checkpoint)
  void step(variable_views variables, std::uint64_t step) {
    check(variables, "step");
    auto lap = std::chrono::steady_clock::now();
    auto account = [&lap](double& into) {
      const auto now = std::chrono::steady_clock::now();
      into += std::chrono::duration<double>(now - lap).count();
      lap = now;
    };
    for (std::size_t v = 0; v < variables.size(); ++v)
      std::copy(variables[v].gradients.begin(), variables[v].gradients.end(), flat_.begin() + offsets_[v]);
    account(times_.copy_in);
    ring_->reduce_scatter(flat_, step);
    account(times_.reduce_scatter);
    const float scale = 1.f / static_cast<float>(ring_->size());
    for (auto& p : pieces_) {
      float* w = variables[p.variable].values.data() + p.offset;
      p.optimizer.apply(device::cpu{}, p.state, w, flat_.data() + p.flat, p.size, scale);
      std::copy(w, w + p.size, flat_.begin() + p.flat);
    }
    account(times_.apply);
    ring_->all_gather(flat_, step);
    account(times_.all_gather);
    const segment mine = owned();
    scatter_values(variables, {0, mine.begin});
    scatter_values(variables, {mine.end, flat_.size()});
    account(times_.copy_out);
    ++times_.steps;
  }

  /// @returns where the steps' time went so far.
  const step_times& time_spent() const noexcept { return times_; }

  /// Calls @p f(variable, offset, optimizer, state) for each piece of a variable whose slots
  /// this replica holds: @p offset elements into the variable, state's size of them.
  template <class F>
  void visit_slots(F&& f) {
    for (auto& p : pieces_) f(p.variable, p.offset, std::as_const(p.optimizer), p.state);
  }

 private:
  struct piece {
    std::size_t variable;  // which variable
    std::size_t offset;    // its first element within the variable
    std::size_t flat;      // and within the buffer
    std::size_t size;      // elements
    O optimizer;           // the variable's own (optim::for_variable)
    state_type state;      // the optimizer's slots of these elements
  };

  void check(variable_views variables, const char* call) const {
    if (variables.size() != sizes_.size())
      throw error(errc::invalid_argument, std::string("collective::sharded_update::") + call + ": " +
                                              std::to_string(variables.size()) + " variables where " +
                                              std::to_string(sizes_.size()) + " were planned");
    for (std::size_t v = 0; v < variables.size(); ++v)
      if (variables[v].values.size() != sizes_[v] ||
          (std::string_view(call) == "step" && variables[v].gradients.size() != sizes_[v]))
        throw error(errc::shape_mismatch, std::string("collective::sharded_update::") + call + ": " +
                                              dsgd::detail::view_name(variables[v], v) + " has " +
                                              std::to_string(variables[v].values.size()) + " values and " +
                                              std::to_string(variables[v].gradients.size()) + " gradients where " +
                                              std::to_string(sizes_[v]) + " were planned");
  }

  void gather_values(variable_views variables) {
    for (std::size_t v = 0; v < variables.size(); ++v)
      std::copy(variables[v].values.begin(), variables[v].values.end(), flat_.begin() + offsets_[v]);
  }

  // Copies elements [range.begin, range.end) of the buffer into the variables they belong to.
  void scatter_values(variable_views variables, segment range) {
    for (std::size_t v = 0; v < variables.size(); ++v) {
      const std::size_t begin = std::max(offsets_[v], range.begin), end = std::min(offsets_[v] + sizes_[v], range.end);
      if (begin < end)
        std::copy(flat_.begin() + begin, flat_.begin() + end, variables[v].values.begin() + (begin - offsets_[v]));
    }
  }

  ring<T>* ring_;
  O optimizer_;
  std::vector<std::size_t> offsets_, sizes_;  // each variable's place in the buffer
  std::vector<float> flat_;                   // gradients, then sums, then values
  std::vector<piece> pieces_;                 // the variables' parts of the owned segment
  step_times times_;
};

}  // namespace dsgd::collective
