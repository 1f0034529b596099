// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/detail/crc32c.hpp>.
#include <dsgd/detail/crc32c.hpp>

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string_view>
#include <vector>

BOOST_AUTO_TEST_SUITE(crc32c_test)

namespace {

std::span<const std::byte> bytes_of(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(transport_crc32c)

BOOST_AUTO_TEST_CASE(known_vectors_match_the_castagnoli_check_values) {
  BOOST_TEST(dsgd::detail::crc32c(bytes_of("123456789")) == 0xE3069283u);
  BOOST_TEST(dsgd::detail::crc32c(bytes_of("")) == 0u);
  // RFC 3720 (iSCSI) appendix B.4: 32 bytes of zeros and 32 bytes of 0xFF.
  std::vector<std::byte> zeros(32, std::byte{0}), ones(32, std::byte{0xFF});
  BOOST_TEST(dsgd::detail::crc32c(zeros) == 0x8A9136AAu);
  BOOST_TEST(dsgd::detail::crc32c(ones) == 0x62A8AB43u);
  BOOST_TEST(dsgd::detail::crc::crc32c_portable(0, zeros.data(), zeros.size()) == 0x8A9136AAu);
}

BOOST_AUTO_TEST_CASE(extending_piecewise_equals_one_pass) {
  std::string_view text = "The quick brown fox jumps over the lazy dog";
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    auto first = dsgd::detail::crc32c(bytes_of(text.substr(0, cut)));
    BOOST_TEST(dsgd::detail::crc32c_extend(first, bytes_of(text.substr(cut))) == dsgd::detail::crc32c(bytes_of(text)));
  }
}

BOOST_AUTO_TEST_CASE(hardware_and_portable_paths_agree_on_random_buffers) {
  BOOST_TEST_MESSAGE("crc32c hardware accelerated: " << dsgd::detail::crc32c_is_hardware_accelerated());
  std::mt19937 rng(12345);
  std::vector<std::byte> buf(70001);
  for (auto& b : buf) b = static_cast<std::byte>(rng());
  for (std::size_t length : {1u, 3u, 7u, 8u, 9u, 15u, 17u, 63u, 255u, 4097u, 70001u}) {
    for (std::size_t start : {0u, 1u, 5u}) {
      if (start + length > buf.size()) continue;
      const std::byte* p = buf.data() + start;
      const auto portable = dsgd::detail::crc::crc32c_portable(0x1234u, p, length);
      BOOST_TEST(dsgd::detail::crc32c_extend(0x1234u, {p, length}) == portable,
                 "length " << length << " start " << start);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_single_flipped_bit_changes_the_crc) {
  std::vector<std::byte> buf(1000, std::byte{0x5A});
  const auto before = dsgd::detail::crc32c(buf);
  buf[517] ^= std::byte{0x04};
  BOOST_TEST(dsgd::detail::crc32c(buf) != before);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
