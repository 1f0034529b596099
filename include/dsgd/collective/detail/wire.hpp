// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The frames of a collective between workers: which part of which collective a frame carries,
/// written into the transport's frame header, and the check a receiver makes before it reads
/// a byte of the payload (the table is in docs/transport.md, "Collective frames").
#pragma once

#include <dsgd/transport/frame.hpp>

#include <cstdint>
#include <string>

namespace dsgd::collective::detail {

/// The collective a frame belongs to.
enum class phase : std::uint16_t {
  reduce_scatter = 1,  ///< a partial sum of one segment, added into the receiver's
  all_gather = 2,      ///< a finished segment, copied into the receiver's
  broadcast = 3,       ///< the root's whole buffer, forwarded along the ring
};

/// frame_header::type of collective frames: 0x100 | phase. The ps protocol's messages are all
/// below 0x100, so a frame of one never passes for one of the other.
inline constexpr std::uint16_t type_base = 0x100;

/// What a receiver expects next from its predecessor in the ring: both ends count the same
/// collectives (call), so a frame of another one, another round or another size is a desync.
struct expected_frame {
  phase kind = phase::reduce_scatter;
  std::uint64_t call = 0;     ///< the collective's number on this ring, from 1
  std::uint64_t step = 0;     ///< the training step it is for (the caller's)
  std::uint32_t round = 0;    ///< the round within the collective (0 .. ranks - 2)
  std::uint32_t segment = 0;  ///< the segment it carries
  std::uint64_t bytes = 0;    ///< the segment's size in bytes
};

/// @returns the header a sender writes for @p e (the transport fills the lengths).
inline transport::frame_header header_of(const expected_frame& e) {
  transport::frame_header h;
  h.type = static_cast<std::uint16_t>(type_base | static_cast<std::uint16_t>(e.kind));
  h.request_id = e.call;
  h.step = e.step;
  h.shard = e.round;
  h.variable = e.segment;
  return h;
}

/// @returns "" when @p h is the next frame of the message @p e describes, @p received of its
/// bytes in already (a message's chunks arrive in order), else what differs, naming the field
/// and both values.
inline std::string mismatch(const transport::frame_header& h, const expected_frame& e, std::uint64_t received) {
  auto differs = [](const char* what, std::uint64_t got, std::uint64_t want) {
    return std::string(what) + " " + std::to_string(got) + " where " + std::to_string(want) + " was expected";
  };
  const auto want_type = static_cast<std::uint16_t>(type_base | static_cast<std::uint16_t>(e.kind));
  if (h.type != want_type) return differs("frame type", h.type, want_type);
  if ((h.flags & transport::frame_flags::control) != 0) return "a control frame where tensor bytes were expected";
  if (h.request_id != e.call) return differs("collective call", h.request_id, e.call);
  if (h.step != e.step) return differs("step", h.step, e.step);
  if (h.shard != e.round) return differs("round", h.shard, e.round);
  if (h.variable != e.segment) return differs("segment", h.variable, e.segment);
  if (h.total_length != e.bytes)
    return "a segment of " + std::to_string(h.total_length) + " bytes where one of " + std::to_string(e.bytes) +
           " was expected";
  if (h.payload_length > h.total_length || h.chunk_offset > h.total_length - h.payload_length)
    return "chunk at byte " + std::to_string(h.chunk_offset) + " of " + std::to_string(h.payload_length) +
           " bytes lies outside a message of " + std::to_string(h.total_length) + " bytes";
  if (h.chunk_offset != received) return differs("chunk offset", h.chunk_offset, received);
  if (h.payload_length == 0 && h.total_length != 0) return "an empty chunk of a message that is not empty";
  return {};
}

/// A receiver's progress through one expected message, frame by frame: what the ring's
/// receive loop runs, so that every frame is checked before its payload is read.
class incoming {
 public:
  explicit incoming(const expected_frame& e = {}) : want_(e) {}

  /// @returns "" when @p h is the next frame of the message, its payload going to bytes
  /// [h.chunk_offset, h.chunk_offset + h.payload_length) of it, all within expected().bytes;
  /// else what is wrong with it (mismatch()).
  std::string accept(const transport::frame_header& h) const { return mismatch(h, want_, received_); }
  /// Records that accepted frame @p h's payload arrived. @returns whether the message is whole.
  bool arrived(const transport::frame_header& h) noexcept {
    received_ += h.payload_length;
    return h.last_chunk();
  }
  /// @returns the message's bytes in so far.
  std::uint64_t received() const noexcept { return received_; }
  const expected_frame& expected() const noexcept { return want_; }

 private:
  expected_frame want_;
  std::uint64_t received_ = 0;
};

/// @returns the phase's name, for errors.
inline const char* name_of(phase p) {
  switch (p) {
    case phase::reduce_scatter:
      return "reduce-scatter";
    case phase::all_gather:
      return "all-gather";
    case phase::broadcast:
      return "broadcast";
  }
  return "collective";
}

}  // namespace dsgd::collective::detail
