// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// compress::selection: which Compressor each variable's pushes (or pulls) use, one for all,
/// overridable by variable name; the checks of a selection and the encodings pulls take.
#pragma once

#include <dsgd/compress/bf16.hpp>
#include <dsgd/compress/codec.hpp>
#include <dsgd/compress/fp16.hpp>
#include <dsgd/compress/top_k.hpp>
#include <dsgd/compress/two_bit.hpp>
#include <dsgd/detail/validate.hpp>
#include <dsgd/error.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsgd::compress {

/// Which compressor each variable's pushes use: `all`, unless `variables` names the variable
/// (the first entry with its name wins). Workers and ps tasks must hold the same selection:
/// a worker's registration carries what it chose for each shard, and a ps that would decode
/// otherwise refuses it, naming the variable and both choices.
/// @code
///   o.compression = {.all = compress::top_k{0.01f}, .variables = {{"softmax/bias", compress::none{}}}};
/// @endcode
struct selection {
  codec all = none{};                                    ///< every variable's, unless named below
  std::vector<std::pair<std::string, codec>> variables;  ///< overrides by variable name

  /// @returns the codec of variable @p name.
  const codec& of(std::string_view name) const noexcept {
    for (const auto& [n, c] : variables)
      if (n == name) return c;
    return all;
  }
};

/// Checks @p c's parameters where it is a shipped compressor with some (top_k's ratio in (0, 1],
/// two_bit's threshold finite and above 0), naming a bad one by @p path.
/// @throws dsgd::error(errc::invalid_argument)
inline void validate(const codec& c, std::string_view path) {
  if (const auto* t = c.get_if<top_k>(); t && !(t->ratio > 0.f && t->ratio <= 1.f))
    dsgd::detail::bad_option(path, "ratio", "must be in (0, 1], is " + std::to_string(t->ratio));
  if (const auto* t = c.get_if<two_bit>(); t && !(std::isfinite(t->threshold) && t->threshold > 0.f))
    dsgd::detail::bad_option(path, "threshold", "must be finite and above 0, is " + std::to_string(t->threshold));
}

/// Checks every codec of @p s, naming a bad one by its path ("trainer_options.compression.all").
/// @throws dsgd::error(errc::invalid_argument)
inline void validate(const selection& s, std::string_view path = "selection") {
  validate(s.all, std::string(path) + ".all");
  for (const auto& [name, c] : s.variables) validate(c, std::string(path) + ".variables[" + name + "]");
}

/// How pulled values travel: as floats, or 2 bytes each as fp16 or bf16 encodes them. Pulls
/// take only these: a pull sends values, which keep no residual, and its reply is sized by
/// the shard (2 bytes an element) before a byte of it is read.
enum class value_encoding : std::uint8_t { none, fp16, bf16 };

/// @returns how @p c sends pulled values, or nullopt when it cannot (any other compressor).
inline std::optional<value_encoding> values_as(const codec& c) noexcept {
  if (c.is_none()) return value_encoding::none;
  if (c.get_if<fp16>()) return value_encoding::fp16;
  if (c.get_if<bf16>()) return value_encoding::bf16;
  return std::nullopt;
}

/// Checks that every codec of @p s can encode pulled values (values_as: none, fp16, bf16),
/// naming a bad one by its path ("trainer_options.pull_compression.all").
/// @throws dsgd::error(errc::invalid_argument)
inline void validate_pull(const selection& s, std::string_view path = "selection") {
  const auto check = [](const codec& c, const std::string& at) {
    if (!values_as(c))
      throw error(errc::invalid_argument,
                  at + ": must be none, fp16 or bf16 (a pull sends values), is " + c.describe());
  };
  check(s.all, std::string(path) + ".all");
  for (const auto& [name, c] : s.variables) check(c, std::string(path) + ".variables[" + name + "]");
}

}  // namespace dsgd::compress
