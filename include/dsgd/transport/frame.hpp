// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The wire frame header: 72 bytes, little-endian, checksummed, validated against configured
/// caps before any payload byte is read or any buffer allocated. The byte table is in
/// docs/transport.md.
#pragma once

#include <dsgd/detail/crc32c.hpp>
#include <dsgd/error.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <utility>

namespace dsgd::transport {

// The checksum of headers and payloads (a neutral helper, shared with the checkpoint files).
using dsgd::detail::crc32c;
using dsgd::detail::crc32c_extend;

/// The wire protocol version this build speaks (frame header and handshake).
inline constexpr std::uint16_t protocol_version = 2;

/// Size of an encoded frame header in bytes.
inline constexpr std::size_t frame_header_size = 72;

/// The four bytes every frame header starts with.
inline constexpr std::array<std::byte, 4> frame_magic{std::byte{'D'}, std::byte{'S'}, std::byte{'G'}, std::byte{'D'}};

/// Bits of frame_header::flags.
namespace frame_flags {
/// payload_crc holds the CRC-32C of this frame's payload and the receiver checks it.
inline constexpr std::uint32_t payload_crc = 1u << 0;
/// The payload is a serialized control message (Boost.Serialization), not raw tensor bytes:
/// it is never chunked and is capped by limits::max_control_bytes.
inline constexpr std::uint32_t control = 1u << 1;
/// The payload is not on the socket: it is the next payload_length bytes of the sender's
/// shared-memory ring (tcp_options::shared_memory). Set by the transport only.
inline constexpr std::uint32_t shared_memory = 1u << 2;
/// Every flag this version knows; a frame with any other bit set is rejected.
inline constexpr std::uint32_t known = payload_crc | control | shared_memory;
}  // namespace frame_flags

/// Caps a receiver enforces on every header before it reads or allocates anything.
struct limits {
  /// Most payload bytes one frame may carry.
  std::uint64_t max_payload_bytes = 1ull << 30;
  /// Most bytes of one chunked message (frame_header::total_length).
  std::uint64_t max_total_bytes = 1ull << 34;
  /// Most bytes of a control (serialized) payload.
  std::uint64_t max_control_bytes = 1ull << 20;
};

/// The decoded fields of a frame header. The meaning of type, request_id, variable, shard and
/// step belongs to the layer above (the parameter server); the transport only carries them.
struct frame_header {
  std::uint16_t version = protocol_version;  ///< wire protocol version
  std::uint16_t type = 0;                    ///< message type, chosen by the layer above
  std::uint32_t flags = 0;                   ///< frame_flags bits
  std::uint32_t variable = 0;                ///< variable id
  std::uint32_t shard = 0;                   ///< shard of the variable
  std::uint32_t payload_crc = 0;             ///< CRC-32C of the payload if flags say so
  std::uint64_t request_id = 0;              ///< matches a reply to its request
  std::uint64_t step = 0;                    ///< global step the payload belongs to
  std::uint64_t payload_length = 0;          ///< bytes of payload after this header
  std::uint64_t chunk_offset = 0;            ///< byte offset of this payload in the message
  std::uint64_t total_length = 0;            ///< bytes of the whole (possibly chunked) message

  /// @returns true when this frame carries the last bytes of its message.
  constexpr bool last_chunk() const noexcept { return chunk_offset + payload_length == total_length; }

  friend constexpr bool operator==(const frame_header&, const frame_header&) = default;
};

/// An encoded frame header, ready to be the first buffer of a gather write.
using frame_header_bytes = std::array<std::byte, frame_header_size>;

/// Byte offsets of the header fields (docs/transport.md has the same table).
namespace frame_offsets {
inline constexpr std::size_t magic = 0, version = 4, type = 6, flags = 8, variable = 12, shard = 16, payload_crc = 20,
                             request_id = 24, step = 32, payload_length = 40, chunk_offset = 48, total_length = 56,
                             reserved = 64, header_crc = 68;
}  // namespace frame_offsets

namespace detail {

template <class U>
constexpr void store_le(std::byte* out, U v) noexcept {
  for (std::size_t i = 0; i < sizeof(U); ++i) out[i] = static_cast<std::byte>((v >> (8 * i)) & 0xFFu);
}

template <class U>
constexpr U load_le(const std::byte* in) noexcept {
  U v = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i) v |= static_cast<U>(std::to_integer<U>(in[i]) << (8 * i));
  return v;
}

}  // namespace detail

/// Encodes @p h, computing the header CRC. Does not validate: see check_frame_header().
inline frame_header_bytes encode(const frame_header& h) noexcept {
  namespace o = frame_offsets;
  frame_header_bytes b{};
  for (std::size_t i = 0; i < 4; ++i) b[i] = frame_magic[i];
  detail::store_le(b.data() + o::version, h.version);
  detail::store_le(b.data() + o::type, h.type);
  detail::store_le(b.data() + o::flags, h.flags);
  detail::store_le(b.data() + o::variable, h.variable);
  detail::store_le(b.data() + o::shard, h.shard);
  detail::store_le(b.data() + o::payload_crc, h.payload_crc);
  detail::store_le(b.data() + o::request_id, h.request_id);
  detail::store_le(b.data() + o::step, h.step);
  detail::store_le(b.data() + o::payload_length, h.payload_length);
  detail::store_le(b.data() + o::chunk_offset, h.chunk_offset);
  detail::store_le(b.data() + o::total_length, h.total_length);
  detail::store_le(b.data() + o::reserved, std::uint32_t{0});
  detail::store_le(b.data() + o::header_crc, crc32c(std::span<const std::byte>(b.data(), o::header_crc)));
  return b;
}

/// Checks the fields of a header against this version's rules and @p caps.
/// @returns an empty error_code, or errc::bad_frame with @p reason naming the field and values
inline error_code check_frame_header(const frame_header& h, const limits& caps, std::string& reason) {
  auto fail = [&](std::string why) {
    reason = std::move(why);
    return make_error_code(errc::bad_frame);
  };
  if (h.version != protocol_version)
    return fail("unsupported protocol version " + std::to_string(h.version) + " (this side speaks " +
                std::to_string(protocol_version) + ")");
  if ((h.flags & ~frame_flags::known) != 0)
    return fail("unknown flags 0x" + [&] {
      char buf[16];
      std::snprintf(buf, sizeof buf, "%x", h.flags & ~frame_flags::known);
      return std::string(buf);
    }());
  if (h.payload_length > caps.max_payload_bytes)
    return fail("payload length " + std::to_string(h.payload_length) + " exceeds the cap of " +
                std::to_string(caps.max_payload_bytes) + " bytes");
  if (h.total_length > caps.max_total_bytes)
    return fail("message length " + std::to_string(h.total_length) + " exceeds the cap of " +
                std::to_string(caps.max_total_bytes) + " bytes");
  // Written as a subtraction so that a huge chunk_offset cannot overflow into a small sum.
  if (h.payload_length > h.total_length || h.chunk_offset > h.total_length - h.payload_length)
    return fail("chunk [" + std::to_string(h.chunk_offset) + ", +" + std::to_string(h.payload_length) +
                ") lies outside a message of " + std::to_string(h.total_length) + " bytes");
  if ((h.flags & frame_flags::control) != 0) {
    if (h.total_length > caps.max_control_bytes)
      return fail("control payload of " + std::to_string(h.total_length) + " bytes exceeds the cap of " +
                  std::to_string(caps.max_control_bytes));
    if (h.chunk_offset != 0 || h.payload_length != h.total_length) return fail("control payloads cannot be chunked");
    if ((h.flags & frame_flags::shared_memory) != 0) return fail("control payloads never travel through shared memory");
  }
  return {};
}

/// Decodes and validates a received header: magic, version, header CRC, reserved bits, flags,
/// then every length against @p caps.
/// @param in the frame_header_size bytes as received
/// @param out the decoded header (meaningful only on success)
/// @param reason on failure, what was wrong, naming the field and values
/// @returns an empty error_code, or errc::bad_frame
inline error_code decode(std::span<const std::byte, frame_header_size> in, const limits& caps, frame_header& out,
                         std::string& reason) {
  namespace o = frame_offsets;
  auto fail = [&](std::string why) {
    reason = std::move(why);
    return make_error_code(errc::bad_frame);
  };
  for (std::size_t i = 0; i < 4; ++i)
    if (in[i] != frame_magic[i]) return fail("bad magic (not a dsgd frame)");
  // Version before CRC: a peer from a future version gets told so, not "corrupt header".
  out.version = detail::load_le<std::uint16_t>(in.data() + o::version);
  if (out.version != protocol_version)
    return fail("unsupported protocol version " + std::to_string(out.version) + " (this side speaks " +
                std::to_string(protocol_version) + ")");
  const auto stored = detail::load_le<std::uint32_t>(in.data() + o::header_crc);
  const auto actual = crc32c(in.first(o::header_crc));
  if (stored != actual) return fail("header checksum mismatch");
  if (detail::load_le<std::uint32_t>(in.data() + o::reserved) != 0) return fail("reserved header bytes are not zero");
  out.type = detail::load_le<std::uint16_t>(in.data() + o::type);
  out.flags = detail::load_le<std::uint32_t>(in.data() + o::flags);
  out.variable = detail::load_le<std::uint32_t>(in.data() + o::variable);
  out.shard = detail::load_le<std::uint32_t>(in.data() + o::shard);
  out.payload_crc = detail::load_le<std::uint32_t>(in.data() + o::payload_crc);
  out.request_id = detail::load_le<std::uint64_t>(in.data() + o::request_id);
  out.step = detail::load_le<std::uint64_t>(in.data() + o::step);
  out.payload_length = detail::load_le<std::uint64_t>(in.data() + o::payload_length);
  out.chunk_offset = detail::load_le<std::uint64_t>(in.data() + o::chunk_offset);
  out.total_length = detail::load_le<std::uint64_t>(in.data() + o::total_length);
  return check_frame_header(out, caps, reason);
}

/// Throwing form of decode().
/// @throws dsgd::error with errc::bad_frame and the reason
inline frame_header decode(std::span<const std::byte, frame_header_size> in, const limits& caps = {}) {
  frame_header h;
  std::string reason;
  if (auto ec = decode(in, caps, h, reason)) throw error(ec, "frame header: " + reason);
  return h;
}

}  // namespace dsgd::transport
