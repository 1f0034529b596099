// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// compress::none: gradients as raw floats, the default.
#pragma once

#include <dsgd/compress/concepts.hpp>

#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace dsgd::compress {

/// Raw floats, as a plain push sends them. A worker never calls encode(): with `none` it
/// sends its gradient in place, with no copy; the members exist so that `none` is a
/// Compressor like the others (and a test can round-trip through it).
struct none {
  static constexpr std::string_view name = "none";  ///< a plain push on the wire
  static constexpr bool uses_residual = false;      ///< nothing is lost

  std::string describe() const { return std::string(name); }
  std::size_t max_bytes(std::size_t n) const noexcept { return sizeof(float) * n; }

  /// Copies @p grad into @p out. @returns its bytes
  std::size_t encode(std::span<const float> grad, std::span<float> /*residual*/, std::span<std::byte> out) const {
    if (!grad.empty()) std::memcpy(out.data(), grad.data(), grad.size_bytes());
    return grad.size_bytes();
  }

  /// @throws dsgd::error(errc::bad_frame) unless @p in is exactly @p n floats
  void check(std::span<const std::byte> in, std::size_t n, std::string_view what) const {
    if (in.size() != sizeof(float) * n)
      malformed(name, what, std::to_string(in.size()) + " bytes for " + std::to_string(n) + " floats");
  }

  /// acc[i] += the i-th float of checked @p in.
  void decode_add(std::span<const std::byte> in, float* acc, std::size_t n) const noexcept {
    for (std::size_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, in.data() + sizeof(float) * i, sizeof v);
      acc[i] += v;
    }
  }
};

static_assert(Compressor<none>);

}  // namespace dsgd::compress
