// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Fuzz target for <dsgd/collective/detail/wire.hpp>: the frames a ring member receives from its
// predecessor, checked by collective::detail::incoming as collective::ring's receive loop does,
// each accepted payload written where the ring writes it and, in a reduce-scatter, added in.
//
// Input: the expected message (phase, call, step, round, segment: 1 + 8 + 8 + 4 + 4 bytes; its
// size in floats: 2 bytes, taken modulo 4097), one option byte, then frame headers of 72 bytes each
// (at most 64). Option bit 0 rewrites each header's checksum so that inputs get past it to the
// field checks; bit 1 rewrites its type, call, step, round and segment to the expected ones, so
// that inputs reach the chunk arithmetic.
#include "fuzz_support.hpp"

#include <dsgd/collective/detail/wire.hpp>
#include <dsgd/transport/frame.hpp>

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace c = dsgd::collective::detail;
namespace t = dsgd::transport;

namespace {

c::expected_frame read_expected(dsgd::fuzz::input_reader& in) {
  c::expected_frame e;
  e.kind = static_cast<c::phase>(1 + in.byte() % 3);
  e.call = in.le<std::uint64_t>();
  e.step = in.le<std::uint64_t>();
  e.round = in.le<std::uint32_t>();
  e.segment = in.le<std::uint32_t>();
  // The receiver's own buffers, not what a peer sent: kept small (the allocation tracker's bound).
  e.bytes = std::uint64_t{in.le<std::uint16_t>() % 4097u} * sizeof(float);
  return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using dsgd::fuzz::check;
  dsgd::fuzz::input_scope scope({data, size});
  dsgd::fuzz::input_reader in({data, size});
  const auto expected = read_expected(in);
  const auto options = in.byte();
  const bool add = expected.kind == c::phase::reduce_scatter;
  // The receiver's buffers: the segment (exactly its size: a write past it is a sanitizer
  // report) and, in a reduce-scatter, the scratch the partial sums land in.
  std::vector<float> segment(expected.bytes / sizeof(float), 1.f), scratch(segment.size(), 0.f);
  c::incoming message(expected);
  std::size_t added = 0;
  for (int frame = 0; frame < 64 && in.remaining() > 0; ++frame) {
    t::frame_header_bytes raw{};
    const auto header = in.bytes(t::frame_header_size);
    std::copy(header.begin(), header.end(), raw.begin());
    if (options & 2) {
      const auto want = c::header_of(expected);
      t::detail::store_le(raw.data() + t::frame_offsets::type, want.type);
      t::detail::store_le(raw.data() + t::frame_offsets::request_id, want.request_id);
      t::detail::store_le(raw.data() + t::frame_offsets::step, want.step);
      t::detail::store_le(raw.data() + t::frame_offsets::shard, want.shard);
      t::detail::store_le(raw.data() + t::frame_offsets::variable, want.variable);
    }
    if (options & 1) {
      const auto crc = t::crc32c(std::span<const std::byte>(raw.data(), t::frame_offsets::header_crc));
      t::detail::store_le(raw.data() + t::frame_offsets::header_crc, crc);
    }
    t::frame_header h;
    std::string reason;
    if (t::decode(raw, {}, h, reason)) break;  // the transport closes the connection first
    const std::string why = message.accept(h);
    if (!why.empty()) break;  // the ring fails the collective, naming why
    check(h.chunk_offset == message.received(), "accepted a chunk out of order");
    check(h.chunk_offset + h.payload_length <= expected.bytes, "accepted a chunk past the segment");
    auto* base = reinterpret_cast<char*>(add ? scratch.data() : segment.data());
    if (h.payload_length > 0) std::memset(base + h.chunk_offset, 0x3f, static_cast<std::size_t>(h.payload_length));
    const bool whole = message.arrived(h);
    if (add) {
      const std::size_t upto = static_cast<std::size_t>(message.received() / sizeof(float));
      check(upto <= segment.size(), "added past the segment");
      for (std::size_t e = added; e < upto; ++e) segment[e] += scratch[e];
      added = upto;
    }
    if (whole) {
      check(message.received() == expected.bytes, "a message ended short of its size");
      break;
    }
  }
  return 0;
}

std::vector<std::string> dsgd::fuzz::seeds() {
  std::vector<std::string> out;
  auto input = [](c::phase kind, std::uint16_t floats, std::uint8_t options,
                  const std::vector<t::frame_header>& frames) {
    std::string s(1, static_cast<char>(static_cast<int>(kind) - 1));
    auto put = [&s](auto v) {
      for (std::size_t i = 0; i < sizeof(v); ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    };
    put(std::uint64_t{3});  // call
    put(std::uint64_t{7});  // step
    put(std::uint32_t{1});  // round
    put(std::uint32_t{2});  // segment
    put(floats);
    s.push_back(static_cast<char>(options));
    for (const auto& f : frames) s += as_string(t::encode(f));
    return s;
  };
  auto frame = [](c::phase kind, std::uint64_t offset, std::uint64_t length, std::uint64_t total) {
    auto h = c::header_of({kind, 3, 7, 1, 2, total});
    h.chunk_offset = offset;
    h.payload_length = length;
    h.total_length = total;
    return h;
  };
  // A reduce-scatter segment of 10 floats in one frame, in chunks of 30 bytes (cutting floats),
  // an all-gather's, an empty segment, and frames of another step and of another size.
  out.push_back(input(c::phase::reduce_scatter, 10, 0, {frame(c::phase::reduce_scatter, 0, 40, 40)}));
  out.push_back(input(c::phase::reduce_scatter, 10, 0,
                      {frame(c::phase::reduce_scatter, 0, 30, 40), frame(c::phase::reduce_scatter, 30, 10, 40)}));
  out.push_back(input(c::phase::all_gather, 10, 0, {frame(c::phase::all_gather, 0, 40, 40)}));
  out.push_back(input(c::phase::broadcast, 0, 0, {frame(c::phase::broadcast, 0, 0, 0)}));
  auto other_step = frame(c::phase::all_gather, 0, 40, 40);
  other_step.step = 8;
  out.push_back(input(c::phase::all_gather, 10, 0, {other_step}));
  out.push_back(input(c::phase::reduce_scatter, 10, 2, {frame(c::phase::reduce_scatter, 0, 44, 44)}));
  out.push_back(input(c::phase::reduce_scatter, 10, 2,
                      {frame(c::phase::reduce_scatter, 0, 30, 40), frame(c::phase::reduce_scatter, 20, 20, 40)}));
  return out;
}
