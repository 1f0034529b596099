// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// embedding::any_eviction: the EvictionPolicy an eviction_spec names, chosen at run time: one
/// type holding any of the shipped policies (embedding/eviction.hpp), so a ps makes every table
/// with one compiled row_table. Its ranks and sweeps are those of the policy it holds.
#pragma once

#include <dsgd/embedding/eviction.hpp>
#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/error.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace dsgd::embedding {

/// The eviction policy an eviction_spec names (EvictionPolicy).
///
/// `evicts` is a compile-time trait of the concept, so it is true here whatever the policy
/// held; holding eviction::none, rank() throws instead: a table at its cap then refuses a new
/// row with dsgd::error, unchanged, as a table of eviction::none does (the message names the
/// table and ps task given at construction, not the key; a row_table of eviction::none names
/// the key too).
///
/// @code
/// dsgd::embedding::any_eviction e(dsgd::embedding::eviction_spec::by_age(1000));
/// e.expired(stats, step);  // == eviction::by_age{1000}.expired(stats, step)
/// @endcode
class any_eviction {
 public:
  using variant_type = std::variant<eviction::none, eviction::by_age, eviction::least_frequent>;

  /// True: whether a row goes is the held policy's call (see the class).
  static constexpr bool evicts = true;

  /// eviction::none.
  any_eviction() = default;
  /// The policy @p spec names; @p table ("embedding table 'user_id' on ps task 3") is what
  /// rank() names when the policy is none.
  /// @throws dsgd::error (errc::invalid_argument) naming the first bad setting.
  explicit any_eviction(const eviction_spec& spec, std::string table = {})
      : evict_(make(spec)), table_(std::move(table)) {}
  /// Holds @p evict.
  template <class E>
  requires std::is_constructible_v<variant_type, E> &&
      (!std::is_same_v<std::remove_cvref_t<E>, any_eviction>)explicit any_eviction(E evict, std::string table = {})
      : evict_(std::move(evict)), table_(std::move(table)) {}

  /// @returns the held policy's rank of a row with @p stats.
  /// @throws dsgd::error (errc::invalid_argument) when the policy is none: the table is full.
  eviction_rank rank(const row_stats& stats) const {
    if (std::holds_alternative<eviction::none>(evict_)) [[unlikely]]
      full();
    return std::visit([&](const auto& e) { return e.rank(stats); }, evict_);
  }
  /// @returns whether the held policy's sweep at @p step removes a row with @p stats.
  bool expired(const row_stats& stats, std::uint64_t step) const {
    return std::visit([&](const auto& e) { return e.expired(stats, step); }, evict_);
  }
  /// @returns whether the held policy evicts (false for eviction::none).
  bool evicts_rows() const noexcept {
    return std::visit([](const auto& e) { return static_cast<bool>(e.evicts); }, evict_);
  }

  /// @returns the spec of the held policy.
  eviction_spec spec() const {
    return std::visit([](const auto& e) { return eviction_spec::of(e); }, evict_);
  }
  /// @returns the held policy if it is an @p E, else nullptr.
  template <class E>
  const E* get_if() const noexcept {
    return std::get_if<E>(&evict_);
  }

 private:
  static variant_type make(const eviction_spec& spec) {
    spec.validate();
    using kind = eviction_spec::kind;
    switch (spec.eviction) {
      case kind::by_age:
        return eviction::by_age{.max_age = spec.max_age};
      case kind::least_frequent:
        return eviction::least_frequent{.min_uses = spec.min_uses, .max_age = spec.max_age};
      case kind::none:
        break;
    }
    return eviction::none{};
  }

  [[noreturn]] void full() const {
    throw error(errc::invalid_argument, (table_.empty() ? std::string("an embedding table") : table_) +
                                            ": the table is full (at its cap) and its eviction policy is none: "
                                            "raise max_rows or max_bytes, or choose an eviction policy");
  }

  variant_type evict_;
  std::string table_;  // named in the error of a full table under eviction::none
};

static_assert(EvictionPolicy<any_eviction>);

}  // namespace dsgd::embedding
