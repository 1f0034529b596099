// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Fuzz target for a worker's receipt of a pull reply (<dsgd/client/detail/compressed_pull.hpp>):
// the chunks of a plain or compressed (fp16, bf16) reply, with arbitrary headers, arriving for
// a request that asked for either. Every chunk either gets a destination inside the request's
// floats (a compressed one inside their back half) or is refused as bad_frame; nothing is
// allocated from what a header claims; a compressed reply whose chunks all arrived widens into
// exactly the floats its 16-bit values are, writing nowhere else.
//
// Input: a byte choosing the request's encoding (none, fp16, bf16) and the reply's type
// (pull_reply or compressed_pull_reply), a u16 LE float count (below 1025), a u64 LE total
// length, then chunks: u64 LE offset, u16 LE length, that many bytes.
#include "fuzz_support.hpp"

#include <dsgd/client/detail/compressed_pull.hpp>
#include <dsgd/compress/detail/bytes.hpp>

#include <bit>
#include <cstring>
#include <string>
#include <vector>

namespace client = dsgd::client;
namespace protocol = dsgd::protocol;
namespace c = dsgd::compress;
namespace cd = dsgd::compress::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dsgd::fuzz::input_scope scope({data, size});
  dsgd::fuzz::input_reader in({data, size});
  const std::uint8_t mode = in.byte();
  const c::value_encoding asked = mode % 3 == 0   ? c::value_encoding::none
                                  : mode % 3 == 1 ? c::value_encoding::fp16
                                                  : c::value_encoding::bf16;
  const auto type = (mode / 3) % 2 ? protocol::message::compressed_pull_reply : protocol::message::pull_reply;
  const std::size_t n = in.le<std::uint16_t>() % 1025;
  const auto total = in.le<std::uint64_t>();
  // The request's floats, with a guard float on each side.
  std::vector<float> dest(n + 2, -7.f);
  client::detail::request_slot slot;
  slot.reply_into = boost::asio::buffer(dest.data() + 1, n * sizeof(float));
  slot.reply_encoding = asked;
  auto* lo = reinterpret_cast<std::byte*>(dest.data() + 1);
  auto* hi = lo + n * sizeof(float);
  std::vector<std::byte> shadow(2 * n);  // what the compressed region should hold
  std::vector<bool> written(2 * n, false);
  bool refused = false;
  while (in.remaining() > 0 && !refused) {
    dsgd::transport::frame_header h;
    h.type = static_cast<std::uint16_t>(type);
    h.total_length = total;
    h.chunk_offset = in.le<std::uint64_t>();
    h.payload_length = in.le<std::uint16_t>();
    dsgd::error_code ec;
    auto into = client::detail::pull_destination(slot, type, h, ec);
    if (ec) {
      dsgd::fuzz::check(ec == dsgd::make_error_code(dsgd::errc::bad_frame), "a refused chunk is not bad_frame");
      refused = true;
      break;
    }
    dsgd::fuzz::check(into.size() == h.payload_length, "a destination of another size than the chunk");
    auto* at = static_cast<std::byte*>(into.data());
    dsgd::fuzz::check(into.size() == 0 || (at >= lo && at + into.size() <= hi), "a destination outside the floats");
    const bool compressed = type == protocol::message::compressed_pull_reply;
    dsgd::fuzz::check(compressed == (asked != c::value_encoding::none), "a reply of the other kind was taken");
    dsgd::fuzz::check(!compressed || into.size() == 0 || at >= lo + 2 * n, "a compressed chunk in the front half");
    auto bytes = in.bytes(into.size());
    if (!bytes.empty()) std::memcpy(at, bytes.data(), bytes.size());
    if (compressed)
      for (std::size_t i = 0; i < bytes.size(); ++i) {
        const auto k = static_cast<std::size_t>(at - (lo + 2 * n)) + i;
        shadow[k] = bytes[i];
        written[k] = true;
      }
  }
  dsgd::fuzz::check(dest.front() == -7.f && dest.back() == -7.f, "a chunk wrote outside the floats");
  if (refused || type != protocol::message::compressed_pull_reply) return 0;
  for (bool w : written)
    if (!w) return 0;  // not every chunk arrived: the reply is not complete, nothing to widen
  client::detail::widen_pull_reply(slot);
  dsgd::fuzz::check(dest.front() == -7.f && dest.back() == -7.f, "widening wrote outside the floats");
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = cd::load<std::uint16_t>(shadow.data() + 2 * i);
    const float want = asked == c::value_encoding::bf16 ? cd::from_bf16(v) : cd::from_fp16(v);
    dsgd::fuzz::check(std::bit_cast<std::uint32_t>(dest[i + 1]) == std::bit_cast<std::uint32_t>(want),
                      "a widened float is not its 16-bit value");
  }
  return 0;
}

std::vector<std::string> dsgd::fuzz::seeds() {
  // Whole replies of 6 floats in one chunk and in two, of every kind for every request.
  std::vector<std::string> out;
  const std::vector<float> values = {0.75f, -0.25f, 3.f, 0.f, 65504.f, 1e-8f};
  auto le = [](std::string& s, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  };
  for (std::uint8_t mode = 0; mode < 6; ++mode) {
    const bool compressed = (mode / 3) % 2;
    std::string payload;
    if (compressed) {
      for (float v : values) le(payload, mode % 3 == 1 ? cd::to_fp16(v) : cd::to_bf16(v), 2);
    } else {
      payload.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    }
    for (int split = 0; split < 2; ++split) {
      std::string input(1, static_cast<char>(mode));
      le(input, values.size(), 2);
      le(input, payload.size(), 8);
      const std::size_t first = split ? payload.size() / 2 : payload.size();
      le(input, 0, 8);
      le(input, first, 2);
      input += payload.substr(0, first);
      if (split) {
        le(input, first, 8);
        le(input, payload.size() - first, 2);
        input += payload.substr(first);
      }
      out.push_back(std::move(input));
    }
  }
  return out;
}
