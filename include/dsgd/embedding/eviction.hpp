// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Eviction policies of a ps shard's embedding table (row_table): which rows go when the table
/// is at its cap (rows or bytes, row_table::options) and which rows a sweep removes as stale.
/// Three models: none (a full table refuses new rows with an error), by_age (least recently
/// touched first; a sweep removes rows not touched in the last A global steps) and
/// least_frequent (fewest uses first). Evicted keys leave tombstones in the table
/// (row_table::tombstones()) for incremental checkpoints.
#pragma once

#include <compare>
#include <concepts>
#include <cstdint>

namespace dsgd::embedding {

/// What a table records of each row for eviction.
struct row_stats {
  std::uint64_t last_step = 0;  ///< the last global step a training lookup, write or update touched it
  std::uint32_t uses = 0;       ///< training lookups that found or created it (saturating)
};

/// The order of eviction: rows with the smaller rank go first (ties: the smaller key first, so
/// what is evicted depends on the rows' keys and stats only, never on memory layout or history
/// of the hash map: a restored table evicts the same keys as the table it was saved from).
struct eviction_rank {
  std::uint64_t first = 0;
  std::uint64_t second = 0;
  friend constexpr auto operator<=>(const eviction_rank&, const eviction_rank&) = default;
};

/// An EvictionPolicy @p E ranks rows for eviction. A model provides
///  - `E::evicts`: a constexpr bool, false when the table must never evict (a full table then
///    refuses a new row with dsgd::error);
///  - `e.rank(stats)`: the row's eviction_rank (smallest evicted first) when the table is at its
///    cap and needs room;
///  - `e.expired(stats, step)`: whether a sweep at global step @p step (row_table::evict_expired)
///    removes the row.
/// Policies are copyable values with const, thread-safe members.
template <class E>
concept EvictionPolicy = std::copyable<E> && requires(const E& e, const row_stats& s, std::uint64_t step) {
  { E::evicts } -> std::convertible_to<bool>;
  { e.rank(s) } -> std::same_as<eviction_rank>;
  { e.expired(s, step) } -> std::same_as<bool>;
};

namespace eviction {

/// Never evict: a table at its cap throws on a new row (naming the table, the key and the ps
/// task), and a sweep removes nothing.
struct none {
  static constexpr bool evicts = false;
  constexpr eviction_rank rank(const row_stats&) const noexcept { return {}; }
  constexpr bool expired(const row_stats&, std::uint64_t) const noexcept { return false; }
};

/// By age in global steps: at the cap the least recently touched rows go first (then the least
/// used); a sweep at step t removes the rows not touched in the last @c max_age steps, i.e.
/// those with last_step + max_age <= t. max_age 0 means no sweep (cap eviction only).
struct by_age {
  static constexpr bool evicts = true;
  std::uint64_t max_age = 0;

  constexpr eviction_rank rank(const row_stats& s) const noexcept { return {s.last_step, s.uses}; }
  constexpr bool expired(const row_stats& s, std::uint64_t step) const noexcept {
    return max_age != 0 && s.last_step + max_age <= step;
  }
};

/// Least frequently used: at the cap the rows with the fewest uses go first (then the least
/// recently touched). A sweep removes the rows with fewer than @c min_uses uses that were not
/// touched in the last @c max_age steps (both 0: no sweep), so a key seen once long ago goes
/// and a hot row stays however old.
struct least_frequent {
  static constexpr bool evicts = true;
  std::uint32_t min_uses = 0;
  std::uint64_t max_age = 0;

  constexpr eviction_rank rank(const row_stats& s) const noexcept { return {s.uses, s.last_step}; }
  constexpr bool expired(const row_stats& s, std::uint64_t step) const noexcept {
    return max_age != 0 && s.uses < min_uses && s.last_step + max_age <= step;
  }
};

}  // namespace eviction
}  // namespace dsgd::embedding
