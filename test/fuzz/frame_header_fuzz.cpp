// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Fuzz target for <dsgd/transport/frame.hpp>: decoding and validating a received frame header
// against limits caps.
//
// Input: one option byte, then the 72 header bytes (zero-padded when short), then 24 bytes of
// caps used when the options ask for them. Option bit 0 rewrites the header checksum so that
// inputs get past it to the field checks; bits 1-2 choose the caps (library defaults, small,
// zero, or from the input).
#include "fuzz_support.hpp"

#include <dsgd/transport/frame.hpp>

#include <algorithm>
#include <array>
#include <span>
#include <string>

namespace t = dsgd::transport;

namespace {

t::limits caps_for(std::uint8_t options, dsgd::fuzz::input_reader& in) {
  switch ((options >> 1) & 3) {
    case 0:
      return {};
    case 1:
      return {.max_payload_bytes = 4096, .max_total_bytes = 1 << 20, .max_control_bytes = 1024};
    case 2:
      return {.max_payload_bytes = 0, .max_total_bytes = 0, .max_control_bytes = 0};
    default: {
      t::limits c;
      c.max_payload_bytes = in.le<std::uint64_t>();
      c.max_total_bytes = in.le<std::uint64_t>();
      c.max_control_bytes = in.le<std::uint64_t>();
      return c;
    }
  }
}

// Everything a successfully decoded header promises the receiver.
void check_accepted(const t::frame_header& h, const t::limits& caps, const t::frame_header_bytes& raw) {
  using dsgd::fuzz::check;
  std::string reason;
  check(!t::check_frame_header(h, caps, reason), "decode accepted a header check_frame_header rejects");
  check(h.version == t::protocol_version, "accepted a foreign version");
  check((h.flags & ~t::frame_flags::known) == 0, "accepted unknown flags");
  check(h.payload_length <= caps.max_payload_bytes, "payload above its cap");
  check(h.total_length <= caps.max_total_bytes, "message above its cap");
  check(h.payload_length <= h.total_length && h.chunk_offset <= h.total_length - h.payload_length,
        "chunk outside its message");
  if (h.flags & t::frame_flags::control)
    check(h.total_length <= caps.max_control_bytes && h.chunk_offset == 0 && h.last_chunk(),
          "chunked or oversized control payload");
  // The header CRC matched and the reserved word is zero, so the bytes are exactly encode(h).
  check(t::encode(h) == raw, "encode(decode(bytes)) differs from bytes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dsgd::fuzz::input_scope scope({data, size});
  dsgd::fuzz::input_reader in({data, size});
  const auto options = in.byte();
  t::frame_header_bytes raw{};
  const auto header = in.bytes(t::frame_header_size);
  std::copy(header.begin(), header.end(), raw.begin());
  const auto caps = caps_for(options, in);
  if (options & 1) {
    const auto crc = t::crc32c(std::span<const std::byte>(raw.data(), t::frame_offsets::header_crc));
    t::detail::store_le(raw.data() + t::frame_offsets::header_crc, crc);
  }

  t::frame_header h;
  std::string reason;
  const auto ec = t::decode(raw, caps, h, reason);
  if (!ec) check_accepted(h, caps, raw);
  else dsgd::fuzz::check(ec == dsgd::errc::bad_frame && !reason.empty(), "rejection without bad_frame and a reason");

  // The throwing form agrees with the error_code form.
  bool threw = false;
  try {
    (void)t::decode(std::span<const std::byte, t::frame_header_size>(raw), caps);
  } catch (const dsgd::error& e) {
    threw = true;
    dsgd::fuzz::check(e.code() == dsgd::errc::bad_frame && std::string(e.what()).find(reason) != std::string::npos,
                      "the throwing decode reports another error");
  }
  dsgd::fuzz::check(threw == static_cast<bool>(ec), "the two forms of decode disagree");

  // Any field values: what encode() writes decodes back to the same header, or is refused for
  // the reason check_frame_header() gives.
  dsgd::fuzz::input_reader fields({data, size});
  fields.byte();
  t::frame_header g;
  g.version = fields.le<std::uint16_t>();
  g.type = fields.le<std::uint16_t>();
  g.flags = fields.le<std::uint32_t>();
  g.variable = fields.le<std::uint32_t>();
  g.shard = fields.le<std::uint32_t>();
  g.payload_crc = fields.le<std::uint32_t>();
  g.request_id = fields.le<std::uint64_t>();
  g.step = fields.le<std::uint64_t>();
  g.payload_length = fields.le<std::uint64_t>();
  g.chunk_offset = fields.le<std::uint64_t>();
  g.total_length = fields.le<std::uint64_t>();
  const auto bytes = t::encode(g);
  t::frame_header back;
  std::string why, expected_why;
  const auto ec2 = t::decode(bytes, caps, back, why);
  const auto expected = t::check_frame_header(g, caps, expected_why);
  dsgd::fuzz::check(static_cast<bool>(ec2) == static_cast<bool>(expected) && why == expected_why,
                    "decode(encode(h)) disagrees with check_frame_header(h)");
  if (!ec2) dsgd::fuzz::check(back == g, "decode(encode(h)) != h");
  return 0;
}

std::vector<std::string> dsgd::fuzz::seeds() {
  std::vector<std::string> out;
  auto add = [&](std::uint8_t options, const t::frame_header& h) {
    out.push_back(std::string(1, static_cast<char>(options)) + as_string(t::encode(h)));
  };
  add(0, {.type = 4, .variable = 7, .shard = 1, .request_id = 42, .step = 100});
  add(0, {.type = 5,
          .flags = t::frame_flags::payload_crc,
          .payload_crc = 0xdeadbeef,
          .payload_length = 4096,
          .chunk_offset = 0,
          .total_length = 4096});
  add(0, {.type = 5,
          .flags = t::frame_flags::payload_crc,
          .payload_length = 1 << 20,
          .chunk_offset = 3 << 20,
          .total_length = 8 << 20});
  add(2, {.type = 1, .flags = t::frame_flags::control, .payload_length = 200, .total_length = 200});
  add(1, {.version = 2, .type = 1});
  add(1, {.flags = 0x80});
  add(4, {.payload_length = 1, .total_length = 1});
  auto custom = std::string(1, '\x07') + as_string(t::encode({.payload_length = 10, .total_length = 20}));
  for (std::uint64_t cap : {std::uint64_t{16}, std::uint64_t{32}, std::uint64_t{8}})
    for (int i = 0; i < 8; ++i) custom.push_back(static_cast<char>((cap >> (8 * i)) & 0xff));
  out.push_back(custom);
  return out;
}
