// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// embedding::combine and combine_grad (TF1's embedding_lookup_sparse with sp_weights and a
/// combiner), gather and gather_grad (TF1's embedding_lookup): the worker's forward and backward
/// over a block of rows pulled once per unique key. Rows are read through a deduplicator's
/// inverse (dedup.hpp), so the backward yields one gradient row per unique key, summed over all
/// its occurrences: what the worker pushes.
///
/// For bag b holding entries j (rows r_j, weights w_j, all 1 without weights):
///
///     sum:   out_b = sum_j w_j e_{r_j}
///     mean:  out_b = sum_j w_j e_{r_j} / sum_j w_j
///     sqrtn: out_b = sum_j w_j e_{r_j} / sqrt(sum_j w_j^2)
///
/// An empty bag gives zeros (as TF1's safe_embedding_lookup_sparse), and so does a bag whose
/// divisor is 0 (mean with weights summing to 0, sqrtn with all weights 0), where a plain
/// division would give NaN. The backward is d out_b / d e_u = s_b * sum_{j in b, r_j = u} w_j
/// with s_b the bag's scale (1, 1 / sum w, 1 / sqrt(sum w^2)).
///
/// @code
/// using namespace dsgd::embedding;
/// const auto& d = dedup.run(keys);                  // keys: the bags' entries, CSR values
/// pull(d.unique, block);                            // block: unique x dim
/// bags b{.offsets = offsets, .rows = d.inverse, .weights = weights};
/// combine(combiner::mean, b, dim, block, out);      // out: bags x dim
/// combine_grad(combiner::mean, b, dim, grad_out, grad_block);  // grad_block: unique x dim
/// push(d.unique, grad_block);
/// @endcode
#pragma once

#include <dsgd/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace dsgd::embedding {

/// How a bag's rows combine into one (TF1's `combiner` argument).
enum class combiner {
  sum,    ///< sum_j w_j e_j
  mean,   ///< sum_j w_j e_j / sum_j w_j (TF1's default)
  sqrtn,  ///< sum_j w_j e_j / sqrt(sum_j w_j^2)
};

/// @returns "sum", "mean" or "sqrtn".
constexpr std::string_view to_string(combiner c) noexcept {
  switch (c) {
    case combiner::sum:
      return "sum";
    case combiner::mean:
      return "mean";
    case combiner::sqrtn:
      return "sqrtn";
  }
  return "?";
}

/// A batch of bags in CSR layout (TF1's SparseTensor sp_ids, with sp_weights): bag b holds the
/// entries [offsets[b], offsets[b + 1]).
struct bags {
  std::span<const std::size_t> offsets;  ///< bags + 1 values, offsets[0] == 0, non-decreasing, last == entries
  std::span<const std::uint32_t> rows;   ///< per entry: its row in the block (a deduplicator's inverse)
  std::span<const float> weights = {};   ///< per entry: its finite weight, or empty for all 1

  /// @returns the number of bags.
  constexpr std::size_t size() const noexcept { return offsets.empty() ? 0 : offsets.size() - 1; }
};

namespace detail {

[[noreturn]] inline void bad_bags(std::string_view where, errc e, const std::string& what) {
  throw error(e, "embedding::" + std::string(where) + ": " + what);
}

/// Checks @p b against a block of @p rows_in_block rows; O(entries + bags).
inline void check_bags(std::string_view where, const bags& b, std::size_t rows_in_block) {
  if (b.offsets.empty())
    bad_bags(where, errc::invalid_argument, "bags.offsets is empty (it holds bags + 1 values, starting with 0)");
  if (b.offsets[0] != 0)
    bad_bags(where, errc::invalid_argument, "bags.offsets[0] = " + std::to_string(b.offsets[0]) + ", must be 0");
  for (std::size_t i = 1; i < b.offsets.size(); ++i)
    if (b.offsets[i] < b.offsets[i - 1])
      bad_bags(where, errc::invalid_argument,
               "bags.offsets[" + std::to_string(i) + "] = " + std::to_string(b.offsets[i]) +
                   " is less than bags.offsets[" + std::to_string(i - 1) + "] = " + std::to_string(b.offsets[i - 1]) +
                   " (offsets must be non-decreasing)");
  if (b.offsets.back() != b.rows.size())
    bad_bags(where, errc::shape_mismatch,
             "bags.offsets ends at " + std::to_string(b.offsets.back()) + " but bags.rows holds " +
                 std::to_string(b.rows.size()) + " entries");
  if (!b.weights.empty() && b.weights.size() != b.rows.size())
    bad_bags(where, errc::shape_mismatch,
             "bags.weights holds " + std::to_string(b.weights.size()) + " values for " + std::to_string(b.rows.size()) +
                 " entries (give one per entry, or none)");
  for (std::size_t j = 0; j < b.weights.size(); ++j)
    if (!std::isfinite(b.weights[j]))
      bad_bags(where, errc::invalid_argument,
               "bags.weights[" + std::to_string(j) + "] = " + std::to_string(b.weights[j]) + " is not finite");
  for (std::size_t j = 0; j < b.rows.size(); ++j)
    if (b.rows[j] >= rows_in_block)
      bad_bags(where, errc::invalid_argument,
               "bags.rows[" + std::to_string(j) + "] = " + std::to_string(b.rows[j]) + " is out of the block's " +
                   std::to_string(rows_in_block) + " rows");
}

/// Checks that @p data holds @p rows rows of @p dim floats.
inline void check_rows(std::string_view where, std::string_view name, std::size_t size, std::size_t rows,
                       std::size_t dim) {
  if (size != rows * dim)
    bad_bags(where, errc::shape_mismatch,
             std::string(name) + " holds " + std::to_string(size) + " floats, expected " + std::to_string(rows) +
                 " rows x dim " + std::to_string(dim) + " = " + std::to_string(rows * dim));
}

/// @returns the rows a block of @p size floats of width @p dim holds.
inline std::size_t block_rows(std::string_view where, std::string_view name, std::size_t size, std::size_t dim) {
  if (dim == 0) bad_bags(where, errc::invalid_argument, "dim must be greater than 0");
  if (size % dim != 0)
    bad_bags(
        where, errc::shape_mismatch,
        std::string(name) + " holds " + std::to_string(size) + " floats, not a multiple of dim " + std::to_string(dim));
  return size / dim;
}

/// The scale s_b of bag [lo, hi) under @p c; weight sums in double, so a bag of a million
/// entries loses nothing to them.
inline float bag_scale(combiner c, std::span<const float> weights, std::size_t lo, std::size_t hi) noexcept {
  if (c == combiner::sum) return 1.0f;
  double sum = 0;
  if (weights.empty()) {
    sum = static_cast<double>(hi - lo);
  } else if (c == combiner::mean) {
    for (std::size_t j = lo; j < hi; ++j) sum += weights[j];
  } else {
    for (std::size_t j = lo; j < hi; ++j) sum += static_cast<double>(weights[j]) * weights[j];
  }
  if (c == combiner::sqrtn) sum = std::sqrt(sum);
  return sum == 0 ? 0.0f : static_cast<float>(1.0 / sum);
}

}  // namespace detail

/// Forward of embedding_lookup_sparse: out[b] = the combination of bag b's rows of @p block.
///
/// @param c      sum, mean or sqrtn (the formulas in this file's comment)
/// @param b      the bags; b.rows index rows of @p block
/// @param dim    floats per row
/// @param block  the pulled rows, row-major [rows x dim]
/// @param out    row-major [b.size() x dim], overwritten
/// @throws dsgd::error (errc::invalid_argument or errc::shape_mismatch) naming the first bad
///         offset, weight (not finite), row index or size; nothing is written then.
///
/// Complexity: O(entries x dim + bags x dim), one pass over the entries. Entries accumulate in
/// float in entry order: the result does not depend on threads or batch layout. Thread safety:
/// a pure function of its inputs; concurrent calls are safe with disjoint outputs.
inline void combine(combiner c, const bags& b, std::size_t dim, std::span<const float> block, std::span<float> out) {
  constexpr std::string_view where = "combine";
  const std::size_t rows = detail::block_rows(where, "block", block.size(), dim);
  detail::check_bags(where, b, rows);
  detail::check_rows(where, "out", out.size(), b.size(), dim);
  for (std::size_t bag = 0; bag < b.size(); ++bag) {
    float* const o = out.data() + bag * dim;
    std::fill(o, o + dim, 0.0f);
    const std::size_t lo = b.offsets[bag], hi = b.offsets[bag + 1];
    for (std::size_t j = lo; j < hi; ++j) {
      const float* const e = block.data() + std::size_t{b.rows[j]} * dim;
      if (b.weights.empty()) {
        for (std::size_t d = 0; d < dim; ++d) o[d] += e[d];
      } else {
        const float w = b.weights[j];
        for (std::size_t d = 0; d < dim; ++d) o[d] += w * e[d];
      }
    }
    const float s = detail::bag_scale(c, b.weights, lo, hi);
    if (s != 1.0f)
      for (std::size_t d = 0; d < dim; ++d) o[d] *= s;
  }
}

/// Backward of combine(): the gradient of each block row, summed over all its entries.
///
///     grad_block[u] = sum over bags b, entries j in b with rows[j] == u, of s_b * w_j * grad_out[b]
///
/// @param grad_out    row-major [b.size() x dim]: the loss's gradient with respect to combine()'s out
/// @param grad_block  row-major [rows x dim], overwritten (rows that no entry names get zeros);
///                    its row count is the block's, so b.rows index it as they index the block
/// @throws dsgd::error as combine(); nothing is written then.
///
/// Complexity: O(entries x dim + rows x dim). Thread safety: as combine().
inline void combine_grad(combiner c, const bags& b, std::size_t dim, std::span<const float> grad_out,
                         std::span<float> grad_block) {
  constexpr std::string_view where = "combine_grad";
  const std::size_t rows = detail::block_rows(where, "grad_block", grad_block.size(), dim);
  detail::check_bags(where, b, rows);
  detail::check_rows(where, "grad_out", grad_out.size(), b.size(), dim);
  std::fill(grad_block.begin(), grad_block.end(), 0.0f);
  for (std::size_t bag = 0; bag < b.size(); ++bag) {
    const std::size_t lo = b.offsets[bag], hi = b.offsets[bag + 1];
    const float s = detail::bag_scale(c, b.weights, lo, hi);
    const float* const g = grad_out.data() + bag * dim;
    for (std::size_t j = lo; j < hi; ++j) {
      const float coef = b.weights.empty() ? s : s * b.weights[j];
      float* const e = grad_block.data() + std::size_t{b.rows[j]} * dim;
      for (std::size_t d = 0; d < dim; ++d) e[d] += coef * g[d];
    }
  }
}

/// Forward of embedding_lookup: out[i] = block[rows[i]], one row per entry (bags of one).
///
/// @param rows   per entry: its row in @p block (a deduplicator's inverse)
/// @param block  row-major [block rows x dim]
/// @param out    row-major [rows.size() x dim], overwritten
/// @throws dsgd::error naming a row index out of the block or a size that does not match.
///
/// Complexity: O(entries x dim). Thread safety: as combine().
inline void gather(std::span<const std::uint32_t> rows, std::size_t dim, std::span<const float> block,
                   std::span<float> out) {
  constexpr std::string_view where = "gather";
  const std::size_t n = detail::block_rows(where, "block", block.size(), dim);
  detail::check_rows(where, "out", out.size(), rows.size(), dim);
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i] >= n)
      detail::bad_bags(where, errc::invalid_argument,
                       "rows[" + std::to_string(i) + "] = " + std::to_string(rows[i]) + " is out of the block's " +
                           std::to_string(n) + " rows");
  for (std::size_t i = 0; i < rows.size(); ++i)
    std::copy_n(block.data() + std::size_t{rows[i]} * dim, dim, out.data() + i * dim);
}

/// Backward of gather(): grad_block[u] = the sum of grad_out[i] over entries i with rows[i] == u.
///
/// @param grad_block  row-major [block rows x dim], overwritten
/// @throws dsgd::error as gather().
///
/// Complexity: O(entries x dim + block rows x dim). Thread safety: as combine().
inline void gather_grad(std::span<const std::uint32_t> rows, std::size_t dim, std::span<const float> grad_out,
                        std::span<float> grad_block) {
  constexpr std::string_view where = "gather_grad";
  const std::size_t n = detail::block_rows(where, "grad_block", grad_block.size(), dim);
  detail::check_rows(where, "grad_out", grad_out.size(), rows.size(), dim);
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (rows[i] >= n)
      detail::bad_bags(where, errc::invalid_argument,
                       "rows[" + std::to_string(i) + "] = " + std::to_string(rows[i]) + " is out of the block's " +
                           std::to_string(n) + " rows");
  std::fill(grad_block.begin(), grad_block.end(), 0.0f);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    float* const e = grad_block.data() + std::size_t{rows[i]} * dim;
    const float* const g = grad_out.data() + i * dim;
    for (std::size_t d = 0; d < dim; ++d) e[d] += g[d];
  }
}

}  // namespace dsgd::embedding
