// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// What a shard_table keeps per connection (table_peer): who it is, its registration, and the
/// buffers its payloads are received into, with the checks that place a chunk in one.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/reply_sink.hpp>
#include <dsgd/transport/frame.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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

/// Sets @p ec to errc::bad_frame (the owner closes the connection). @returns no bytes.
inline std::span<std::byte> bad_frame(error_code& ec) {
  ec = make_error_code(errc::bad_frame);
  return {};
}

/// @returns the part of @p whole the chunk @p h fills (transport::chunk_destination, without
/// Asio), or bad_frame() when h's lengths do not fit it.
inline std::span<std::byte> chunk_of(std::span<std::byte> whole, const transport::frame_header& h, error_code& ec) {
  if (h.total_length != whole.size() || h.payload_length > whole.size() ||
      h.chunk_offset > whole.size() - h.payload_length)
    return bad_frame(ec);
  return whole.subspan(static_cast<std::size_t>(h.chunk_offset), static_cast<std::size_t>(h.payload_length));
}

/// @returns the control payload @p s received, as the bytes decode_control reads.
inline std::string_view control_bytes(const table_peer& s) {
  return {reinterpret_cast<const char*>(s.control.data()), s.control.size()};
}

/// Where a chunk of a keyed request (sparse_pull, sparse_push, table_pull, table_push) goes: on
/// its first chunk @p check(s) sizes the request's buffer, or throws a dsgd::error, which marks
/// the request rejected (kept for its last chunk to answer) and sends its chunks to scratch;
/// else the chunk's part of @p whole(s), the request's buffer.
template <class Check, class Whole>
std::span<std::byte> keyed_chunk(table_peer& s, const transport::frame_header& h, error_code& ec, Check&& check,
                                 Whole&& whole) {
  if (h.chunk_offset == 0) {
    s.rejected.reset();
    try {
      check(s);
    } catch (const dsgd::error& e) {
      s.rejected.emplace(e.code(), e.what());
    }
  }
  if (s.rejected) {
    s.discard.resize(h.payload_length);
    return std::span(s.discard);
  }
  return chunk_of(whole(s), h, ec);
}

/// Throws the error a rejected sparse request of @p s was kept for (its last chunk has come).
inline void throw_if_rejected(table_peer& s) {
  if (!s.rejected) return;
  auto r = std::move(*s.rejected);
  s.rejected.reset();
  throw error(r.first, r.second);
}

}  // namespace dsgd::server::detail
