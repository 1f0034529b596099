// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// placement::partitioned: large variables are split along dimension 0 into slices, and the
/// slices are spread over ps tasks round-robin.
#pragma once

#include <dsgd/placement/concepts.hpp>

#include <algorithm>
#include <string>

namespace dsgd::placement {

/// Splits each variable into row slices along dimension 0 and places slice j of the k-th slice
/// overall on ps task `k mod S`, continuing the count across variables, so consecutive slices
/// land on different tasks.
///
/// Two ways to choose the number of slices, as TensorFlow's partitioners do:
///  - fixed_size(n): every variable with at least n rows is cut into n slices
///    (fixed_size_partitioner);
///  - min_max(max_shards, min_slice_bytes): as many slices as keep each slice at least
///    min_slice_bytes, at most max_shards (min_max_variable_partitioner).
/// Rows are dealt so slice sizes differ by at most one row; scalars and vectors of fewer rows
/// than slices stay whole.
struct partitioned {
  std::size_t max_shards = 1;
  std::size_t min_slice_bytes = 256 * 1024;
  bool fixed = false;

  /// Cut every variable into @p shards slices (fewer if it has fewer rows).
  static constexpr partitioned fixed_size(std::size_t shards) noexcept { return {shards, 0, true}; }
  /// At most @p max_shards slices, none smaller than @p min_slice_bytes.
  static constexpr partitioned min_max(std::size_t max_shards, std::size_t min_slice_bytes = 256 * 1024) noexcept {
    return {max_shards, min_slice_bytes, false};
  }

  /// @returns how many slices variable @p v is cut into.
  std::size_t slices(const variable_info& v) const noexcept {
    std::size_t rows = v.shape.rank() == 0 ? 1 : v.shape.extents()[0];
    std::size_t n = max_shards;
    if (!fixed && min_slice_bytes > 0) n = std::min(n, std::max<std::size_t>(1, v.bytes() / min_slice_bytes));
    return std::max<std::size_t>(1, std::min(n, rows));
  }

  plan place(const std::vector<variable_info>& variables, std::size_t ps_tasks) const {
    detail::check_ps_tasks(ps_tasks, "placement::partitioned");
    if (max_shards == 0) throw error(errc::invalid_argument, "placement::partitioned: max_shards must be at least 1");
    std::vector<shard> shards;
    std::size_t next_task = 0;
    for (std::size_t i = 0; i < variables.size(); ++i) {
      const auto& v = variables[i];
      std::size_t rows = v.shape.rank() == 0 ? 1 : v.shape.extents()[0];
      std::size_t row_elements = rows == 0 ? 0 : v.shape.elements() / rows;
      std::size_t n = slices(v);
      std::size_t offset_rows = 0;
      for (std::size_t j = 0; j < n; ++j) {
        std::size_t r = rows / n + (j < rows % n ? 1 : 0);
        shards.push_back({i, next_task++ % ps_tasks, offset_rows * row_elements, r * row_elements});
        offset_rows += r;
      }
    }
    return plan(variables, ps_tasks, std::move(shards));
  }
};

static_assert(Placement<partitioned>);

}  // namespace dsgd::placement
