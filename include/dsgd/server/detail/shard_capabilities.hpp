// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// What a ps task asks of a rule's shard beyond the UpdateRule concept, where the shard offers
/// it: lending its values for a pull reply, applying a push chunk by chunk, being told of a
/// worker's departure.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/update/concepts.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>

namespace dsgd::server {

/// A shard that can lend its current values for a pull reply without a copy (try_pin(), as
/// the shards of the built-in rules do); other rules' pulls go through a snapshot copy.
template <class S>
concept pins_values = requires(S& s) {
  { s.try_pin(std::size_t{0}, std::uint64_t{0})->values->data() } -> std::convertible_to<const float*>;
  { s.try_pin(std::size_t{0}, std::uint64_t{0})->step } -> std::convertible_to<std::uint64_t>;
};

/// A shard that applies a push chunk by chunk as it arrives (push_chunk, then push_streamed
/// with the whole gradient), as the async and bounded-staleness shards do for optimizers with
/// an update::chunked_apply; other shards apply a push once it is complete.
template <class S>
concept streams_pushes = requires(S& s, const float* g, update::clock_type::time_point t) {
  { s.push_chunk(std::size_t{0}, std::size_t{0}, std::size_t{0}, g) } -> std::same_as<bool>;
  { s.push_streamed(std::size_t{0}, std::uint64_t{0}, g, t) } -> std::same_as<update::push_outcome>;
};

/// A shard that is told when a worker's connection is lost and when it registers again
/// (update::sync_average, whose backups then stand in for a dead worker).
template <class S>
concept tracks_departures = requires(S& s) {
  s.depart(std::size_t{0});
  s.rejoin(std::size_t{0});
};

}  // namespace dsgd::server
