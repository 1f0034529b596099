// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// placement::hash_keys: which ps task holds a dynamic embedding table's key (the KeyPlacement
/// concept), by a hash of the key.
#pragma once

#include <dsgd/detail/mix64.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>

namespace dsgd {

/// A KeyPlacement @p P routes each key of a dynamic embedding table to one of @p ps_tasks ps
/// tasks: `p.task_of(key, ps_tasks)`, a pure function of the key and the count (every worker,
/// and a checkpoint restored onto another number of ps tasks, routes a key the same way).
template <class P>
concept KeyPlacement = std::copy_constructible<P> && requires(const P& p, std::uint64_t key, std::size_t ps_tasks) {
  { p.task_of(key, ps_tasks) } -> std::convertible_to<std::size_t>;
};

namespace placement {

/// The default KeyPlacement: task `mix64(key) mod ps_tasks`, mix64 the splitmix64 finaliser (a
/// bijection of 64-bit words), so that sequential ids and ids sharing low bits spread evenly.
struct hash_keys {
  /// @returns the ps task of @p key among @p ps_tasks (> 0).
  static constexpr std::size_t task_of(std::uint64_t key, std::size_t ps_tasks) noexcept {
    return static_cast<std::size_t>(dsgd::detail::mix64(key) % ps_tasks);
  }
};

}  // namespace placement
}  // namespace dsgd
