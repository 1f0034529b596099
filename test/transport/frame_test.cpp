// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/transport/frame.hpp>.
#include <dsgd/transport/frame.hpp>

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

BOOST_AUTO_TEST_SUITE(frame_test)

namespace t = dsgd::transport;

static_assert(t::frame_header_size == 72);
static_assert(t::frame_offsets::header_crc + 4 == t::frame_header_size);

namespace {

t::frame_header sample() {
  return t::frame_header{.type = 0x0102,
                         .flags = t::frame_flags::payload_crc,
                         .variable = 0x03040506,
                         .shard = 0x0708090A,
                         .payload_crc = 0x0B0C0D0E,
                         .request_id = 0x1112131415161718ull,
                         .step = 0x2122232425262728ull,
                         .payload_length = 4096,
                         .chunk_offset = 8192,
                         .total_length = 65536};
}

// Rewrites the header CRC after a deliberate change, so that the field check itself is hit.
void reseal(t::frame_header_bytes& b) {
  t::detail::store_le(b.data() + t::frame_offsets::header_crc,
                      t::crc32c(std::span<const std::byte>(b.data(), t::frame_offsets::header_crc)));
}

std::string reject_reason(const t::frame_header_bytes& b, const t::limits& caps = {}) {
  t::frame_header h;
  std::string reason;
  auto ec = t::decode(b, caps, h, reason);
  BOOST_TEST(ec == dsgd::make_error_code(dsgd::errc::bad_frame));
  return reason;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(transport_frame)

BOOST_AUTO_TEST_CASE(encode_then_decode_round_trips_every_field) {
  const auto h = sample();
  const auto bytes = t::encode(h);
  t::frame_header out;
  std::string reason;
  BOOST_TEST(!t::decode(bytes, {}, out, reason));
  BOOST_TEST(reason.empty());
  BOOST_TEST((out == h));
  BOOST_TEST((t::decode(bytes) == h));
}

BOOST_AUTO_TEST_CASE(the_layout_is_little_endian_at_the_documented_offsets) {
  const auto b = t::encode(sample());
  BOOST_TEST(std::to_integer<int>(b[0]) == 'D');
  BOOST_TEST(std::to_integer<int>(b[3]) == 'D');
  BOOST_TEST(std::to_integer<int>(b[t::frame_offsets::version]) == t::protocol_version);
  BOOST_TEST(std::to_integer<int>(b[t::frame_offsets::version + 1]) == 0);
  BOOST_TEST(std::to_integer<int>(b[t::frame_offsets::type]) == 0x02);
  BOOST_TEST(std::to_integer<int>(b[t::frame_offsets::type + 1]) == 0x01);
  BOOST_TEST(std::to_integer<int>(b[t::frame_offsets::request_id]) == 0x18);
  BOOST_TEST(std::to_integer<int>(b[t::frame_offsets::request_id + 7]) == 0x11);
  BOOST_TEST(std::to_integer<int>(b[t::frame_offsets::step]) == 0x28);
  BOOST_TEST(std::to_integer<int>(b[t::frame_offsets::total_length + 2]) == 0x01);  // 65536
}

BOOST_AUTO_TEST_CASE(any_single_corrupted_byte_is_detected) {
  const auto good = t::encode(sample());
  for (std::size_t i = 0; i < t::frame_header_size; ++i) {
    for (std::byte flip : {std::byte{0x01}, std::byte{0x80}}) {
      auto bad = good;
      bad[i] ^= flip;
      t::frame_header out;
      std::string reason;
      BOOST_TEST(t::decode(bad, {}, out, reason) == dsgd::make_error_code(dsgd::errc::bad_frame), "byte " << i);
      BOOST_TEST(!reason.empty());
    }
  }
}

BOOST_AUTO_TEST_CASE(each_check_names_what_was_wrong) {
  auto b = t::encode(sample());
  b[0] = std::byte{'X'};
  BOOST_TEST(reject_reason(b).find("magic") != std::string::npos);

  b = t::encode(sample());
  b[t::frame_offsets::version] = std::byte{t::protocol_version + 1};
  BOOST_TEST(reject_reason(b).find("version " + std::to_string(t::protocol_version + 1)) != std::string::npos);

  b = t::encode(sample());
  b[t::frame_offsets::step] ^= std::byte{1};
  BOOST_TEST(reject_reason(b).find("checksum") != std::string::npos);

  b = t::encode(sample());
  b[t::frame_offsets::reserved] = std::byte{1};
  reseal(b);
  BOOST_TEST(reject_reason(b).find("reserved") != std::string::npos);

  auto h = sample();
  h.flags |= 1u << 7;
  BOOST_TEST(reject_reason(t::encode(h)).find("unknown flags 0x80") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(lengths_over_the_caps_are_rejected_before_any_allocation) {
  auto h = sample();
  h.payload_length = 1ull << 40;  // a terabyte: nothing may be allocated for this
  h.chunk_offset = 0;
  h.total_length = 1ull << 40;
  BOOST_TEST(reject_reason(t::encode(h)).find("payload length 1099511627776") != std::string::npos);

  t::limits small{.max_payload_bytes = 1024};
  BOOST_TEST(reject_reason(t::encode(sample()), small).find("exceeds the cap of 1024") != std::string::npos);

  h = sample();
  h.total_length = 1ull << 40;
  BOOST_TEST(reject_reason(t::encode(h)).find("message length") != std::string::npos);

  h = sample();
  h.payload_length = ~0ull;
  t::limits unlimited{.max_payload_bytes = ~0ull, .max_total_bytes = ~0ull};
  BOOST_TEST(reject_reason(t::encode(h), unlimited).find("outside") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_chunk_must_lie_inside_its_message_without_overflow) {
  auto h = sample();
  h.chunk_offset = ~0ull - 100;  // offset + length would wrap around to a small number
  BOOST_TEST(reject_reason(t::encode(h)).find("outside") != std::string::npos);
  h = sample();
  h.chunk_offset = h.total_length - h.payload_length;  // exactly the last chunk is fine
  t::frame_header out;
  std::string reason;
  BOOST_TEST(!t::decode(t::encode(h), {}, out, reason));
  BOOST_TEST(out.last_chunk());
}

BOOST_AUTO_TEST_CASE(control_payloads_have_their_own_cap_and_are_never_chunked) {
  t::frame_header h{.flags = t::frame_flags::control, .payload_length = 2u << 20, .total_length = 2u << 20};
  BOOST_TEST(reject_reason(t::encode(h)).find("control payload") != std::string::npos);
  h.payload_length = 100;
  h.total_length = 200;
  BOOST_TEST(reject_reason(t::encode(h)).find("cannot be chunked") != std::string::npos);
  h.total_length = 100;
  h.flags |= t::frame_flags::shared_memory;
  BOOST_TEST(reject_reason(t::encode(h)).find("never travel through shared memory") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_throwing_decode_reports_bad_frame_with_the_reason) {
  auto b = t::encode(sample());
  b[1] = std::byte{0};
  BOOST_CHECK_EXCEPTION(t::decode(b), dsgd::error, [](const dsgd::error& e) {
    return e.code() == dsgd::errc::bad_frame && std::string(e.what()).find("magic") != std::string::npos;
  });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
