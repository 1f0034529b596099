// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// client::detail routing: walking a placement's shards (and the shard layouts a ps is told of
/// at registration), and splitting the keys of a sparse request by the shard of the variable
/// that holds each row, sent from and received into the caller's buffers when a
/// shard's keys are one run of them, staged otherwise.
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/placement/hash_keys.hpp>
#include <dsgd/placement/plan.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/transport/frame.hpp>

#include <boost/asio/buffer.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <string>
#include <vector>

namespace dsgd::client::detail {

/// Calls f(shard, index of the shard within its variable) for every shard of @p plan, in plan
/// order.
template <class F>
void for_each_shard(const placement::plan& plan, F&& f) {
  std::vector<std::uint32_t> next(plan.variables().size(), 0);
  for (const auto& s : plan.shards()) f(s, next[s.variable]++);
}

/// @returns the floats per row of dimension 0 of variable @p v (1 for a scalar or a vector).
inline std::size_t row_width(const placement::plan& plan, std::size_t v) {
  const auto& shape = plan.variables()[v].shape;
  std::size_t rows = shape.rank() == 0 ? 1 : shape.extents()[0];
  return rows == 0 ? 0 : shape.elements() / rows;
}

/// @returns what ps task @p ps must know of its shards of @p plan to serve sparse requests.
inline std::vector<protocol::shard_layout> layouts(const placement::plan& plan, std::size_t ps) {
  std::vector<protocol::shard_layout> out;
  for_each_shard(plan, [&](const placement::shard& s, std::uint32_t index) {
    if (s.ps_task != ps) return;
    const auto& v = plan.variables()[s.variable];
    std::size_t dim = row_width(plan, s.variable);
    protocol::shard_layout l;
    l.variable = static_cast<std::uint32_t>(s.variable);
    l.shard = index;
    l.name = v.name;
    l.extents.assign(v.shape.extents().begin(), v.shape.extents().end());
    l.first_row = dim == 0 ? 0 : s.offset / dim;
    l.rows = dim == 0 ? 0 : s.elements / dim;
    out.push_back(std::move(l));
  });
  return out;
}

/// The keys of a sparse request that go to one shard, and where they came from.
struct row_group {
  std::size_t ps = 0;               ///< the ps task holding the shard
  std::uint32_t index = 0;          ///< of the shard within its variable
  std::size_t plan_index = 0;       ///< of the shard in plan.shards()
  std::uint64_t first_row = 0;      ///< rows [first_row, first_row + rows) of the variable
  std::vector<std::size_t> at;      ///< positions in the caller's keys, increasing
  std::vector<std::uint64_t> keys;  ///< staged keys, when they are not sent from the caller's
  std::vector<float> rows;          ///< staged rows, likewise
  /// @returns whether the keys are one run of the caller's: sent from, and received into, the
  /// caller's buffers.
  bool direct() const noexcept { return !at.empty() && at.back() - at.front() + 1 == at.size(); }
};

/// Splits @p keys by the shard of @p variable holding each row: one group per shard of the
/// variable, in plan order, also for a shard none of the keys goes to. A key past the last row
/// goes to the shard holding the last rows, whose ps answers with an error naming it: the ps is
/// the one place where keys are checked.
/// @param floats the size of the caller's rows buffer, which must be keys.size() x row width
/// @param what the caller's name for messages ("pull_rows")
/// @throws dsgd::error errc::invalid_argument for a variable the plan lacks,
///         errc::shape_mismatch for a rows buffer of another size
inline std::vector<row_group> route(const placement::plan& plan, std::size_t variable,
                                    std::span<const std::uint64_t> keys, std::size_t floats, const char* what) {
  if (variable >= plan.variables().size())
    throw error(errc::invalid_argument, std::string(what) + ": variable " + std::to_string(variable) +
                                            " is not in the placement (" + std::to_string(plan.variables().size()) +
                                            " variables)");
  const auto& v = plan.variables()[variable];
  std::size_t dim = row_width(plan, variable);
  if (floats != keys.size() * dim)
    throw error(errc::shape_mismatch, std::string(what) + " of " + v.name + v.shape.to_string() + ": " +
                                          std::to_string(keys.size()) + " keys need " +
                                          std::to_string(keys.size() * dim) + " floats (rows of " +
                                          std::to_string(dim) + "), the buffer holds " + std::to_string(floats));
  std::vector<row_group> groups;
  std::size_t at = 0;
  for_each_shard(plan, [&](const placement::shard& s, std::uint32_t index) {
    const std::size_t plan_index = at++;
    if (s.variable != variable) return;
    row_group g;
    g.ps = s.ps_task;
    g.index = index;
    g.plan_index = plan_index;
    g.first_row = dim == 0 ? 0 : s.offset / dim;
    groups.push_back(std::move(g));
  });
  std::vector<std::size_t> by_row(groups.size());  // group indices in first_row order
  for (std::size_t i = 0; i < by_row.size(); ++i) by_row[i] = i;
  std::sort(by_row.begin(), by_row.end(),
            [&](std::size_t a, std::size_t b) { return groups[a].first_row < groups[b].first_row; });
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto it = std::upper_bound(by_row.begin(), by_row.end(), keys[i],
                               [&](std::uint64_t k, std::size_t g) { return k < groups[g].first_row; });
    groups[it == by_row.begin() ? by_row.front() : *std::prev(it)].at.push_back(i);
  }
  return groups;
}

/// Splits @p keys of a dynamic table by the ps task @p placement routes each to: one group per
/// ps task of @p ps_tasks, in task order, also for a task none of the keys goes to.
/// @param floats the size of the caller's rows buffer, which must be keys.size() x @p dim
/// @throws dsgd::error errc::shape_mismatch for a rows buffer of another size
template <KeyPlacement P>
std::vector<row_group> route_keys(const P& placement, std::size_t ps_tasks, std::span<const std::uint64_t> keys,
                                  std::size_t dim, std::size_t floats, const char* what) {
  if (floats != keys.size() * dim)
    throw error(errc::shape_mismatch, std::string(what) + ": " + std::to_string(keys.size()) + " keys need " +
                                          std::to_string(keys.size() * dim) + " floats (rows of " +
                                          std::to_string(dim) + "), the buffer holds " + std::to_string(floats));
  std::vector<row_group> groups(ps_tasks);
  for (std::size_t t = 0; t < ps_tasks; ++t) groups[t].ps = t;
  for (std::size_t i = 0; i < keys.size(); ++i) groups[placement.task_of(keys[i], ps_tasks)].at.push_back(i);
  return groups;
}

/// @returns the keys of group @p g as little-endian bytes: a view of the caller's @p keys when
/// they are one run of them (and the host is little-endian), else staged in g.keys.
inline boost::asio::const_buffer key_buffer(row_group& g, std::span<const std::uint64_t> keys) {
  if (g.at.empty()) return {};
  if (g.direct() && std::endian::native == std::endian::little)
    return boost::asio::buffer(keys.data() + g.at.front(), g.at.size() * sizeof(std::uint64_t));
  g.keys.resize(g.at.size());
  for (std::size_t j = 0; j < g.at.size(); ++j)
    transport::detail::store_le(reinterpret_cast<std::byte*>(&g.keys[j]), keys[g.at[j]]);
  return boost::asio::buffer(g.keys.data(), g.keys.size() * sizeof(std::uint64_t));
}

/// @returns where group @p g's pulled rows (dim floats each) go: straight into the caller's
/// @p out when its keys are one run, else into g.rows (scatter_rows() then copies them out).
inline boost::asio::mutable_buffer rows_destination(row_group& g, std::span<float> out, std::size_t dim) {
  const std::size_t m = g.at.size();
  if (m == 0) return {};
  if (g.direct()) {
    auto s = out.subspan(g.at.front() * dim, m * dim);
    return boost::asio::buffer(s.data(), s.size_bytes());
  }
  g.rows.resize(m * dim);
  return boost::asio::buffer(g.rows.data(), g.rows.size() * sizeof(float));
}

/// Copies the rows staged by rows_destination() into the caller's @p out, each to its key's row.
inline void scatter_rows(const std::vector<row_group>& groups, std::span<float> out, std::size_t dim) {
  for (const auto& g : groups)
    if (!g.at.empty() && !g.direct())
      for (std::size_t j = 0; j < g.at.size(); ++j)
        std::copy_n(g.rows.begin() + j * dim, dim, out.begin() + g.at[j] * dim);
}

/// @returns group @p g's gradient rows (dim floats each) to send: a view of the caller's
/// @p grads when its keys are one run (or it has none), else gathered into g.rows.
inline boost::asio::const_buffer rows_source(row_group& g, std::span<const float> grads, std::size_t dim) {
  const std::size_t m = g.at.size();
  if (m == 0) return {};
  if (!g.direct()) {
    g.rows.resize(m * dim);
    for (std::size_t j = 0; j < m; ++j) std::copy_n(grads.begin() + g.at[j] * dim, dim, g.rows.begin() + j * dim);
    return boost::asio::buffer(g.rows.data(), g.rows.size() * sizeof(float));
  }
  auto s = grads.subspan(g.at.front() * dim, m * dim);
  return boost::asio::buffer(s.data(), s.size_bytes());
}

}  // namespace dsgd::client::detail
