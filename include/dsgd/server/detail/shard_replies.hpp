// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// A shard_table's replies: the header answering a request, the empty, error and push replies,
/// and a pull's reply from one shard, dense or by rows (the frame and the bytes it sends, kept
/// alive until written, or nothing while the update rule makes the reader wait).
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

/// Answers @p request of peer @p p with an empty reply of @p type through @p out.
template <reply_sink S>
void reply(S& out, peer_id p, const transport::frame_header& request, protocol::message type) {
  out.send(p, {reply_header(request, type), {}, nullptr});
}
/// Answers @p request of peer @p p with an empty reply of @p type at @p step through @p out.
template <reply_sink S>
void reply(S& out, peer_id p, const transport::frame_header& request, protocol::message type, std::uint64_t step) {
  auto h = reply_header(request, type);
  h.step = step;
  out.send(p, {h, {}, nullptr});
}
/// Answers @p request of peer @p p with the error @p ec, @p what through @p out (the
/// connection stays).
template <reply_sink S>
void reply_error(S& out, peer_id p, const transport::frame_header& request, error_code ec, const std::string& what) {
  auto body = std::make_shared<const std::string>(protocol::encode_control(protocol::error_reply{ec.value(), what}));
  auto h = reply_header(request, protocol::message::reply_error);
  h.flags = transport::frame_flags::control;
  auto bytes = std::as_bytes(std::span(body->data(), body->size()));
  out.send(p, {h, bytes, std::move(body)});
}
/// Answers the push @p request of peer @p p with what it did (@p outcome) and the shard's step
/// after it.
template <reply_sink S>
void reply_pushed(S& out, peer_id p, const transport::frame_header& request, update::push_outcome outcome,
                  std::uint64_t step) {
  auto type = outcome == update::push_outcome::applied       ? protocol::message::push_applied
              : outcome == update::push_outcome::accumulated ? protocol::message::push_accumulated
                                                             : protocol::message::push_dropped;
  reply(out, p, request, type, step);
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
