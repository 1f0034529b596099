// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// compress::two_bit: MXNet's 2-bit gradient compression with a threshold and a residual.
#pragma once

#include <dsgd/compress/concepts.hpp>
#include <dsgd/compress/detail/bytes.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

namespace dsgd::compress {

/// MXNet's `2bit` compression (kvstore.set_gradient_compression): per element, v = gradient +
/// residual; v >= threshold is sent as +threshold, v <= -threshold as -threshold, anything else
/// as 0, and the residual keeps v minus what was sent. 16x fewer bytes than floats.
///
/// Payload: the f32 threshold, then ceil(n / 4) bytes, element i in bits 2(i % 4) and up of
/// byte i / 4: 0 for 0, 1 for +threshold, 2 for -threshold (3 is malformed); unused bits 0.
struct two_bit {
  static constexpr std::string_view name = "two_bit";  ///< registered by
  static constexpr bool uses_residual = true;          ///< error feedback

  float threshold = 0.5f;  ///< the magnitude sent, finite and above 0

  /// @returns "two_bit(0.5)": what registration compares.
  std::string describe() const {
    char buf[48];
    std::snprintf(buf, sizeof buf, "two_bit(%g)", static_cast<double>(threshold));
    return buf;
  }
  std::size_t max_bytes(std::size_t n) const noexcept { return 4 + (n + 3) / 4; }

  /// Quantises residual + grad in one pass, writing the codes and the new residual.
  /// @returns max_bytes(grad.size())
  std::size_t encode(std::span<const float> grad, std::span<float> residual, std::span<std::byte> out) const {
    const std::size_t n = grad.size();
    std::byte* o = out.data();
    detail::store<float>(o, threshold);
    float* r = residual.data();
    for (std::size_t b = 0; b < (n + 3) / 4; ++b) {
      unsigned byte = 0;
      for (std::size_t i = 4 * b, j = 0; j < 4 && i < n; ++i, ++j) {
        const float v = r[i] + grad[i];
        unsigned code = 0;
        float sent = 0.f;
        if (v >= threshold) {
          code = 1;
          sent = threshold;
        } else if (v <= -threshold) {
          code = 2;
          sent = -threshold;
        }
        r[i] = v - sent;
        byte |= code << (2 * j);
      }
      o[4 + b] = static_cast<std::byte>(byte);
    }
    return max_bytes(n);
  }

  /// @throws dsgd::error(errc::bad_frame) naming @p what for a length other than
  ///         4 + ceil(n / 4), another threshold than this one's, a code 3 or a set unused bit
  void check(std::span<const std::byte> in, std::size_t n, std::string_view what) const {
    if (in.size() != max_bytes(n))
      malformed(name, what,
                std::to_string(in.size()) + " bytes for " + std::to_string(n) + " elements (expected " +
                    std::to_string(max_bytes(n)) + ")");
    const float t = detail::load<float>(in.data());
    if (std::bit_cast<std::uint32_t>(t) != std::bit_cast<std::uint32_t>(threshold)) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "threshold %g, but %s was agreed", static_cast<double>(t), describe().c_str());
      malformed(name, what, buf);
    }
    for (std::size_t b = 0; b < (n + 3) / 4; ++b) {
      const auto byte = static_cast<unsigned>(in[4 + b]);
      for (unsigned j = 0; j < 4; ++j) {
        const unsigned code = (byte >> (2 * j)) & 3u;
        if (4 * b + j >= n && code != 0)
          malformed(name, what, "unused bits set in the last byte (" + std::to_string(n) + " elements)");
        if (code == 3) malformed(name, what, "code 3 at element " + std::to_string(4 * b + j));
      }
    }
  }

  /// acc[i] += +threshold, -threshold or 0 as checked @p in says.
  void decode_add(std::span<const std::byte> in, float* acc, std::size_t n) const noexcept {
    const float t = detail::load<float>(in.data());
    const float table[4] = {0.f, t, -t, 0.f};
    for (std::size_t i = 0; i < n; ++i) acc[i] += table[(static_cast<unsigned>(in[4 + i / 4]) >> (2 * (i % 4))) & 3u];
  }
};

static_assert(Compressor<two_bit>);

}  // namespace dsgd::compress
