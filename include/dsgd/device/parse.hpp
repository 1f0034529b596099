// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Local device strings: "cpu", "cpu:0", "cuda:1", "gpu:1", "/gpu:0", "/device:GPU:1".
///
/// The grammar (kinds are case-insensitive, as TensorFlow accepts "/cpu:0" and "/device:CPU:0"):
/// @code
///   device  := ["/"] ["device:"] kind [":" index]
///   kind    := "cpu" | "cuda" | "gpu"          ("gpu" is a synonym of "cuda")
///   index   := digit+                          (0 when absent, at most INT_MAX)
/// @endcode
/// A string that does not parse throws dsgd::error(errc::bad_device_string) whose message quotes
/// the string, gives the 0-based column of the offending character and draws a caret under it:
/// @code
///   bad device string "cuda:x" at column 5: expected a device index (digits), got 'x'
///     cuda:x
///          ^
/// @endcode
#pragma once

#include <dsgd/error.hpp>

#include <climits>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace dsgd::device {

/// A parsed local device: its kind and index ("cuda:1" is {kind::cuda, 1}).
struct spec {
  /// The kinds of device dsgd has a policy for.
  enum class kind { cpu, cuda };

  kind type = kind::cpu;  ///< which device policy
  int index = 0;          ///< which device of that kind (always 0 for the cpu)

  /// @returns the short form, "cpu:0" or "cuda:1", which parses back to an equal spec.
  std::string to_string() const { return (type == kind::cpu ? "cpu:" : "cuda:") + std::to_string(index); }

  friend bool operator==(const spec&, const spec&) = default;

  /// Writes to_string().
  friend std::ostream& operator<<(std::ostream& os, const spec& s) { return os << s.to_string(); }
};

namespace detail {

/// Where and why a string failed to parse (column is 0-based, into the whole string).
struct parse_failure {
  std::size_t column = 0;
  std::string reason;
};

/// @returns `c` quoted for a message: 'x', or a hex escape for control characters.
inline std::string describe_char(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u < 0x20 || u == 0x7f) {
    static constexpr char hex[] = "0123456789abcdef";
    return std::string("'\\x") + hex[u >> 4] + hex[u & 0xf] + "'";
  }
  return std::string("'") + c + "'";
}

/// Formats "<what> "<text>" at column N: <reason>" and, on the next two lines, the text and a
/// caret under column N. Control characters in the echoed text become '?' so the caret lines up.
inline std::string caret_message(std::string_view what, std::string_view text, std::size_t column,
                                 std::string_view reason) {
  std::string msg;
  msg.append(what).append(" \"").append(text).append("\" at column ");
  msg.append(std::to_string(column)).append(": ").append(reason).append("\n  ");
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    msg.push_back(u < 0x20 || u == 0x7f ? '?' : c);
  }
  msg.append("\n  ").append(column, ' ').append("^");
  return msg;
}

/// @returns whether `a` equals the lower-case ASCII word `lower`, ignoring the case of `a`.
inline bool iequals(std::string_view a, std::string_view lower) noexcept {
  if (a.size() != lower.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char c = a[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

inline bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
inline bool is_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// Parses the whole of `text` as a non-negative int (what = "device index", "task index"...).
/// `base` is the column of text[0] in the full string, for the failure.
inline std::optional<int> parse_index(std::string_view text, std::size_t base, std::string_view what,
                                      parse_failure& failure) {
  if (text.empty()) {
    failure = {base, "missing " + std::string(what)};
    return std::nullopt;
  }
  if (text[0] == '-') {
    failure = {base, std::string(what) + " must be non-negative"};
    return std::nullopt;
  }
  long long value = 0;
  std::size_t i = 0;
  for (; i < text.size() && is_digit(text[i]); ++i) {
    value = value * 10 + (text[i] - '0');
    if (value > INT_MAX) {
      std::size_t end = i;
      while (end < text.size() && is_digit(text[end])) ++end;
      failure = {base, std::string(what) + " " + std::string(text.substr(0, end)) + " is too large (at most " +
                           std::to_string(INT_MAX) + ")"};
      return std::nullopt;
    }
  }
  if (i == 0) {
    failure = {base, "expected a " + std::string(what) + " (digits), got " + describe_char(text[0])};
    return std::nullopt;
  }
  if (i != text.size()) {
    failure = {base + i, "unexpected character " + describe_char(text[i]) + " after the " + std::string(what)};
    return std::nullopt;
  }
  return static_cast<int>(value);
}

/// @returns the kind named by `word` ("cpu", "cuda", "gpu", any case), or nullopt.
inline std::optional<spec::kind> kind_from_name(std::string_view word) noexcept {
  if (iequals(word, "cpu")) return spec::kind::cpu;
  if (iequals(word, "cuda") || iequals(word, "gpu")) return spec::kind::cuda;
  return std::nullopt;
}

/// The non-throwing parser behind device::parse. `base` is the column of text[0] in the string
/// the caller reports (cluster::device_spec passes the offset of its device component).
inline std::optional<spec> try_parse(std::string_view text, std::size_t base, parse_failure& failure) {
  if (text.empty()) {
    failure = {base, "empty device string; expected e.g. \"cpu\", \"cuda:1\" or \"/device:GPU:0\""};
    return std::nullopt;
  }
  std::size_t pos = 0;
  if (text[0] == '/') pos = 1;
  if (text.substr(pos).starts_with("device:")) pos += 7;
  const std::size_t kind_begin = pos;
  while (pos < text.size() && is_alpha(text[pos])) ++pos;
  const std::string_view word = text.substr(kind_begin, pos - kind_begin);
  if (word.empty()) {
    failure = {base + kind_begin, kind_begin < text.size() ? "expected a device kind (cpu, cuda or gpu), got " +
                                                                 describe_char(text[kind_begin])
                                                           : std::string("missing device kind (cpu, cuda or gpu)")};
    return std::nullopt;
  }
  const auto type = kind_from_name(word);
  if (!type) {
    failure = {base + kind_begin,
               "unknown device kind \"" + std::string(word) + "\"; expected cpu, cuda or gpu (any case)"};
    return std::nullopt;
  }
  if (pos == text.size()) return spec{*type, 0};
  if (text[pos] != ':') {
    failure = {base + pos, "unexpected character " + describe_char(text[pos]) +
                               " after the device kind; expected ':' and an index"};
    return std::nullopt;
  }
  const auto index = parse_index(text.substr(pos + 1), base + pos + 1, "device index", failure);
  if (!index) return std::nullopt;
  return spec{*type, *index};
}

}  // namespace detail

/// Parses a local device string ("cpu", "cuda:1", "/gpu:0", "/device:CPU:0"; see the file
/// comment for the grammar). A missing index means 0.
/// @throws dsgd::error with errc::bad_device_string, naming the column of the offending character.
inline spec parse(std::string_view text) {
  detail::parse_failure failure;
  if (auto s = detail::try_parse(text, 0, failure)) return *s;
  throw error(errc::bad_device_string,
              detail::caret_message("bad device string", text, failure.column, failure.reason));
}

}  // namespace dsgd::device
