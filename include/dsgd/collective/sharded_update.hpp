// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// collective::sharded_update: synchronous data-parallel SGD among the replicas themselves, on
/// a collective::ring: the gradients are reduce-scattered, each replica applies the optimizer to
/// the part it reduced (and keeps only that part's slots), and the values are all-gathered.
#pragma once

#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/checkpoint/state_records.hpp>
#include <dsgd/collective/ring.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/placement/plan.hpp>
#include <dsgd/tensor/view.hpp>
#include <dsgd/transport/asio_tcp_policy.hpp>
#include <dsgd/transport/concepts.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <type_traits>
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
  sharded_update(ring<T>& ring, O optimizer, variable_views variables) : ring_(&ring) {
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
    for_each_piece(ring.owned(total), [&](std::size_t v, std::size_t begin, std::size_t end) {
      auto o = optim::for_variable(optimizer, variables[v].name);
      auto s = optim::make_state(o, device::cpu{}, end - begin);
      pieces_.push_back({v, begin - offsets_[v], begin, end - begin, std::move(o), std::move(s)});
    });
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
    check(variables, "step", true);
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

  /// Checkpoint @p step of @p variables in @p saver's directory, made by every replica together
  /// (each calls it at the same step): each writes the part it owns, its values and its
  /// optimizer's slots and counters there, as ps task rank() of size() writes its shards
  /// (data file "ckpt-S.ps-r-of-N"; docs/checkpoints.md); once all have written (a collective
  /// among them), the chief (rank 0) verifies and commits it. Any job restores it by name and
  /// element range: this update with another number of replicas, or a ps job. Returns on every
  /// replica once the chief has committed it.
  /// @throws dsgd::error naming the directory when a part cannot be written; as ring's
  ///         collectives; errc::checkpoint_corrupt when the chief's commit failed
  void save(const checkpoint::saver& saver, std::uint64_t step, variable_views variables) {
    check(variables, "save");
    std::vector<checkpoint::shard_data> records;
    std::vector<std::vector<float>> kept;  // slot copies and counter bits; each keeps its buffer
    kept.reserve(4 * pieces_.size() + 1);
    for (auto& p : pieces_) {
      const auto& v = variables[p.variable];
      records.push_back({v.name, v.shape, p.offset, v.values.subspan(p.offset, p.size)});
      if constexpr (checkpointable_state<state_type>) {
        p.state.visit([&](const char* name, const auto& member) {
          if constexpr (std::is_same_v<std::decay_t<decltype(member)>, std::uint64_t>) {
            if (p.offset != 0) return;  // a counter is the variable's: its first element's piece writes it
            const auto bits = checkpoint::counter_bits(member);
            records.push_back({checkpoint::state_record(v.name, name), dsgd::shape{2}, 0,
                               kept.emplace_back(bits.begin(), bits.end())});
          } else {
            records.push_back({checkpoint::state_record(v.name, name), v.shape, p.offset,
                               kept.emplace_back(member.begin(), member.end())});
          }
        });
      }
    }
    try {
      saver.write_shard_file(step, ring_->rank(), ring_->size(), records);
    } catch (const dsgd::error&) {
      throw;
    } catch (const std::exception& e) {
      throw error(errc::not_found, ring_->identity() + " cannot write its part of checkpoint " + std::to_string(step) +
                                       " in " + saver.directory().string() + ": " + e.what());
    }
    // Every part is written once each replica's flag has gone round: the chief may commit.
    std::vector<float> written(ring_->size(), 0.f);
    written[ring_->owned_segment()] = 1.f;
    ring_->all_gather(written, step);
    // The chief commits, and says so round the ring: every replica returns once the checkpoint
    // exists, or throws when the commit failed.
    std::exception_ptr failed;
    std::vector<float> committed{1.f};
    if (ring_->rank() == 0) {
      try {
        saver.commit(step, layout(variables));
      } catch (...) {
        failed = std::current_exception();
        committed[0] = 0.f;
      }
    }
    ring_->broadcast(committed, 0, step);
    if (failed) std::rethrow_exception(failed);
    if (committed[0] != 1.f)
      throw error(errc::checkpoint_corrupt, ring_->identity() + ": the chief could not commit checkpoint " +
                                                std::to_string(step) + " in " + saver.directory().string() +
                                                " (its error says why)");
  }

  /// Reads checkpoint @p reader into @p variables (every value, on every replica) and into this
  /// replica's optimizer slots and counters (those of the segment it owns), whatever number of
  /// replicas or ps tasks wrote it.
  /// @throws dsgd::error errc::not_found for a variable, slot or counter the checkpoint lacks
  ///         (a slot: it was written with another optimizer), errc::shape_mismatch for a
  ///         variable of another shape, naming both
  void restore(const checkpoint::checkpoint_reader& reader, variable_views variables) {
    check(variables, "restore");
    for (std::size_t v = 0; v < variables.size(); ++v) {
      const auto& x = variables[v];
      if (reader.shape_of(x.name) != x.shape)
        throw error(errc::shape_mismatch, "checkpoint " + std::to_string(reader.step()) + " holds " + x.name +
                                              reader.shape_of(x.name).to_string() + ", the model " + x.name +
                                              x.shape.to_string());
      reader.read_into(x.name, 0, x.values);
    }
    for (auto& p : pieces_) {
      if constexpr (checkpointable_state<state_type>) {
        const auto& name = variables[p.variable].name;
        p.state.visit([&](const char* slot, auto& member) {
          const auto record = checkpoint::state_record(name, slot);
          if (!reader.contains(record))
            throw error(errc::not_found, "checkpoint " + std::to_string(reader.step()) + " holds no " + record +
                                             ", which the optimizer's state of " + name +
                                             " needs: it was written with another optimizer or schedule");
          if constexpr (std::is_same_v<std::decay_t<decltype(member)>, std::uint64_t>) {
            member = checkpoint::read_counter(reader, record);
          } else {
            const auto values = reader.read(record, p.offset, p.size);
            std::copy(values.begin(), values.end(), member.begin());
          }
        });
      }
    }
  }

  /// @returns the checkpoints' placement: replica r as ps task r, holding the pieces of the
  /// variables in the segment it owns.
  placement::plan layout(variable_views variables) const {
    std::vector<placement::variable_info> infos;
    for (const auto& v : variables) infos.push_back({v.name, v.shape});
    std::vector<placement::shard> shards;
    const std::size_t n = ring_->size();
    for (std::size_t r = 0; r < n; ++r)
      for_each_piece(segment_of((r + 1) % n, flat_.size(), n), [&](std::size_t v, std::size_t begin, std::size_t end) {
        shards.push_back({v, r, begin - offsets_[v], end - begin});
      });
    return placement::plan(std::move(infos), n, std::move(shards));
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

  // Calls f(variable, begin, end) for each variable's part [begin, end) of buffer elements @p range.
  template <class F>
  void for_each_piece(segment range, F&& f) const {
    for (std::size_t v = 0; v < offsets_.size(); ++v) {
      const std::size_t begin = std::max(offsets_[v], range.begin), end = std::min(offsets_[v] + sizes_[v], range.end);
      if (begin < end) f(v, begin, end);
    }
  }

  // Checks @p variables against the plan: their count and sizes, and with @p gradients theirs.
  void check(variable_views variables, const char* call, bool gradients = false) const {
    if (variables.size() != sizes_.size())
      throw error(errc::invalid_argument, std::string("collective::sharded_update::") + call + ": " +
                                              std::to_string(variables.size()) + " variables where " +
                                              std::to_string(sizes_.size()) + " were planned");
    for (std::size_t v = 0; v < variables.size(); ++v)
      if (variables[v].values.size() != sizes_[v] || (gradients && variables[v].gradients.size() != sizes_[v]))
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
    for_each_piece(range, [&](std::size_t v, std::size_t begin, std::size_t end) {
      std::copy(flat_.begin() + begin, flat_.begin() + end, variables[v].values.begin() + (begin - offsets_[v]));
    });
  }

  ring<T>* ring_;
  std::vector<std::size_t> offsets_, sizes_;  // each variable's place in the buffer
  std::vector<float> flat_;                   // gradients, then sums, then values
  std::vector<piece> pieces_;                 // the variables' parts of the owned segment
  step_times times_;
};

}  // namespace dsgd::collective
