// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// compress::registry: Compressors by name, made from text ("top_k(0.01)", a command line's
/// `--compress`), the shipped ones registered from the start and a user's added to them.
#pragma once

#include <dsgd/compress/bf16.hpp>
#include <dsgd/compress/codec.hpp>
#include <dsgd/compress/fp16.hpp>
#include <dsgd/compress/none.hpp>
#include <dsgd/compress/selection.hpp>
#include <dsgd/compress/top_k.hpp>
#include <dsgd/compress/two_bit.hpp>
#include <dsgd/error.hpp>

#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsgd::compress {

/// Makes codecs from the text their describe() writes: a name, then its parameters in
/// parentheses where it has any ("fp16", "top_k(0.01)"). Each name has a factory that reads
/// the text between the parentheses ("" without them) and throws dsgd::error(invalid_argument)
/// for parameters it cannot take. registry::global() starts with the shipped compressors; a
/// program that brings its own adds it there before it parses its options, on every task:
/// @code
///   compress::registry::global().add("sign", "sign(SCALE)", [](std::string_view p) {
///     return compress::codec(my_sign{compress::registry::number(p, "sign")});
///   });
///   auto c = compress::parse("sign(0.5)");
/// @endcode
/// Thread-safe.
class registry {
 public:
  /// Makes a codec from the text between a name's parentheses ("" without them).
  using factory = std::function<codec(std::string_view parameters)>;

  /// A registry of the shipped compressors: none, fp16, bf16, top_k(RATIO), two_bit(THRESHOLD).
  registry() { add_shipped(); }

  /// The registry parse() reads.
  static registry& global() {
    static registry r;
    return r;
  }

  /// Registers @p name (letters, digits and '_'), written as @p usage in error messages
  /// ("top_k(RATIO)"), made by @p make.
  /// @throws dsgd::error(errc::invalid_argument) for a name that is empty, has other characters
  ///         or is registered already
  void add(std::string name, std::string usage, factory make) {
    const bool word = !name.empty() && name.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789_") == std::string::npos;
    if (!word)
      throw error(errc::invalid_argument,
                  "compress::registry::add: name \"" + name + "\" must be letters, digits and '_'");
    std::lock_guard lock(mutex_);
    if (find(name))
      throw error(errc::invalid_argument, "compress::registry::add: \"" + name + "\" is registered already");
    entries_.push_back({std::move(name), std::move(usage), std::move(make)});
  }

  /// @returns the codec @p text names: "NAME" or "NAME(PARAMETERS)".
  /// @throws dsgd::error(errc::invalid_argument) "compression \"<text>\": ..." for a name that is
  ///         not registered (listing those that are) or parameters its factory refuses
  codec parse(std::string_view text) const {
    const auto bad = [&](const std::string& why) {
      return error(errc::invalid_argument, "compression \"" + std::string(text) + "\": " + why);
    };
    const auto open = text.find('(');
    const std::string name(text.substr(0, open));
    std::string parameters;
    if (open != std::string_view::npos) {
      if (text.back() != ')') throw bad("expected " + name + "(...), with a closing parenthesis");
      parameters = text.substr(open + 1, text.size() - open - 2);
    }
    entry e;
    {
      std::lock_guard lock(mutex_);
      const auto* found = find(name);
      if (!found) throw bad("expected " + usages_locked());
      e = *found;
    }
    try {
      return e.make(parameters);
    } catch (const error& x) {
      throw bad(std::string(x.what()) + " (usage: " + e.usage + ")");
    }
  }

  /// @returns every registered compressor's usage, "none, fp16, ... or two_bit(THRESHOLD)".
  std::string usages() const {
    std::lock_guard lock(mutex_);
    return usages_locked();
  }

  /// @returns @p parameters as one number, for a factory.
  /// @throws dsgd::error(errc::invalid_argument) "<name> takes one number, not \"...\""
  static float number(std::string_view parameters, std::string_view name) {
    const std::string text(parameters);
    std::size_t used = 0;
    float v = 0;
    try {
      v = std::stof(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size())
      throw error(errc::invalid_argument, std::string(name) + " takes one number, not \"" + text + "\"");
    return v;
  }

  /// For a factory of a compressor without parameters. @throws dsgd::error(errc::invalid_argument)
  static void no_parameters(std::string_view parameters, std::string_view name) {
    if (!parameters.empty())
      throw error(errc::invalid_argument,
                  std::string(name) + " takes no parameters, not \"" + std::string(parameters) + "\"");
  }

 private:
  struct entry {
    std::string name;
    std::string usage;
    factory make;
  };

  const entry* find(std::string_view name) const {
    for (const auto& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }

  void add_shipped() {
    const auto plain = [this]<class C>(C c) {
      add(std::string(C::name), std::string(C::name), [c](std::string_view p) {
        no_parameters(p, C::name);
        return codec(c);
      });
    };
    plain(none{});
    plain(fp16{});
    plain(bf16{});
    // Their parameters checked as a selection's are (validate).
    add("top_k", "top_k(RATIO)", [](std::string_view p) {
      codec c = top_k{number(p, "top_k")};
      validate(c, "top_k");
      return c;
    });
    add("two_bit", "two_bit(THRESHOLD)", [](std::string_view p) {
      codec c = two_bit{number(p, "two_bit")};
      validate(c, "two_bit");
      return c;
    });
  }

  std::string usages_locked() const {
    std::string out;
    std::size_t i = 0;
    for (const auto& e : entries_) {
      if (i > 0) out += i + 1 == entries_.size() ? " or " : ", ";
      ++i;
      out += e.usage;
    }
    return out;
  }

  mutable std::mutex mutex_;
  std::vector<entry> entries_;  // in the order added
};

/// registry::global().parse(@p text): "none", "fp16", "bf16", "top_k(0.01)", "two_bit(0.5)" or
/// a name a program registered. @throws dsgd::error(errc::invalid_argument)
inline codec parse(std::string_view text) { return registry::global().parse(text); }

}  // namespace dsgd::compress
