// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The row kernels of sparse pulls and pushes (embedding tables): checking rows against a
/// shard, summing duplicate rows, gathering rows out and adding rows into an accumulator.
// IWYU pragma: private, include <dsgd/update/async.hpp>
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/device/concepts.hpp>
#include <dsgd/error.hpp>

#include <thrust/copy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/memory.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::update::detail {

// Element i of a block of `count` rows of `dim` floats is column i % dim of row rows[i / dim].
struct gather_rows_kernel {
  float* out;
  const float* values;
  const std::uint64_t* rows;
  std::size_t dim;
  DSGD_HOST_DEVICE void operator()(std::size_t i) const { out[i] = values[rows[i / dim] * dim + i % dim]; }
};

// The host's form of the row kernels below: one call a row, its columns a loop the compiler
// vectorises (an element a call costs a division by dim each, which dominates on a CPU).
template <class Kernel>
struct per_row {
  Kernel k;
  void operator()(std::size_t r) const { k.row(r); }
};

// Rows are unique, so no two elements write the same place.
struct scatter_add_rows_kernel {
  float* acc;
  const float* g;
  const std::uint64_t* rows;
  std::size_t dim;
  DSGD_HOST_DEVICE void operator()(std::size_t i) const { acc[rows[i / dim] * dim + i % dim] += g[i]; }
  void row(std::size_t r) const {
    float* a = acc + rows[r] * dim;
    const float* x = g + r * dim;
    for (std::size_t c = 0; c < dim; ++c) a[c] += x[c];
  }
};

// Moves rows out of an accumulator into a block: out[i] = acc[element], and acc[element] = 0.
// Rows are unique, so no two elements touch the same place.
struct take_rows_kernel {
  float* out;
  float* acc;
  const std::uint64_t* rows;
  std::size_t dim;
  DSGD_HOST_DEVICE void operator()(std::size_t i) const {
    float& a = acc[rows[i / dim] * dim + i % dim];
    out[i] = a;
    a = 0.f;
  }
  void row(std::size_t r) const {
    float* a = acc + rows[r] * dim;
    float* o = out + r * dim;
    for (std::size_t c = 0; c < dim; ++c) {
      o[c] = a[c];
      a[c] = 0.f;
    }
  }
};

/// Runs row kernel @p k over @p count rows of @p dim floats: a row a call on the host, an
/// element a call on a device.
template <Device D, class Kernel>
void for_each_row_element(const D& device, std::size_t count, std::size_t dim, Kernel k) {
  if constexpr (D::is_host) {
    thrust::for_each_n(device.policy(), thrust::counting_iterator<std::size_t>(0), count, per_row<Kernel>{k});
  } else {
    thrust::for_each_n(device.policy(), thrust::counting_iterator<std::size_t>(0), count * dim, k);
  }
}

/// Sparse rows with duplicates summed: unique rows in ascending order and, for each, the sum
/// (in the order pushed) of the gradient rows given for it; both in the device's memory.
template <Device D>
struct coalesced_rows {
  typename D::template vector<std::uint64_t> rows;
  typename D::template vector<float> grads;
  std::size_t count = 0;
};

/// Sums the gradient rows of duplicate @p rows (host memory, @p rows.size() x @p dim floats at
/// @p grads): TensorFlow's deduplication of IndexedSlices before a sparse apply.
template <Device D>
coalesced_rows<D> coalesce_rows(std::span<const std::uint64_t> rows, std::size_t dim, const float* grads) {
  std::vector<std::size_t> order(rows.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rows[a] < rows[b]; });
  std::vector<std::uint64_t> unique;
  std::vector<float> sums;
  unique.reserve(rows.size());
  sums.reserve(rows.size() * dim);
  for (std::size_t k = 0; k < order.size(); ++k) {
    const float* g = grads + order[k] * dim;
    if (k > 0 && rows[order[k]] == unique.back()) {
      float* acc = sums.data() + (unique.size() - 1) * dim;
      for (std::size_t c = 0; c < dim; ++c) acc[c] += g[c];
    } else {
      unique.push_back(rows[order[k]]);
      sums.insert(sums.end(), g, g + dim);
    }
  }
  coalesced_rows<D> out;
  out.count = unique.size();
  if (out.count == 0) return out;  // Thrust's copy of an empty range binds a null reference (UBSan)
  out.rows.assign(unique.begin(), unique.end());
  out.grads.assign(sums.begin(), sums.end());
  return out;
}

/// Throws for a row width @p dim that does not divide a shard of @p size elements or a row
/// past its end; @p what and @p suffix name the call, joined only for the message.
inline void check_rows(std::span<const std::uint64_t> rows, std::size_t dim, std::size_t size, std::string_view what,
                       std::string_view suffix = {}) {
  if (dim == 0 || size % dim != 0)
    throw error(errc::shape_mismatch, std::string(what) + std::string(suffix) + ": rows of " + std::to_string(dim) +
                                          " floats do not tile a shard of " + std::to_string(size));
  const std::uint64_t limit = size / dim;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i] >= limit)
      throw error(errc::invalid_argument, std::string(what) + std::string(suffix) + ": row " + std::to_string(rows[i]) +
                                              " (key " + std::to_string(i) + ") is out of range for a shard of " +
                                              std::to_string(limit) + " rows");
}

/// @returns a raw pointer to @p v's elements, or nullptr when it has none (data() of an empty
/// thrust vector dereferences its first element: a push or pull of no rows is valid).
template <class V>
auto raw_data(V& v) {
  return v.empty() ? nullptr : thrust::raw_pointer_cast(v.data());
}

/// acc[row] += grad row, for the unique rows of @p c (@p acc in @p device's memory).
template <Device D>
void scatter_add_rows(const D& device, float* acc, const coalesced_rows<D>& c, std::size_t dim) {
  for_each_row_element(device, c.count, dim, scatter_add_rows_kernel{acc, raw_data(c.grads), raw_data(c.rows), dim});
  device.synchronize();
}

/// Copies rows @p rows (host memory, checked) of the @p dim-wide rows at @p values (device
/// memory) to @p out (host memory, rows.size() x dim floats).
template <Device D>
void copy_rows_out(const D& device, const float* values, std::span<const std::uint64_t> rows, std::size_t dim,
                   float* out) {
  if constexpr (D::is_host) {
    thrust::for_each_n(device.policy(), thrust::counting_iterator<std::size_t>(0), rows.size() * dim,
                       gather_rows_kernel{out, values, rows.data(), dim});
  } else {
    typename D::template vector<std::uint64_t> r(rows.begin(), rows.end());
    typename D::template vector<float> o(rows.size() * dim);
    thrust::for_each_n(device.policy(), thrust::counting_iterator<std::size_t>(0), rows.size() * dim,
                       gather_rows_kernel{raw_data(o), values, raw_data(r), dim});
    thrust::copy(o.begin(), o.end(), out);
  }
  device.synchronize();
}

}  // namespace dsgd::update::detail
