// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// A shard_table's replies: the header answering a request, and a pull's reply from one shard,
/// dense or by rows (the frame and the bytes it sends, kept alive until written, or nothing
/// while the update rule makes the reader wait).
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/reply_sink.hpp>
#include <dsgd/transport/frame.hpp>
#include <dsgd/update/concepts.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dsgd::server::detail {

/// The header of a reply of @p type to @p request: its request id, variable, shard and step.
inline transport::frame_header reply_header(const transport::frame_header& request, protocol::message type) {
  transport::frame_header h;
  h.type = static_cast<std::uint16_t>(type);
  h.request_id = request.request_id;
  h.variable = request.variable;
  h.shard = request.shard;
  h.step = request.step;
  return h;
}

/// @returns the shard a pull of @p h asks for, among @p shards (by @p key) of ps task @p self.
/// @throws dsgd::error errc::not_found naming the shard when @p self does not hold it
template <class Shards>
auto& pulled_shard(Shards& shards, std::uint64_t key, const transport::frame_header& h, const std::string& self) {
  auto it = shards.find(key);
  if (it == shards.end())
    throw error(errc::not_found, "pull of variable " + std::to_string(h.variable) + " shard " +
                                     std::to_string(h.shard) + ", which " + self + " does not hold");
  return *it->second;
}

/// The reply to a pull of @p shard by @p replica at @p step, under @p header (a pull_reply
/// header of the request), or nullopt while the rule makes @p replica wait.
template <class Shard>
std::optional<outgoing_reply> pull_reply(Shard& shard, std::size_t replica, std::uint64_t step,
                                         transport::frame_header header) {
  if constexpr (update::pins_values<Shard>) {
    // Written straight from the shard's values; the pin keeps this version unchanged until
    // the write completes (a push landing meanwhile updates a copy).
    auto pinned = shard.try_pin(replica, step);
    if (!pinned) return std::nullopt;
    header.step = pinned->step;
    auto bytes = std::as_bytes(std::span(pinned->values->data(), pinned->values->size()));
    return outgoing_reply{header, bytes, std::move(pinned->values)};
  } else {
    auto snapshot = std::make_shared<std::vector<float>>(shard.size());
    auto at = shard.try_pull(replica, step, snapshot->data());
    if (!at) return std::nullopt;
    header.step = *at;
    auto bytes = std::as_bytes(std::span(*snapshot));
    return outgoing_reply{header, bytes, std::move(snapshot)};
  }
}

/// The reply to a sparse_pull of @p rows (local to @p shard, @p dim floats each) by @p replica
/// at @p step, under @p header, or nullopt while the rule makes @p replica wait.
template <class Shard>
std::optional<outgoing_reply> rows_reply(Shard& shard, std::size_t replica, std::uint64_t step,
                                         const std::vector<std::uint64_t>& rows, std::size_t dim,
                                         transport::frame_header header) {
  if (!shard.wait_reason(replica, step).empty()) return std::nullopt;
  auto out = std::make_shared<std::vector<float>>(rows.size() * dim);
  auto at = shard.try_pull_rows(replica, step, rows, dim, out->data());
  if (!at) return std::nullopt;
  header.step = *at;
  auto bytes = std::as_bytes(std::span(*out));
  return outgoing_reply{header, bytes, std::move(out)};
}

}  // namespace dsgd::server::detail
