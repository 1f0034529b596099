// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// How an optimizer's state goes into a checkpoint beside its variable: slot records named as
/// TensorFlow's slot variables, and 64-bit counters as two 32-bit halves. What a ps task writes
/// of its shards and a collective job's replicas of their segments, so that either restores the
/// other's checkpoints (docs/checkpoints.md, "Optimizer state").
#pragma once

#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/error.hpp>

#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace dsgd::checkpoint {

/// @returns the record of slot or counter @p what of variable @p variable: "dense0/kernel/velocity".
inline std::string state_record(std::string_view variable, std::string_view what) {
  return std::string(variable) + "/" + std::string(what);
}

/// @returns counter @p value as the two floats its record holds: the low 32 bits, then the high.
inline std::array<float, 2> counter_bits(std::uint64_t value) noexcept {
  return {std::bit_cast<float>(static_cast<std::uint32_t>(value)),
          std::bit_cast<float>(static_cast<std::uint32_t>(value >> 32))};
}

/// @returns the counter whose record holds @p bits (counter_bits()'s inverse).
inline std::uint64_t counter_of(float low, float high) noexcept {
  return std::uint64_t{std::bit_cast<std::uint32_t>(low)} | (std::uint64_t{std::bit_cast<std::uint32_t>(high)} << 32);
}

/// @returns the counter record @p name of @p reader.
/// @throws dsgd::error as checkpoint_reader::read
inline std::uint64_t read_counter(const checkpoint_reader& reader, std::string_view name) {
  const auto bits = reader.read(name, 0, 2);
  return counter_of(bits[0], bits[1]);
}

}  // namespace dsgd::checkpoint
