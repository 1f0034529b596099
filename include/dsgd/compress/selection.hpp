// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// compress::selection: which Compressor each variable's pushes use (one for all, overridable
/// by variable name), and compress::codec, one of the shipped compressors chosen at run time.
#pragma once

#include <dsgd/compress/bf16.hpp>
#include <dsgd/compress/concepts.hpp>
#include <dsgd/compress/fp16.hpp>
#include <dsgd/compress/none.hpp>
#include <dsgd/compress/top_k.hpp>
#include <dsgd/compress/two_bit.hpp>
#include <dsgd/detail/validate.hpp>

#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace dsgd::compress {

/// One of the shipped compressors, chosen per variable at run time. The choice is made once
/// per message (std::visit), never per element: each alternative's loops are its own.
using codec = std::variant<none, fp16, bf16, top_k, two_bit>;

/// @returns the codec's describe() ("none", "top_k(0.01)").
inline std::string describe(const codec& c) {
  return std::visit([](const auto& m) { return m.describe(); }, c);
}
/// @returns the codec's wire id.
inline encoding id_of(const codec& c) noexcept {
  return std::visit([](const auto& m) { return std::decay_t<decltype(m)>::id; }, c);
}
/// @returns whether the codec keeps a residual (top_k, two_bit).
inline bool uses_residual(const codec& c) noexcept {
  return std::visit([](const auto& m) { return std::decay_t<decltype(m)>::uses_residual; }, c);
}
/// @returns the largest payload of @p n elements.
inline std::size_t max_bytes(const codec& c, std::size_t n) noexcept {
  return std::visit([n](const auto& m) { return m.max_bytes(n); }, c);
}
/// Compressor::encode of the chosen compressor.
inline std::size_t encode(const codec& c, std::span<const float> grad, std::span<float> residual,
                          std::span<std::byte> out) {
  return std::visit([&](const auto& m) { return m.encode(grad, residual, out); }, c);
}
/// Compressor::check of the chosen compressor. @throws dsgd::error(errc::bad_frame) naming @p what
inline void check(const codec& c, std::span<const std::byte> in, std::size_t n, std::string_view what) {
  std::visit([&](const auto& m) { m.check(in, n, what); }, c);
}
/// Compressor::decode_add of the chosen compressor (after check()).
inline void decode_add(const codec& c, std::span<const std::byte> in, float* acc, std::size_t n) {
  std::visit([&](const auto& m) { m.decode_add(in, acc, n); }, c);
}

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

/// Checks @p c's parameters (top_k's ratio in (0, 1], two_bit's threshold finite and above 0),
/// naming a bad one by @p path. @throws dsgd::error(errc::invalid_argument)
inline void validate(const codec& c, std::string_view path) {
  if (const auto* t = std::get_if<top_k>(&c); t && !(t->ratio > 0.f && t->ratio <= 1.f))
    dsgd::detail::bad_option(path, "ratio", "must be in (0, 1], is " + std::to_string(t->ratio));
  if (const auto* t = std::get_if<two_bit>(&c); t && !(std::isfinite(t->threshold) && t->threshold > 0.f))
    dsgd::detail::bad_option(path, "threshold", "must be finite and above 0, is " + std::to_string(t->threshold));
}

/// @returns the codec that describe() writes as @p text: "none", "fp16", "bf16", "top_k(R)" or
/// "two_bit(T)", with R and T numbers (a command line's `--compress top_k(0.01)`); the
/// parameters are then validate()d.
/// @throws dsgd::error(errc::invalid_argument) naming @p text and what was expected
inline codec parse(std::string_view text) {
  const auto bad = [&](const std::string& why) -> error {
    return error(errc::invalid_argument, "compression \"" + std::string(text) + "\": " + why);
  };
  if (text == "none") return none{};
  if (text == "fp16") return fp16{};
  if (text == "bf16") return bf16{};
  const auto open = text.find('(');
  const auto name = text.substr(0, open);
  if (open == std::string_view::npos || (name != "top_k" && name != "two_bit"))
    throw bad("expected none, fp16, bf16, top_k(RATIO) or two_bit(THRESHOLD)");
  if (text.back() != ')' || text.size() < open + 3) throw bad("expected " + std::string(name) + "(NUMBER)");
  const std::string number(text.substr(open + 1, text.size() - open - 2));
  std::size_t used = 0;
  float v = 0;
  try {
    v = std::stof(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != number.size() || used == 0) throw bad("\"" + number + "\" is not a number");
  codec c = name == "top_k" ? codec(top_k{v}) : codec(two_bit{v});
  try {
    validate(c, name);
  } catch (const dsgd::error& e) {
    throw bad(e.what());
  }
  return c;
}

/// Checks every codec of @p s, naming a bad one by its path ("trainer_options.compression.all").
/// @throws dsgd::error(errc::invalid_argument)
inline void validate(const selection& s, std::string_view path = "selection") {
  validate(s.all, std::string(path) + ".all");
  for (const auto& [name, c] : s.variables) validate(c, std::string(path) + ".variables[" + name + "]");
}

/// Checks that every codec of @p s can encode pulled values (none, fp16, bf16: top_k and
/// two_bit drop what they do not send into a residual, which values cannot have), naming a
/// bad one by its path ("trainer_options.pull_compression.all").
/// @throws dsgd::error(errc::invalid_argument)
inline void validate_pull(const selection& s, std::string_view path = "selection") {
  const auto check = [](const codec& c, const std::string& at) {
    if (uses_residual(c))
      throw error(errc::invalid_argument, at + ": must be none, fp16 or bf16 (a pull sends values), is " + describe(c));
  };
  check(s.all, std::string(path) + ".all");
  for (const auto& [name, c] : s.variables) check(c, std::string(path) + ".variables[" + name + "]");
}

}  // namespace dsgd::compress
