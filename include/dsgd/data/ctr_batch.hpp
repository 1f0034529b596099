// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// data::ctr_batch: one batch of click-through-rate examples (dense features, hashed
/// categorical ids, 0/1 clicks and, for synthetic data, the teacher's click probabilities) in
/// the row-major layout a model reads, whatever made it: the synthetic data::click_stream
/// (whose click_stream::batch it is) or a file read by data::ctr_file_reader. A model written
/// against it takes either source.
///
/// @code
/// void train_on(const dsgd::data::ctr_batch& b) {
///   for (std::size_t r = 0; r < b.size; ++r) use(b.dense_row(r), b.keys_row(r), b.labels[r]);
/// }
/// @endcode
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dsgd::data {

/// One batch of CTR examples, row-major: example r's dense features are
/// dense[r * dense_features .. (r + 1) * dense_features), its ids keys[r * fields .. (r + 1) * fields).
/// Its source reuses it from batch to batch: resize() allocates only when a batch outgrows
/// what it held.
struct ctr_batch {
  std::size_t size = 0;              ///< examples
  std::size_t dense_features = 0;    ///< dense floats per example (D)
  std::size_t fields = 0;            ///< categorical ids per example (F)
  std::vector<float> dense;          ///< size x dense_features
  std::vector<std::uint64_t> keys;   ///< size x fields, hashed ids
  std::vector<float> labels;         ///< size clicks, 0 or 1
  std::vector<float> probabilities;  ///< size teacher click probabilities (0 when the source has none)
  std::uint64_t first = 0;           ///< index of its first example in its source (time, or record of a file)

  /// Makes room for @p n examples of @p dense_width dense floats and @p field_count ids each
  /// (allocates only when the vectors grow past what they held).
  void resize(std::size_t n, std::size_t dense_width, std::size_t field_count) {
    size = n;
    dense_features = dense_width;
    fields = field_count;
    dense.resize(n * dense_width);
    keys.resize(n * field_count);
    labels.resize(n);
    probabilities.resize(n);
  }

  /// @returns example @p r's dense features.
  std::span<const float> dense_row(std::size_t r) const noexcept {
    return {dense.data() + r * dense_features, dense_features};
  }
  /// @returns example @p r's categorical ids.
  std::span<const std::uint64_t> keys_row(std::size_t r) const noexcept { return {keys.data() + r * fields, fields}; }
};

}  // namespace dsgd::data
