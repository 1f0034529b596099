// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// How a ps task writes its part of a checkpoint and reads its shards back: the values, and the
/// optimizer's slots and counters, as records of checkpoint::saver's data file.
///
/// Record names follow TensorFlow's slot variables: a variable `dense0/kernel` with momentum is
/// saved as `dense0/kernel` and `dense0/kernel/velocity`, each slice at the shard's offset, so
/// that a cluster with another number of ps tasks restores them by range like the values.
/// A counter (adam's `t`) is per variable: the shard holding the variable's first element
/// writes it as `dense0/kernel/t`, a record of shape [2] holding the 64 bits as two 32-bit
/// halves (low first), so that any count is restored exactly. A learning-rate schedule's state
/// is its inner optimizer's slots under their own names and the counter `schedule_step`.
///
/// From format version 2 on, a data file holds every slot and counter of the state, and a
/// restore that misses one (a checkpoint written with another optimizer) is refused, naming it;
/// a version 1 checkpoint (written before schedules saved their state) restores its values and
/// what slots it holds, and the rest start afresh, named in the ps's log.
///
/// From version 3 on, each shard also writes how many pushes of each replica it had received
/// (ps_client::pushes_received()), as `dense0/kernel/pushes_received/R0-R1` for the shard of
/// rows [R0, R1), shape [replicas, 2], each count as two 32-bit halves like a counter: read
/// back on restore, they are the pushes the restored values hold, so a worker that registers
/// again resumes exactly there. Absent (older versions) they are zero.
// IWYU pragma: private, include <dsgd/server/parameter_server.hpp>
#pragma once

#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/checkpoint/state_records.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/tensor/shape.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace dsgd::server::detail {

/// @returns the shape of the whole variable @p l is a shard of.
inline dsgd::shape variable_shape(const protocol::shard_layout& l) {
  return dsgd::shape(std::vector<std::size_t>(l.extents.begin(), l.extents.end()));
}

/// @returns the offset of the shard's first element in its variable.
inline std::size_t shard_offset(const protocol::shard_layout& l) {
  return static_cast<std::size_t>(l.first_row * l.row_elements());
}

/// @returns the request (checkpoint_request_of) or the directory (checkpoint_directory) a save
/// or restore request (@p what) names in its control payload.
/// @throws dsgd::error errc::bad_frame for a payload that does not decode, errc::invalid_argument
///         for an empty directory
inline protocol::checkpoint_request checkpoint_request_of(std::span<const std::byte> control, const char* what) {
  auto r = protocol::decode_control<protocol::checkpoint_request>(
      std::string_view(reinterpret_cast<const char*>(control.data()), control.size()), what);
  if (r.directory.empty()) throw error(errc::invalid_argument, std::string(what) + ": no checkpoint directory");
  return r;
}
inline std::filesystem::path checkpoint_directory(std::span<const std::byte> control, const char* what) {
  return checkpoint_request_of(control, what).directory;
}

/// @returns the name of the record holding the push counts of the shard @p l (format 3 on).
inline std::string pushes_record(const protocol::shard_layout& l) {
  return l.name + "/pushes_received/" + std::to_string(l.first_row) + "-" + std::to_string(l.first_row + l.rows);
}

/// Writes ps task @p ps_task's data file of checkpoint @p step in @p dir: for each shard, its
/// values, its slots, (at offset 0) its counters, and, where @p pushes has an entry for it,
/// the pushes received per replica.
/// @tparam State a shard_storage::saved_state
/// @throws dsgd::error naming the directory when it cannot be written
template <class State>
void write_shard_checkpoint(const std::filesystem::path& dir, std::uint64_t step, std::size_t ps_task,
                            std::size_t ps_tasks, const std::vector<std::pair<protocol::shard_layout, State>>& shards,
                            std::span<const std::vector<std::uint64_t>> pushes = {}) {
  std::vector<checkpoint::shard_data> records;
  // The counters' bits; each inner vector keeps its buffer when the outer one grows.
  std::vector<std::vector<float>> counter_bits;
  auto bits_of = [&](std::span<const std::uint64_t> counts) -> std::span<const float> {
    auto& bits = counter_bits.emplace_back();
    for (auto value : counts) {
      const auto two = checkpoint::counter_bits(value);
      bits.insert(bits.end(), two.begin(), two.end());
    }
    return bits;
  };
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const auto& [layout, state] = shards[i];
    const auto shape = variable_shape(layout);
    const auto offset = shard_offset(layout);
    records.push_back({layout.name, shape, offset, state.values});
    for (const auto& [slot, values] : state.slots)
      records.push_back({checkpoint::state_record(layout.name, slot), shape, offset, values});
    if (i < pushes.size() && !pushes[i].empty())
      records.push_back({pushes_record(layout), dsgd::shape{pushes[i].size(), 2}, 0, bits_of(pushes[i])});
    if (offset != 0) continue;
    for (const auto& [counter, value] : state.counters)
      records.push_back(
          {checkpoint::state_record(layout.name, counter), dsgd::shape{2}, 0, bits_of(std::span(&value, 1))});
  }
  try {
    checkpoint::saver(dir, 0).write_shard_file(step, ps_task, ps_tasks, records);
  } catch (const dsgd::error&) {
    throw;
  } catch (const std::exception& e) {
    throw error(errc::not_found, "ps:" + std::to_string(ps_task) + " cannot write checkpoint " + std::to_string(step) +
                                     " in " + dir.string() + ": " + e.what());
  }
}

/// Reads the shard described by @p layout from checkpoint @p reader: its values, every slot and
/// counter of @p probe (an optimizer state, visited for their names). A version 1 checkpoint
/// may lack some: their record names are appended to @p missing and they start afresh.
/// @tparam State a shard_storage::saved_state
/// @throws dsgd::error errc::not_found for a variable the checkpoint lacks, or (version 2 on) a
///         slot or counter of @p probe it lacks; errc::shape_mismatch when the variable's shape
///         there differs from the model's, naming both
template <class State, class Probe>
State read_shard_checkpoint(const checkpoint::checkpoint_reader& reader, const protocol::shard_layout& layout,
                            Probe& probe, std::size_t elements, std::vector<std::string>& missing) {
  const auto shape = variable_shape(layout);
  if (reader.shape_of(layout.name) != shape)
    throw error(errc::shape_mismatch, "checkpoint " + std::to_string(reader.step()) + " holds " + layout.name +
                                          reader.shape_of(layout.name).to_string() + ", the model " + layout.name +
                                          shape.to_string());
  const auto offset = shard_offset(layout);
  State s;
  s.step = reader.step();
  s.values = reader.read(layout.name, offset, elements);
  auto visit = [&](const char* slot, auto& member) {
    const auto name = checkpoint::state_record(layout.name, slot);
    if (!reader.contains(name)) {
      if (reader.format_version() >= 2)
        throw error(errc::not_found, "checkpoint " + std::to_string(reader.step()) + " holds no " + name +
                                         ", which the optimizer's state of " + layout.name +
                                         " needs: it was written with another optimizer or schedule; "
                                         "restore with the one that wrote it");
      missing.push_back(name);
      return;
    }
    if constexpr (std::is_same_v<std::decay_t<decltype(member)>, std::uint64_t>) {
      s.counters.emplace_back(slot, checkpoint::read_counter(reader, name));
    } else {
      s.slots.emplace_back(slot, reader.read(name, offset, elements));
    }
  };
  if constexpr (checkpointable_state<Probe>) probe.visit(visit);
  return s;
}

/// @returns the pushes of each of @p replicas replicas that the shard @p layout restored from
/// @p reader holds: its own record's counts; for a shard whose rows were written by several
/// shards (a checkpoint of another number of ps tasks), the lowest of theirs, per replica (a
/// push may then be applied twice to some rows, never lost); zeros where the checkpoint holds
/// no counts for all its rows (format versions before 3). A replica the record lacks counts 0.
inline std::vector<std::uint64_t> read_pushes_received(const checkpoint::checkpoint_reader& reader,
                                                       const protocol::shard_layout& layout, std::size_t replicas) {
  std::vector<std::uint64_t> lowest(replicas, ~std::uint64_t{0});
  const std::string prefix = layout.name + "/pushes_received/";
  const std::uint64_t begin = layout.first_row, end = layout.first_row + layout.rows;
  std::uint64_t covered = 0;
  bool any = false;
  for (const auto& v : reader.variables()) {
    if (v.name.rfind(prefix, 0) != 0) continue;
    const std::string range = v.name.substr(prefix.size());
    const auto dash = range.find('-');
    std::uint64_t first = 0, last = 0;
    try {
      if (dash == std::string::npos) continue;
      first = std::stoull(range.substr(0, dash));
      last = std::stoull(range.substr(dash + 1));
    } catch (const std::exception&) {
      continue;  // not a record of ours
    }
    const bool same = first == begin && last == end;
    if (!same && !(first < end && begin < last)) continue;
    covered += std::min(end, last) - std::max(begin, first);
    any = true;
    const auto bits = reader.read(v.name);
    for (std::size_t r = 0; r < replicas; ++r) {
      const std::uint64_t n = 2 * r + 1 < bits.size() ? checkpoint::counter_of(bits[2 * r], bits[2 * r + 1]) : 0;
      lowest[r] = std::min(lowest[r], n);
    }
  }
  if (!any || covered < end - begin) lowest.assign(replicas, 0);
  return lowest;
}

/// What a restore reads for a ps task's shards.
template <class State>
struct restored_shards {
  std::vector<std::pair<std::uint64_t, State>> states;         ///< per shard key
  std::map<std::uint64_t, std::vector<std::uint64_t>> pushes;  ///< per shard key: what the values hold
  std::string missing;  ///< slots and counters a version 1 checkpoint lacks, comma-separated
};

/// Reads every shard of @p layouts (shard key -> layout) from @p reader, as
/// read_shard_checkpoint() and read_pushes_received() do, for @p replicas replicas; a shard's
/// slots and counters are those of `probe_of(layout)` (its optimizer's state).
template <class State, class ProbeOf>
restored_shards<State> read_shards(const checkpoint::checkpoint_reader& reader,
                                   const std::map<std::uint64_t, protocol::shard_layout>& layouts, ProbeOf probe_of,
                                   std::size_t replicas) {
  restored_shards<State> out;
  std::vector<std::string> missing;
  for (const auto& [k, layout] : layouts) {
    const std::size_t elements = layout.rows * layout.row_elements();
    auto probe = probe_of(layout);
    out.states.emplace_back(k, read_shard_checkpoint<State>(reader, layout, probe, elements, missing));
    out.pushes[k] = read_pushes_received(reader, layout, replicas);
  }
  for (const auto& m : missing) out.missing += (out.missing.empty() ? "" : ", ") + m;
  return out;
}

}  // namespace dsgd::server::detail
