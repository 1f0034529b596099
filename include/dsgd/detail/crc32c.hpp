// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// CRC-32C (Castagnoli), the checksum of frame headers and payloads, checkpoint files and
/// event records: a neutral helper below every layer. Uses the SSE4.2 crc32
/// instruction when the CPU has it (checked once at run time, so no -msse4.2 is needed) and
/// Boost.CRC otherwise.
#pragma once

#include <boost/crc.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__)
#define DSGD_DETAIL_CRC32C_SSE42 1
#include <nmmintrin.h>
#else
#define DSGD_DETAIL_CRC32C_SSE42 0
#endif

namespace dsgd::detail {

namespace crc {

constexpr std::uint32_t reflect32(std::uint32_t v) noexcept {
  std::uint32_t r = 0;
  for (int i = 0; i < 32; ++i) {
    r = (r << 1) | (v & 1u);
    v >>= 1;
  }
  return r;
}

/// The table-driven CRC-32C from Boost.CRC, continued from the finished CRC @p crc.
inline std::uint32_t crc32c_portable(std::uint32_t crc, const std::byte* data, std::size_t size) noexcept {
  // Boost keeps its remainder reflected and un-inverted; seeding it with reflect(~crc) continues
  // a finished CRC exactly where it stopped.
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> engine(reflect32(~crc));
  engine.process_bytes(data, size);
  return engine.checksum();
}

/// The reflected CRC-32C polynomial, as the crc32 instruction and Boost.CRC use it.
inline constexpr std::uint32_t crc32c_polynomial = 0x82F63B78u;

/// (a * b) mod P for polynomials over GF(2) in the reflected representation of a CRC register
/// (bit 31 is x^0, bit 0 is x^31).
constexpr std::uint32_t crc32c_multiply(std::uint32_t a, std::uint32_t b) noexcept {
  std::uint32_t product = 0;
  for (std::uint32_t bit = 1u << 31; bit != 0; bit >>= 1) {
    if ((a & bit) != 0) product ^= b;
    b = (b & 1u) != 0 ? (b >> 1) ^ crc32c_polynomial : b >> 1;
  }
  return product;
}

/// x^(8 * bytes) mod P: multiplying an un-inverted CRC register by it is what feeding it
/// @p bytes zero bytes does.
constexpr std::uint32_t crc32c_zeros_operator(std::size_t bytes) noexcept {
  std::uint32_t result = 1u << 31;  // x^0
  std::uint32_t power = 1u << 23;   // x^8, one byte
  for (; bytes != 0; bytes >>= 1) {
    if ((bytes & 1) != 0) result = crc32c_multiply(result, power);
    power = crc32c_multiply(power, power);
  }
  return result;
}

#if DSGD_DETAIL_CRC32C_SSE42
/// Three crc32 streams over consecutive blocks of @p block bytes each, 3 * block bytes per
/// round, for as long as whole rounds fit. The instruction's latency is three times its
/// issue interval, so one stream leaves two thirds of the unit idle; independent streams fill
/// it. The CRC is linear, so crc(A B C) = (crc(A) x^|B| + crc(B)) x^|C| + crc(C), with the
/// register of B and C started at 0: two multiplications join the streams after each round.
template <std::size_t Block>
__attribute__((target("sse4.2"))) inline std::uint64_t crc32c_sse42_rounds(std::uint64_t state, const std::byte*& data,
                                                                           std::size_t& size) noexcept {
  static_assert(Block % 8 == 0);
  constexpr std::uint32_t shift = crc32c_zeros_operator(Block);
  while (size >= 3 * Block) {
    std::uint64_t a = state, b = 0, c = 0;
    for (std::size_t i = 0; i < Block; i += 8) {
      std::uint64_t wa, wb, wc;
      std::memcpy(&wa, data + i, 8);
      std::memcpy(&wb, data + Block + i, 8);
      std::memcpy(&wc, data + 2 * Block + i, 8);
      a = _mm_crc32_u64(a, wa);
      b = _mm_crc32_u64(b, wb);
      c = _mm_crc32_u64(c, wc);
    }
    state =
        crc32c_multiply(crc32c_multiply(static_cast<std::uint32_t>(a), shift) ^ static_cast<std::uint32_t>(b), shift) ^
        static_cast<std::uint32_t>(c);
    data += 3 * Block;
    size -= 3 * Block;
  }
  return state;
}

/// The same CRC with the SSE4.2 crc32 instruction, 8 bytes per step.
__attribute__((target("sse4.2"))) inline std::uint32_t crc32c_sse42(std::uint32_t crc, const std::byte* data,
                                                                    std::size_t size) noexcept {
  std::uint64_t state = ~crc;
  state = crc32c_sse42_rounds<16384>(state, data, size);
  state = crc32c_sse42_rounds<512>(state, data, size);
  while (size >= 8) {
    std::uint64_t word;
    std::memcpy(&word, data, 8);  // the instruction consumes little-endian words, as x86 stores
    state = _mm_crc32_u64(state, word);
    data += 8;
    size -= 8;
  }
  auto state32 = static_cast<std::uint32_t>(state);
  while (size > 0) {
    state32 = _mm_crc32_u8(state32, static_cast<unsigned char>(*data));
    ++data;
    --size;
  }
  return ~state32;
}

inline bool cpu_has_sse42() noexcept {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace crc

/// @returns true when crc32c_extend() runs on the SSE4.2 instruction rather than the table.
inline bool crc32c_is_hardware_accelerated() noexcept {
#if DSGD_DETAIL_CRC32C_SSE42
  return crc::cpu_has_sse42();
#else
  return false;
#endif
}

/// Continues a CRC-32C over more bytes: `crc32c_extend(crc32c(a), b) == crc32c(a + b)`.
/// @param crc a finished CRC-32C of the bytes so far (0 for none)
/// @param data the bytes that follow them
/// @returns the finished CRC-32C of all bytes
inline std::uint32_t crc32c_extend(std::uint32_t crc, std::span<const std::byte> data) noexcept {
#if DSGD_DETAIL_CRC32C_SSE42
  if (crc::cpu_has_sse42()) return crc::crc32c_sse42(crc, data.data(), data.size());
#endif
  return crc::crc32c_portable(crc, data.data(), data.size());
}

/// @returns the CRC-32C (Castagnoli) of @p data; `crc32c("123456789") == 0xE3069283`.
inline std::uint32_t crc32c(std::span<const std::byte> data) noexcept { return crc32c_extend(0, data); }

}  // namespace dsgd::detail

#undef DSGD_DETAIL_CRC32C_SSE42
