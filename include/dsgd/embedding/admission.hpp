// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Admission policies of a ps shard's embedding table (row_table): whether a key that has no
/// row gets one on a training lookup. Rare ids (most ids of a click log are seen once or twice)
/// then cost no row: the lookup reads the key's initial row and the gradient pushed for it is
/// dropped. Three models: always, by_count (seen N times) and by_probability (a reproducible
/// coin per key and step).
#pragma once

#include <dsgd/detail/validate.hpp>
#include <dsgd/embedding/detail/counter_hash.hpp>
#include <dsgd/embedding/detail/counting_allocator.hpp>

#include <tsl/robin_map.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace dsgd::embedding {

/// An AdmissionPolicy @p A decides, for a key without a row, whether a training lookup creates
/// one. A model provides
///  - `a.admit(key, step)`: true to create the row now. Called once per training lookup of a key
///    that has no row, at global step @p step (so it may count sightings);
///  - `a.bytes_used()`: the heap bytes its state holds (the table adds it to its own).
/// A policy is movable and is owned by one table; it is used under that table's lock and need
/// not be thread-safe. The table counts what was admitted and rejected (row_table::stats()).
template <class A>
concept AdmissionPolicy = std::movable<A> && requires(A& a, const A& ca, std::uint64_t key, std::uint64_t step) {
  { a.admit(key, step) } -> std::same_as<bool>;
  { ca.bytes_used() } -> std::convertible_to<std::size_t>;
};

namespace admission {

/// Every key gets a row on its first training lookup.
struct always {
  constexpr bool admit(std::uint64_t, std::uint64_t) const noexcept { return true; }
  constexpr std::size_t bytes_used() const noexcept { return 0; }
};

/// A key gets a row on its @c count -th sighting (training lookups while it had no row).
///
/// Pending sightings live in a bounded map of at most @c max_pending keys, so an endless stream
/// of ids seen once cannot grow it: when a new key finds the map full, every pending count is
/// halved (rounded down) and the keys left at zero are forgotten, repeatedly until there is room
/// (TinyLFU's reset). Until that happens counts are exact: a key is admitted on exactly its
/// count-th sighting. After it, old sightings weigh half, so a key must be seen @c count times
/// within a window of roughly @c max_pending new keys. An admitted key's count is forgotten
/// (should its row be evicted later, it must be seen @c count times again).
///
/// admit() costs one hash probe, amortised O(1) (a reset sweeps the map once per at least
/// max_pending / 2 new keys). Memory: at most about 24 bytes per pending key over the map's
/// load factor (bytes_used() measures it). Move-only: it owns the counter its allocator reports
/// to.
class by_count {
 public:
  struct options {
    std::uint32_t count = 2;            ///< sightings before a key gets a row (1 admits at once)
    std::size_t max_pending = 1 << 16;  ///< bound on the keys counted and not yet admitted
  };

  /// @throws dsgd::error (errc::invalid_argument) when count or max_pending is 0.
  explicit by_count(options o)
      : options_{o}, bytes_{std::make_unique<std::size_t>(0)}, pending_{make_map(bytes_.get())} {
    dsgd::detail::require_positive(o.count, "admission::by_count::options", "count");
    dsgd::detail::require_positive(o.max_pending, "admission::by_count::options", "max_pending");
  }
  by_count() : by_count(options{}) {}

  bool admit(std::uint64_t key, std::uint64_t /*step*/) {
    if (options_.count <= 1) return true;
    auto it = pending_.find(key);
    if (it == pending_.end()) {
      while (pending_.size() >= options_.max_pending) decay();
      pending_.emplace(key, 1u);
      return false;
    }
    if (it.value() + 1 >= options_.count) {
      pending_.erase(it);
      return true;
    }
    ++it.value();
    return false;
  }

  /// @returns the sightings counted for @p key and not yet admitted (0 for an unknown key).
  std::uint32_t pending_count(std::uint64_t key) const {
    auto it = pending_.find(key);
    return it == pending_.end() ? 0u : it->second;
  }
  /// @returns how many keys have pending sightings (at most max_pending).
  std::size_t pending() const noexcept { return pending_.size(); }
  /// @returns how many times the pending counts were halved because the map was full.
  std::uint64_t decays() const noexcept { return decays_; }
  std::size_t bytes_used() const noexcept { return *bytes_; }
  const options& settings() const noexcept { return options_; }

 private:
  using map_type = tsl::robin_map<std::uint64_t, std::uint32_t, detail::key_hasher, std::equal_to<>,
                                  detail::counting_allocator<std::pair<std::uint64_t, std::uint32_t>>>;

  static map_type make_map(std::size_t* counter) {
    return map_type(0, detail::key_hasher{}, std::equal_to<>{},
                    detail::counting_allocator<std::pair<std::uint64_t, std::uint32_t>>(counter));
  }

  void decay() {
    ++decays_;
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (it->second <= 1) {
        it = pending_.erase(it);
      } else {
        it.value() /= 2;
        ++it;
      }
    }
  }

  options options_;
  std::unique_ptr<std::size_t> bytes_;  // where the map's allocator counts (stable across moves)
  map_type pending_;
  std::uint64_t decays_ = 0;
};

/// A key without a row gets one with probability @c probability at each training lookup: the
/// coin of (key, step) is u < probability with u = (h >> 11) * 2^-53 and
/// h = counter_hash(seed xor 0x61646d6974 ("admit"), key, step), the hash of
/// embedding/initializer.hpp (the salt keeps it apart from an initializer's numbers), so it is reproducible (the same
/// keys at the same steps are admitted in every run and on every ps) and a key looked up at k different steps is
/// admitted with probability 1 - (1 - p)^k: a frequent key gets in soon, a rare one seldom.
/// (A coin of (seed, key) alone would refuse a key for ever.) Keeps no state.
struct by_probability {
  double probability = 0.1;
  std::uint64_t seed = 0;

  /// @throws dsgd::error (errc::invalid_argument) unless 0 <= probability <= 1.
  void validate() const {
    if (!(probability >= 0 && probability <= 1))
      dsgd::detail::bad_option("admission::by_probability", "probability", "must be in [0, 1]");
  }
  bool admit(std::uint64_t key, std::uint64_t step) const noexcept {
    return detail::unit_double(detail::counter_hash(seed ^ 0x61646d6974ull, key, step)) < probability;  // "admit"
  }
  constexpr std::size_t bytes_used() const noexcept { return 0; }
};

}  // namespace admission
}  // namespace dsgd::embedding
