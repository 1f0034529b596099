// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Fuzz target for the decoders of the shipped compressors: a compressed push's payload as
// a ps checks it (codec::check) and decodes it into its accumulator (codec::decode_add),
// for every encoding. A payload either checks, and then decodes writing only inside the
// accumulator, or is refused with dsgd::error(errc::bad_frame) naming the variable; nothing
// is allocated in proportion to what its counts claim. A payload that checks survives decode
// and encode unchanged where the encoding is a function of the values (fp16 and bf16 without
// NaNs, two_bit, none).
//
// Input: one byte choosing the codec and its parameter, a u16 LE element count (below 4097),
// then the payload.
#include "fuzz_support.hpp"

#include <dsgd/compress/selection.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace c = dsgd::compress;

namespace {

c::codec codec_of(std::uint8_t b) {
  static const float ratios[] = {0.01f, 0.1f, 0.5f, 1.f};
  static const float thresholds[] = {0.5f, 0.01f, 1.f, 1e-3f};
  switch (b % 5) {
    case 0:
      return c::none{};
    case 1:
      return c::fp16{};
    case 2:
      return c::bf16{};
    case 3:
      return c::top_k{ratios[(b / 5) % 4]};
    default:
      return c::two_bit{thresholds[(b / 5) % 4]};
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dsgd::fuzz::input_scope scope({data, size});
  dsgd::fuzz::input_reader in({data, size});
  const auto codec = codec_of(in.byte());
  const std::size_t n = in.le<std::uint16_t>() % 4097;
  const auto rest = in.rest();
  // Copied into a 4-byte-aligned buffer as the ps receives it (table_peer's `compressed`).
  std::vector<std::uint32_t> buffer((rest.size() + 3) / 4);
  if (!rest.empty()) std::memcpy(buffer.data(), rest.data(), rest.size());
  const auto payload = std::as_bytes(std::span(buffer)).first(rest.size());
  const char* what = "emb [4096] shard 0 (push to ps:0)";
  try {
    codec.check(payload, n, what);
  } catch (const dsgd::error& e) {
    dsgd::fuzz::check(e.code() == dsgd::errc::bad_frame, "check threw another errc");
    dsgd::fuzz::check(std::string(e.what()).find(what) != std::string::npos,
                      "check's error does not name the variable");
    return 0;
  }
  dsgd::fuzz::check(payload.size() <= codec.max_bytes(n), "a payload that checks is above the codec's cap");
  // Guard elements on both sides: a decode must write only inside the accumulator.
  std::vector<float> acc(n + 2, 0.f);
  codec.decode_add(payload, acc.data() + 1, n);
  dsgd::fuzz::check(acc.front() == 0.f && acc.back() == 0.f, "decode_add wrote outside the accumulator");
  if (codec.get_if<c::top_k>()) return 0;
  std::vector<float> values(acc.begin() + 1, acc.end() - 1);
  if (!codec.get_if<c::two_bit>())
    for (float v : values)
      if (std::isnan(v)) return 0;  // NaN payloads come back quieted
  std::vector<float> residual(codec.uses_residual() ? n : 0, 0.f);
  std::vector<std::uint32_t> again((codec.max_bytes(n) + 3) / 4);
  const auto bytes = codec.encode(values, residual, std::as_writable_bytes(std::span(again)));
  // -0 decodes as +0 (added to a zeroed accumulator): compare the values, not the bytes.
  std::vector<float> twice(n, 0.f);
  codec.check(std::as_bytes(std::span(again)).first(bytes), n, what);
  codec.decode_add(std::as_bytes(std::span(again)).first(bytes), twice.data(), n);
  dsgd::fuzz::check(bytes == payload.size() && twice == values, "a checked payload does not survive decode and encode");
  return 0;
}

std::vector<std::string> dsgd::fuzz::seeds() {
  std::vector<std::string> out;
  const std::vector<float> g = {0.75f, -0.25f, 3.f, 0.f, -2.5f, 1e-3f, 0.6f, -0.6f, 65504.f, 1e-8f, 0.5f};
  for (std::uint8_t b = 0; b < 20; ++b) {
    const auto codec = codec_of(b);
    std::vector<float> residual(g.size(), 0.1f);
    std::vector<std::uint32_t> payload((codec.max_bytes(g.size()) + 3) / 4);
    const auto bytes = codec.encode(g, residual, std::as_writable_bytes(std::span(payload)));
    std::string input(1, static_cast<char>(b));
    input += static_cast<char>(g.size());
    input += '\0';
    input.append(reinterpret_cast<const char*>(payload.data()), bytes);
    out.push_back(std::move(input));
  }
  return out;
}
