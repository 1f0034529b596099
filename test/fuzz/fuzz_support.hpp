// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Support for the fuzz targets in this directory. Each target defines LLVMFuzzerTestOneInput
// (libFuzzer's entry point) and dsgd::fuzz::seeds() (valid inputs built with the library's own
// encoders). The same target file links either with libFuzzer (-fsanitize=fuzzer) or with
// replay_main.cpp, which runs the seeds, the files of test/fuzz/corpus/<target>/ and a few
// thousand deterministic mutations of them, so that the ordinary test suite exercises every
// target with any compiler.
//
// The contract a target checks: every input either decodes, or raises dsgd::error. Any other
// exception escapes the target (libFuzzer reports it as a crash; the replay counts a failure),
// a broken invariant calls fail(), and an allocation out of proportion to the input is caught
// by the allocation tracker (fuzz_support.cpp).
#pragma once

#include <dsgd/error.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace dsgd::fuzz {

/// Valid inputs of this target, each a complete input of LLVMFuzzerTestOneInput.
std::vector<std::string> seeds();

/// Reports a broken invariant for the input being run (its bytes in hex) and aborts.
[[noreturn]] void fail(std::string_view what);

/// Calls fail(what) unless @p ok.
inline void check(bool ok, std::string_view what) {
  if (!ok) fail(what);
}

/// Runs @p f; a dsgd::error is the documented way to refuse an input and is swallowed.
/// @returns true when @p f returned normally
template <class F>
bool decodes(F&& f) {
  try {
    f();
    return true;
  } catch (const dsgd::error&) {
    return false;
  }
}

/// Starts tracking allocations for one input: forgets the largest allocation seen so far.
void begin_input(std::span<const std::uint8_t> input);

/// Ends one input: fails if any single allocation while it ran was larger than
/// @p fixed_bytes + @p per_input_byte * input size. A decoder must allocate in proportion to
/// what it received, whatever lengths and counts those bytes claim.
void end_input(std::size_t fixed_bytes = std::size_t{64} << 10, std::size_t per_input_byte = 32);

/// Calls begin_input() on construction and end_input() on destruction, but only when the
/// target returns normally (an exception escaping is reported on its own).
class input_scope {
 public:
  explicit input_scope(std::span<const std::uint8_t> input) : uncaught_(std::uncaught_exceptions()) {
    begin_input(input);
  }
  input_scope(const input_scope&) = delete;
  input_scope& operator=(const input_scope&) = delete;
  ~input_scope() {
    if (std::uncaught_exceptions() == uncaught_) end_input();
  }

 private:
  int uncaught_;
};

/// A cursor over the fuzz input that hands out fields and never reads past the end (missing
/// bytes read as zero), so that every input maps to some structured value.
class input_reader {
 public:
  explicit input_reader(std::span<const std::uint8_t> in) : in_(in) {}

  /// @returns the next byte, or 0 past the end.
  std::uint8_t byte() { return pos_ < in_.size() ? in_[pos_++] : 0; }
  /// @returns the next @p n bytes, zero-padded past the end.
  std::vector<std::byte> bytes(std::size_t n) {
    std::vector<std::byte> out(n);
    for (auto& b : out) b = static_cast<std::byte>(byte());
    return out;
  }
  /// @returns the next little-endian value of type U.
  template <class U>
  U le() {
    U v = 0;
    for (std::size_t i = 0; i < sizeof(U); ++i) v |= static_cast<U>(static_cast<U>(byte()) << (8 * i));
    return v;
  }
  /// @returns everything not yet read.
  std::string_view rest() {
    std::string_view out(reinterpret_cast<const char*>(in_.data()) + pos_, in_.size() - pos_);
    pos_ = in_.size();
    return out;
  }
  std::size_t remaining() const noexcept { return in_.size() - pos_; }

 private:
  std::span<const std::uint8_t> in_;
  std::size_t pos_ = 0;
};

/// @returns @p b's bytes as a string (for seeds).
template <class Bytes>
std::string as_string(const Bytes& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

}  // namespace dsgd::fuzz
