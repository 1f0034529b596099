// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Little-endian encoding into a byte string and bounds-checked decoding out of one, for the
/// checkpoint and event files. Every read names the file and the byte offset it failed at.
#pragma once

#include <dsgd/error.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace dsgd::detail {

/// Appends @p v to @p out as little-endian bytes.
template <class T>
void put_le(std::string& out, T v) {
  static_assert(std::is_integral_v<T> || std::is_floating_point_v<T>);
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  if constexpr (std::endian::native == std::endian::big)
    for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(bytes[i], bytes[sizeof(T) - 1 - i]);
  out.append(reinterpret_cast<const char*>(bytes), sizeof(T));
}

/// Reads a little-endian @p T from @p p (which must hold sizeof(T) bytes).
template <class T>
T get_le(const std::byte* p) noexcept {
  unsigned char bytes[sizeof(T)];
  std::memcpy(bytes, p, sizeof(T));
  if constexpr (std::endian::native == std::endian::big)
    for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(bytes[i], bytes[sizeof(T) - 1 - i]);
  T v;
  std::memcpy(&v, bytes, sizeof(T));
  return v;
}

/// Appends @p values as little-endian float32 bytes (a plain copy on little-endian hosts).
inline void put_floats(std::string& out, std::span<const float> values) {
  if constexpr (std::endian::native == std::endian::little) {
    out.append(reinterpret_cast<const char*>(values.data()), values.size_bytes());
  } else {
    for (float v : values) put_le(out, v);
  }
}

/// Copies @p count little-endian float32 values from @p p into @p out.
inline void get_floats(const std::byte* p, std::size_t count, float* out) noexcept {
  if constexpr (std::endian::native == std::endian::little) {
    if (count) std::memcpy(out, p, count * sizeof(float));
  } else {
    for (std::size_t i = 0; i < count; ++i) out[i] = get_le<float>(p + 4 * i);
  }
}

/// A cursor over the bytes of one file that throws errc::checkpoint_corrupt, naming the file,
/// the field and the offset, instead of reading past the end.
class byte_reader {
 public:
  byte_reader(std::span<const std::byte> bytes, std::string file) : bytes_(bytes), file_(std::move(file)) {}

  std::size_t offset() const noexcept { return pos_; }
  std::size_t remaining() const noexcept { return bytes_.size() - pos_; }
  std::span<const std::byte> bytes() const noexcept { return bytes_; }
  const std::string& file() const noexcept { return file_; }

  /// Throws unless @p n more bytes are there for @p what.
  void need(std::size_t n, std::string_view what) const {
    if (n > remaining())
      fail("truncated: " + std::string(what) + " needs " + std::to_string(n) + " bytes at offset " +
           std::to_string(pos_) + " but the file has " + std::to_string(bytes_.size()) + " bytes");
  }

  template <class T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v = get_le<T>(bytes_.data() + pos_);
    pos_ += sizeof(T);
    return v;
  }

  /// @returns a view of the next @p n bytes and moves past them.
  std::span<const std::byte> take(std::size_t n, std::string_view what) {
    need(n, what);
    auto s = bytes_.subspan(pos_, n);
    pos_ += n;
    return s;
  }

  [[noreturn]] void fail(const std::string& message) const {
    throw error(errc::checkpoint_corrupt, file_ + ": " + message);
  }

 private:
  std::span<const std::byte> bytes_;
  std::string file_;
  std::size_t pos_ = 0;
};

/// @returns @p s viewed as bytes.
inline std::span<const std::byte> as_bytes(std::string_view s) noexcept {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace dsgd::detail
