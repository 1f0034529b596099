// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// What a shard_table keeps per connection (table_peer) and per request it parks
/// (parked_request).
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/reply_sink.hpp>
#include <dsgd/transport/frame.hpp>
#include <dsgd/update/concepts.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dsgd::server::detail {

/// One connection: who it is, its registration, and the payloads it sends, received in place.
struct table_peer {
  std::string identity;
  bool shared_memory = false;  ///< payloads come through a shared-memory ring
  std::size_t replica = 0;
  bool registered = false;
  bool chief = false;
  std::uint64_t generation = 0;           ///< the table's generation when this peer registered
  std::optional<protocol::message> kind;  ///< of the frame being received, decoded once by destination()
  std::vector<std::byte> control;
  std::vector<float> incoming;            ///< init_shard values or a pushed gradient
  std::vector<std::uint32_t> compressed;  ///< a compressed push's payload (4-byte aligned)
  bool streaming = false;                 ///< the push arriving in `incoming` is applied chunk by chunk
  std::vector<std::uint64_t> keys_in;     ///< a sparse_pull's keys
  std::vector<float> sparse_in;           ///< a sparse_push's keys then rows
  std::size_t sparse_keys = 0;            ///< keys in sparse_in
  std::vector<std::byte> discard;         ///< a chunk of a rejected sparse request
  std::optional<std::pair<error_code, std::string>> rejected;  ///< why, answered at its last chunk
};

/// A request the rule makes wait, until a push, a finish or its deadline.
struct parked_request {
  peer_id from;
  protocol::message kind;
  transport::frame_header request;
  update::clock_type::time_point deadline;
  std::vector<std::uint64_t> rows;  ///< a sparse_pull's rows, local to the shard
};

}  // namespace dsgd::server::detail
