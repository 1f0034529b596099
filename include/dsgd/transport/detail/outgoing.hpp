// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// What both transports do alike with a message: the type-erased receive sink (erased per
/// message, never per byte), the send queue's backpressure, and the header of a message's first
/// frame, checked against the caps the peer applies.
// IWYU pragma: private, include <dsgd/transport/asio_tcp.hpp>
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/transport/frame.hpp>
#include <dsgd/transport/tcp_options.hpp>

#include <boost/asio/buffer.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

namespace dsgd::transport::detail {

/// A ReceiveSink behind one virtual call per frame.
struct erased_sink {
  virtual ~erased_sink() = default;
  virtual boost::asio::mutable_buffer destination(const frame_header& h, error_code& ec) = 0;
};
template <class Sink>
struct sink_for final : erased_sink {
  explicit sink_for(Sink s) : sink(std::move(s)) {}
  boost::asio::mutable_buffer destination(const frame_header& h, error_code& ec) override { return sink(h, ec); }
  Sink sink;
};

/// True when one more message of @p bytes would pass the send queue's caps (a single message
/// always fits an empty queue).
inline bool send_queue_full(std::size_t queued, std::uint64_t queued_bytes, std::uint64_t bytes,
                            const tcp_options& o) noexcept {
  return queued > 0 && (queued >= o.max_queued_sends || queued_bytes + bytes > o.max_queued_bytes);
}

/// Fills the header of a message of @p total payload bytes for its first frame (version, total,
/// offset 0, the first chunk's length; control messages are never chunked) with the CRC and
/// ring flags cleared for the transport to set, and refuses a message the peer would reject
/// with the same reason. @returns errc::invalid_argument with @p why set, or nothing.
inline error_code prepare_first_frame(frame_header& header, std::uint64_t total, const tcp_options& o,
                                      std::string& why) {
  header.version = protocol_version;
  header.total_length = total;
  header.chunk_offset = 0;
  header.payload_length =
      (header.flags & frame_flags::control) != 0 ? total : std::min<std::uint64_t>(total, o.chunk_bytes);
  header.flags &= ~(frame_flags::payload_crc | frame_flags::shared_memory);
  if (o.chunk_bytes == 0) {
    why = "chunk_bytes is 0";
    return make_error_code(errc::invalid_argument);
  }
  if (check_frame_header(header, o.caps, why)) return make_error_code(errc::invalid_argument);
  return {};
}

}  // namespace dsgd::transport::detail
