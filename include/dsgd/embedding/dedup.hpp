// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// embedding::deduplicator: a batch's keys reduced to its unique keys, in first-seen order, with
/// each input position's index into them (the inverse) and each unique key's count. A worker
/// pulls each unique row once into a dense [unique x dim] block and reads it through the inverse
/// (combiner.hpp), then pushes one gradient row per unique key (TF1's embedding_lookup does the
/// same with array_ops.unique before its gather).
///
/// @code
/// dsgd::embedding::deduplicator dedup;  // one per worker thread, kept across steps
/// const auto& d = dedup.run(batch.keys);
/// pull(d.unique, block);               // block: d.unique.size() x dim
/// // row of input position i: block[d.inverse[i] * dim ...]
/// @endcode
#pragma once

#include <dsgd/error.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace dsgd::embedding {

/// Deduplicates the keys of one batch after another, reusing its buffers.
///
/// Semantics: run(keys) makes unique the distinct keys of @p keys in the order of their first
/// occurrence (so unique[inverse[i]] == keys[i], inverse[0] == 0, and the result is a function of
/// the key sequence alone: deterministic across runs, machines and table sizes), and counts[u]
/// the number of positions holding unique[u].
///
/// Complexity: O(n) expected for n keys (linear probing on a table at most half full, keys
/// spread by Fibonacci hashing so sequential ids probe as well as hashed ones). Memory: 16 bytes
/// a table slot, 2 to 4 slots a unique key, plus 8 + 4 bytes a unique key and 4 an input key.
/// Buffers only grow: once a batch as large (in keys and in unique keys) has been seen, run()
/// allocates nothing. The table is never cleared: each slot carries the number of the run that
/// wrote it, so a run costs its own keys, not the table's size.
///
/// Thread safety: none; one deduplicator per thread. The spans of a result stay valid until the
/// next run() or the deduplicator's destruction.
class deduplicator {
 public:
  /// The result of a run: spans into the deduplicator's buffers.
  struct result {
    std::span<const std::uint64_t> unique;   ///< distinct keys, first-seen order
    std::span<const std::uint32_t> inverse;  ///< per input position: its index into unique
    std::span<const std::uint32_t> counts;   ///< per unique key: how many input positions hold it
  };

  deduplicator() = default;

  /// Makes room for batches of @p keys keys with up to @p unique distinct ones, so that the
  /// first run() of that size allocates nothing either.
  void reserve(std::size_t keys, std::size_t unique) {
    if (inverse_.size() < keys) inverse_.resize(keys);
    if (unique_.size() < unique) {
      unique_.resize(unique);
      counts_.resize(unique);
    }
    const std::size_t slots = std::max(min_table, std::bit_ceil(2 * unique));
    if (slots > table_.size()) rehash(slots, 0);
  }

  /// Deduplicates @p keys (any 64-bit values, 0 included).
  /// @returns spans valid until the next run().
  /// @throws dsgd::error (errc::invalid_argument) if @p keys holds 2^32 keys or more.
  const result& run(std::span<const std::uint64_t> keys) {
    const std::size_t n = keys.size();
    if (n >= std::numeric_limits<std::uint32_t>::max())
      throw error(errc::invalid_argument, "embedding::deduplicator::run: " + std::to_string(n) +
                                              " keys in one batch; at most 2^32 - 2 are supported");
    if (inverse_.size() < n) inverse_.resize(n);
    if (table_.empty()) rehash(min_table, 0);
    if (++run_ == 0) {  // after 2^32 runs the numbers wrap: forget every slot once
      for (slot& s : table_) s.run = 0;
      run_ = 1;
    }
    std::uint32_t u = 0;
    std::uint32_t* const inverse = inverse_.data();
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t k = keys[i];
      std::size_t h = home(k);
      for (;;) {
        slot& s = table_[h];
        if (s.run != run_) {
          if (u == unique_.size()) {
            unique_.resize(grown(u));
            counts_.resize(unique_.size());
          }
          s = {k, u, run_};
          unique_[u] = k;
          counts_[u] = 1;
          inverse[i] = u++;
          // Keep the table at most half full: probes stay short and a free slot always exists.
          if (2 * std::size_t{u} > table_.size()) rehash(2 * table_.size(), u);
          break;
        }
        if (s.key == k) {
          inverse[i] = s.index;
          ++counts_[s.index];
          break;
        }
        h = (h + 1) & (table_.size() - 1);
      }
    }
    result_ = {std::span(unique_.data(), u), std::span(inverse_.data(), n), std::span(counts_.data(), u)};
    return result_;
  }

  /// @returns the result of the last run() (empty before the first).
  const result& last() const noexcept { return result_; }

  /// @returns the number of slots of the hash table (a power of two; 0 before the first run).
  std::size_t table_size() const noexcept { return table_.size(); }

 private:
  struct slot {
    std::uint64_t key;
    std::uint32_t index;
    std::uint32_t run;  ///< the run that wrote the slot; any other value means empty
  };

  static constexpr std::size_t min_table = 1024;

  static std::size_t grown(std::size_t size) { return size < 512 ? 1024 : 2 * size; }

  // Fibonacci hashing: the top bits of key * 2^64 / phi.
  std::size_t home(std::uint64_t key) const noexcept {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  /// Moves to a table of @p size slots holding the first @p u unique keys of this run. Slots
  /// of run 0 are empty: run_ is never 0 during a run.
  void rehash(std::size_t size, std::uint32_t u) {
    table_.assign(size, slot{0, 0, 0});
    shift_ = 64 - std::countr_zero(size);
    for (std::uint32_t i = 0; i < u; ++i) {
      std::size_t h = home(unique_[i]);
      while (table_[h].run == run_) h = (h + 1) & (size - 1);
      table_[h] = {unique_[i], i, run_};
    }
  }

  std::vector<slot> table_;
  std::vector<std::uint64_t> unique_;
  std::vector<std::uint32_t> counts_;
  std::vector<std::uint32_t> inverse_;
  int shift_ = 64;
  std::uint32_t run_ = 0;
  result result_;
};

}  // namespace dsgd::embedding
