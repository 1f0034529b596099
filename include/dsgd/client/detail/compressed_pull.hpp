// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The worker's side of compressed pull replies (values ps -> worker as fp16 or bf16): where a
/// reply's bytes go (the back half of the destination, sized by the shard, so that no reply
/// can be longer), and the widening of the 16-bit values into the destination's floats in
/// place, with no buffer of its own. push_encoder.hpp makes the requests.
// IWYU pragma: private, include <dsgd/client/ps_client.hpp>
#pragma once

#include <dsgd/client/detail/request_table.hpp>
#include <dsgd/compress/detail/bytes.hpp>
#include <dsgd/compress/selection.hpp>
#include <dsgd/error.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/transport/concepts.hpp>

#include <boost/asio/buffer.hpp>

#include <cstddef>
#include <cstdint>

namespace dsgd::client::detail {

/// Where a pull reply's chunk @p h goes for a request awaiting it in @p slot: a plain reply
/// into the floats, a compressed one into their back half (2 bytes per float, checked against
/// the destination's size before a byte is read, so no reply can be longer than its shard).
/// A reply of the other kind than the request asked for is a bad frame.
inline boost::asio::mutable_buffer pull_destination(const request_slot& slot, protocol::message type,
                                                    const transport::frame_header& h, error_code& ec) {
  const bool compressed = type == protocol::message::compressed_pull_reply;
  if (compressed != (slot.reply_encoding != compress::value_encoding::none)) {
    ec = make_error_code(errc::bad_frame);
    return {};
  }
  if (!compressed) return transport::chunk_destination(slot.reply_into, h, ec);
  const std::size_t floats = slot.reply_into.size() / sizeof(float);
  auto* base = static_cast<std::byte*>(slot.reply_into.data());
  return transport::chunk_destination(boost::asio::buffer(base + 2 * floats, 2 * floats), h, ec);
}

/// Widens the 16-bit values a compressed pull reply left in the back half of @p slot's
/// destination into its floats, in place. Float i overwrites the bytes of values up to 2i+1-n,
/// all at or below i and read already, so one forward pass needs no second buffer.
inline void widen_pull_reply(const request_slot& slot) {
  const std::size_t n = slot.reply_into.size() / sizeof(float);
  auto* base = static_cast<std::byte*>(slot.reply_into.data());
  const std::byte* in = base + 2 * n;
  float* out = static_cast<float*>(slot.reply_into.data());
  namespace cd = compress::detail;
  if (slot.reply_encoding == compress::value_encoding::bf16) {
    for (std::size_t i = 0; i < n; ++i) out[i] = cd::from_bf16(cd::load<std::uint16_t>(in + 2 * i));
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = cd::from_fp16(cd::load<std::uint16_t>(in + 2 * i));
  }
}

}  // namespace dsgd::client::detail
