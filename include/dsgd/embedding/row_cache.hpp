// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// embedding::row_cache: a worker's cache of rows it pulled, each remembered with the step it was
/// pulled at, so that a row pulled at most S steps ago is served without a pull (the
/// bounded-staleness idea of SSP, applied per row). A lookup splits a batch's unique keys into
/// hits, whose rows it copies out, and misses, which the worker pulls and hands back to be
/// stored. Its hit rate is counted.
///
/// @code
/// dsgd::embedding::row_cache cache({.dim = 16, .capacity = 1 << 20, .staleness = 2});
/// const auto& d = dedup.run(batch_keys);
/// std::vector<float> block(d.unique.size() * 16);
/// const auto& miss = cache.lookup(d.unique, step, block);  // hits' rows are in block now
/// std::vector<float> pulled(miss.keys.size() * 16);
/// pull(miss.keys, pulled);                                  // only the misses cross the wire
/// cache.fill_misses(pulled, block);                         // block complete; misses stored
/// double rate = cache.statistics().hit_rate();
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
#include <string_view>
#include <vector>

namespace dsgd::embedding {

/// A bounded cache of embedding rows keyed by 64-bit key, each entry tagged with its pull step.
///
/// Semantics: a lookup at step t hits an entry pulled at step p exactly when p <= t and
/// t - p <= S (options::staleness): S = 0 serves only rows pulled in the same step (two lookups
/// of one step, e.g. two towers reading one table), S = 2 rows up to two steps old. A present
/// but older entry is a miss (counted as stale too); re-inserting its key refreshes it in place.
/// The cache never sees the worker's own pushes, so a hit may lack up to S steps of updates,
/// the worker's own included: the staleness a bounded-staleness rule allows for the whole model.
///
/// Eviction: when a new key arrives and the cache holds options::capacity rows, CLOCK (second
/// chance) picks the victim: a hand sweeps the entries, evicting the first that is expired at the
/// inserting step or was not hit since the hand last passed, and clearing the hit mark of the
/// others. An entry enters unmarked, so rows that are pulled once and never hit go first.
///
/// Complexity: lookup and insert cost O(dim) a key (a linear-probing index at most half full;
/// the hand's sweep is amortised O(1)). Memory: capacity x (4 dim + 17) bytes plus 16 bytes per
/// index slot (2 to 4 per entry), all allocated by the constructor: nothing is allocated per
/// batch once the largest batch has been seen.
///
/// Thread safety: none. Use one cache per worker thread, or guard it with a mutex; const members
/// may run concurrently with each other, not with a non-const member.
class row_cache {
 public:
  /// How large the cache is and how old a row it serves.
  struct options {
    std::size_t dim = 0;          ///< floats per row, > 0
    std::size_t capacity = 0;     ///< rows held at most; 0: the cache holds nothing (every lookup misses)
    std::uint64_t staleness = 0;  ///< S: a row pulled at step p serves steps p..p + S

    /// @throws dsgd::error (errc::invalid_argument) naming the first bad field.
    void validate() const {
      if (dim == 0) throw error(errc::invalid_argument, "row_cache::options.dim: must be greater than 0");
      if (capacity >= std::numeric_limits<std::uint32_t>::max())
        throw error(errc::invalid_argument,
                    "row_cache::options.capacity: must be below 2^32 - 1 rows, got " + std::to_string(capacity));
    }
  };

  /// What the cache has done since construction or reset_statistics().
  struct statistics_type {
    std::uint64_t hits = 0;       ///< lookups served from the cache
    std::uint64_t misses = 0;     ///< lookups not served (absent or stale)
    std::uint64_t stale = 0;      ///< of the misses: the key was present but older than S steps
    std::uint64_t inserts = 0;    ///< rows stored (new keys and refreshed ones)
    std::uint64_t evictions = 0;  ///< entries dropped to make room

    /// @returns hits / (hits + misses), 0 before any lookup.
    double hit_rate() const noexcept {
      const std::uint64_t all = hits + misses;
      return all == 0 ? 0.0 : static_cast<double>(hits) / static_cast<double>(all);
    }
  };

  /// The misses of the last lookup: spans into the cache's buffers, valid until the next lookup.
  struct misses_type {
    std::span<const std::uint64_t> keys;       ///< the keys to pull, in the order they were looked up
    std::span<const std::uint32_t> positions;  ///< each one's position in the looked-up keys
  };

  /// @throws dsgd::error (errc::invalid_argument) if @p opts is invalid (options::validate()).
  explicit row_cache(const options& opts) : opts_((opts.validate(), opts)) {
    keys_.resize(opts_.capacity);
    pulled_.resize(opts_.capacity);
    marked_.resize(opts_.capacity);
    rows_.resize(opts_.capacity * opts_.dim);
    const std::size_t slots = std::bit_ceil(std::max<std::size_t>(8, 2 * opts_.capacity));
    index_.assign(slots, slot{0, empty});
    shift_ = 64 - std::countr_zero(slots);
  }

  /// @returns the options the cache was made with.
  const options& config() const noexcept { return opts_; }

  /// @returns the number of rows held (at most options::capacity).
  std::size_t size() const noexcept { return size_; }

  /// @returns whether @p key has an entry, however old; counts nothing.
  bool contains(std::uint64_t key) const noexcept { return find(key) != empty; }

  /// Serves the rows of @p keys (a batch's unique keys) pulled at most S steps before @p step.
  ///
  /// Copies each hit's row into its place in @p rows ([keys.size() x dim], row i for keys[i])
  /// and leaves the misses' places untouched. Duplicate keys are served (or missed) each time.
  /// @returns the misses: keys to pull, and their positions in @p keys; fill_misses() takes the
  ///          pulled rows.
  /// @throws dsgd::error (errc::shape_mismatch) if @p rows is not keys.size() x dim.
  const misses_type& lookup(std::span<const std::uint64_t> keys, std::uint64_t step, std::span<float> rows) {
    check_rows("lookup", "rows", rows.size(), keys.size());
    if (keys.size() >= std::numeric_limits<std::uint32_t>::max())
      throw error(errc::invalid_argument, "embedding::row_cache::lookup: " + std::to_string(keys.size()) +
                                              " keys in one lookup; at most 2^32 - 2 are supported");
    if (miss_keys_.size() < keys.size()) {
      miss_keys_.resize(keys.size());
      miss_positions_.resize(keys.size());
    }
    const std::size_t dim = opts_.dim;
    std::size_t m = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const std::uint32_t e = find(keys[i]);
      if (e != empty && fresh(pulled_[e], step)) {
        std::copy_n(rows_.data() + std::size_t{e} * dim, dim, rows.data() + i * dim);
        marked_[e] = 1;
        ++stats_.hits;
        continue;
      }
      if (e != empty) ++stats_.stale;
      ++stats_.misses;
      miss_keys_[m] = keys[i];
      miss_positions_[m] = static_cast<std::uint32_t>(i);
      ++m;
    }
    misses_ = {std::span(miss_keys_.data(), m), std::span(miss_positions_.data(), m)};
    lookup_step_ = step;
    lookup_keys_ = keys.size();
    pending_ = true;
    return misses_;
  }

  /// Completes the last lookup: copies the pulled rows of its misses into their places in
  /// @p rows (the same rows the lookup filled) and stores them as pulled at the lookup's step.
  ///
  /// @param pulled  row-major [misses x dim], row k for misses.keys[k]
  /// @throws dsgd::error (errc::invalid_argument) without a lookup since the last fill_misses(),
  ///         (errc::shape_mismatch) if @p pulled or @p rows has the wrong size.
  void fill_misses(std::span<const float> pulled, std::span<float> rows) {
    if (!pending_)
      throw error(errc::invalid_argument,
                  "embedding::row_cache::fill_misses: no lookup() to complete (call lookup() first, once per fill)");
    check_rows("fill_misses", "pulled", pulled.size(), misses_.keys.size());
    check_rows("fill_misses", "rows", rows.size(), lookup_keys_);
    pending_ = false;
    const std::size_t dim = opts_.dim;
    for (std::size_t k = 0; k < misses_.keys.size(); ++k)
      std::copy_n(pulled.data() + k * dim, dim, rows.data() + std::size_t{misses_.positions[k]} * dim);
    insert(misses_.keys, pulled, lookup_step_);
  }

  /// Stores the rows of @p keys as pulled at @p step: a present key is refreshed in place, a new
  /// one takes a free entry or the CLOCK victim's.
  ///
  /// @param rows  row-major [keys.size() x dim]
  /// @throws dsgd::error (errc::shape_mismatch) if @p rows is not keys.size() x dim.
  void insert(std::span<const std::uint64_t> keys, std::span<const float> rows, std::uint64_t step) {
    check_rows("insert", "rows", rows.size(), keys.size());
    if (opts_.capacity == 0) return;
    const std::size_t dim = opts_.dim;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      std::uint32_t e = find(keys[i]);
      if (e == empty) {
        if (size_ < opts_.capacity) {
          e = static_cast<std::uint32_t>(size_++);
        } else {
          e = victim(step);
          erase(keys_[e]);
          ++stats_.evictions;
        }
        keys_[e] = keys[i];
        marked_[e] = 0;
        place(keys[i], e);
      }
      pulled_[e] = step;
      std::copy_n(rows.data() + i * dim, dim, rows_.data() + std::size_t{e} * dim);
      ++stats_.inserts;
    }
  }

  /// @returns the counters (hits, misses, stale, inserts, evictions) and the hit rate.
  const statistics_type& statistics() const noexcept { return stats_; }

  /// Sets every counter to 0 (say, once per reporting interval); the rows stay.
  void reset_statistics() noexcept { stats_ = {}; }

  /// Drops every row (after a restore, say); the counters stay.
  void clear() noexcept {
    std::fill(index_.begin(), index_.end(), slot{0, empty});
    size_ = 0;
    hand_ = 0;
    pending_ = false;
  }

 private:
  static constexpr std::uint32_t empty = std::numeric_limits<std::uint32_t>::max();

  struct slot {
    std::uint64_t key;
    std::uint32_t entry;  ///< index into keys_, pulled_, marked_, rows_; `empty` if free
  };

  void check_rows(std::string_view where, std::string_view name, std::size_t size, std::size_t keys) const {
    if (size != keys * opts_.dim)
      throw error(errc::shape_mismatch, "embedding::row_cache::" + std::string(where) + ": " + std::string(name) +
                                            " holds " + std::to_string(size) + " floats, expected " +
                                            std::to_string(keys) + " rows x dim " + std::to_string(opts_.dim));
  }

  bool fresh(std::uint64_t pulled, std::uint64_t step) const noexcept {
    return pulled <= step && step - pulled <= opts_.staleness;
  }

  // Fibonacci hashing: the top bits of key * 2^64 / phi.
  std::size_t home(std::uint64_t key) const noexcept {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  std::size_t mask() const noexcept { return index_.size() - 1; }

  std::uint32_t find(std::uint64_t key) const noexcept {
    for (std::size_t h = home(key);; h = (h + 1) & mask()) {
      const slot& s = index_[h];
      if (s.entry == empty) return empty;
      if (s.key == key) return s.entry;
    }
  }

  void place(std::uint64_t key, std::uint32_t entry) noexcept {
    std::size_t h = home(key);
    while (index_[h].entry != empty) h = (h + 1) & mask();
    index_[h] = {key, entry};
  }

  // Deletion from linear probing without tombstones (Knuth's Algorithm R): later members of the
  // probe run move back into the hole when the hole lies between their home and their slot.
  void erase(std::uint64_t key) noexcept {
    std::size_t i = home(key);
    while (index_[i].key != key || index_[i].entry == empty) i = (i + 1) & mask();
    for (std::size_t j = (i + 1) & mask(); index_[j].entry != empty; j = (j + 1) & mask()) {
      const std::size_t h = home(index_[j].key);
      if (((j - h) & mask()) >= ((j - i) & mask())) {
        index_[i] = index_[j];
        i = j;
      }
    }
    index_[i] = {0, empty};
  }

  // CLOCK: the first entry that is expired at @p step or unmarked; marked ones lose their mark.
  std::uint32_t victim(std::uint64_t step) noexcept {
    for (;;) {
      const std::size_t e = hand_;
      hand_ = hand_ + 1 == opts_.capacity ? 0 : hand_ + 1;
      if (!marked_[e] || !fresh(pulled_[e], step)) return static_cast<std::uint32_t>(e);
      marked_[e] = 0;
    }
  }

  options opts_;
  std::vector<std::uint64_t> keys_;    // per entry: its key
  std::vector<std::uint64_t> pulled_;  // per entry: the step it was pulled at
  std::vector<std::uint8_t> marked_;   // per entry: hit since the hand last passed
  std::vector<float> rows_;            // per entry: dim floats
  std::vector<slot> index_;            // key -> entry, linear probing, at most half full
  int shift_ = 64;
  std::size_t size_ = 0;
  std::size_t hand_ = 0;
  std::vector<std::uint64_t> miss_keys_;
  std::vector<std::uint32_t> miss_positions_;
  misses_type misses_;
  std::uint64_t lookup_step_ = 0;
  std::size_t lookup_keys_ = 0;
  bool pending_ = false;
  statistics_type stats_;
};

}  // namespace dsgd::embedding
