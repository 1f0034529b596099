// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Must NOT compile: a compressor that encodes but cannot decode (no decode_add), chosen for a
// trainer's pushes. The test conformance_near_miss_compressor passes when the compiler refuses it
// naming the concept.
#include <dsgd/compress/selection.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

struct encode_only {
  static constexpr std::string_view name = "encode_only";
  static constexpr bool uses_residual = false;
  std::string describe() const { return "encode_only"; }
  std::size_t max_bytes(std::size_t n) const { return 4 * n; }
  std::size_t encode(std::span<const float>, std::span<float>, std::span<std::byte>) const { return 0; }
  void check(std::span<const std::byte>, std::size_t, std::string_view) const {}
};

const dsgd::compress::selection refused{.all = encode_only{}};
