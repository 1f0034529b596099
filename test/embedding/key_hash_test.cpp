// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/embedding/key_hash.hpp>: XXH64 against vectors computed by the reference
// xxHash library (libxxhash 0.8, XXH64() called from Python through ctypes) on strings and on
// a buffer whose prefixes reach every branch of the algorithm (lengths 0..200, both sides of 4,
// 8 and 32 bytes), with seed 0 and another seed; the published XXH64("") vector; evaluation in
// constant expressions; and key_space: features never collide, the key inverts, bad features
// are named.
#include <dsgd/embedding/key_hash.hpp>

#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

BOOST_AUTO_TEST_SUITE(embedding_key_hash_test)

namespace {

namespace emb = dsgd::embedding;

constexpr std::uint64_t other_seed = 0x9E3779B97F4A7C15ull;

struct text_vector {
  const char* text;
  std::uint64_t seed0;
  std::uint64_t seed_other;
};
std::ostream& operator<<(std::ostream& os, const text_vector& v) { return os << '"' << v.text << '"'; }

// XXH64(text, 0) and XXH64(text, 0x9E3779B97F4A7C15) from libxxhash.so.0 (0.8.1).
const text_vector text_vectors[] = {
    {"", 0xef46db3751d8e999ull, 0xc4349fc93c010000ull},
    {"a", 0xd24ec4f1a98c6e5bull, 0x9a7c6d2ea45568c9ull},
    {"abc", 0x44bc2cf5ad770999ull, 0x2ed0f59d6b43ac8bull},
    {"message digest", 0x066ed728fceeb3beull, 0xdd80ff412a4892a0ull},
    {"abcdefghijklmnopqrstuvwxyz", 0xcfe1f278fa89835cull, 0x9c220416fea109c1ull},
    {"C1:68fd1e64", 0xe3e8f01dd64a85b2ull, 0x123db6d57cc1e2a3ull},
    {"The quick brown fox jumps over the lazy dog", 0x0b242d361fda71bcull, 0x7cfac66832f66b74ull},
};

struct prefix_vector {
  std::size_t length;
  std::uint64_t seed0;
  std::uint64_t seed_other;
};
std::ostream& operator<<(std::ostream& os, const prefix_vector& v) { return os << v.length << " bytes"; }

/// Byte i of the buffer the prefix vectors hash: (131 i + 17) mod 256.
std::vector<std::byte> buffer() {
  std::vector<std::byte> b(200);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::byte>((i * 131 + 17) % 256);
  return b;
}

// XXH64 of buffer()[0, length) from libxxhash.so.0, seed 0 and 0x9E3779B97F4A7C15.
const prefix_vector prefix_vectors[] = {
    {1, 0xad10cd9780ac4ff7ull, 0xeee0b6d27c96399cull},   {3, 0x40626d96276e4594ull, 0x93ba463a084767e9ull},
    {4, 0x882207c122c76e23ull, 0xd0c267b9ee1e5859ull},   {5, 0xa3da885eec618bb4ull, 0x23d1fba39d5ed127ull},
    {7, 0xcfc90033aa9dac4full, 0xd684eda4399035afull},   {8, 0x90fda2f089fa86deull, 0x7dec350536051091ull},
    {9, 0xa80deb192b8c5215ull, 0xc68206e0d3699c4dull},   {12, 0x333861b25fd6348bull, 0xc3318452efb10ff8ull},
    {15, 0x59f95bad12d14c9dull, 0x31d5801999d1c65eull},  {16, 0x3a5b1165d151aa50ull, 0xe6c09e8a168a56c0ull},
    {17, 0xc0bbb6ac5dbefe29ull, 0xc0cae4f1374de2c9ull},  {31, 0x44cc9efe5d2d0233ull, 0x0fb3b15a174b3ff1ull},
    {32, 0x0e1aab1d173cf196ull, 0x860a935aa1fdd66bull},  {33, 0x5c820b4b4fe28fdcull, 0x3b00a6ef0416e4a4ull},
    {47, 0xa4d02f0326869446ull, 0x93dfa79dc4ebb8a9ull},  {63, 0x1153d36cade87066ull, 0x56b32cfa14b03d74ull},
    {64, 0xd4c20ef54cbc9f67ull, 0xf6fb8b57d2e5f8f6ull},  {65, 0xac086c9b87baea67ull, 0xb3f69fad4838f9c3ull},
    {100, 0x7f8375f3e09d8123ull, 0x72a72996bc4434acull}, {127, 0x5493aa81f81fd0d9ull, 0xb2026c466a558ba1ull},
    {128, 0x9441529208fcb7ecull, 0x28ac83ec62b936eeull}, {199, 0x3527365aa36fb515ull, 0xfa0104fd30e1195dull},
    {200, 0x18005b73212257b8ull, 0x239bf78d8def9418ull},
};

}  // namespace

// xxHash's own documentation gives XXH64 of the empty input with seed 0; checked at compile time.
static_assert(emb::xxhash64(std::string_view{}) == 0xEF46DB3751D8E999ull);
static_assert(emb::string_key("abc") == 0x44bc2cf5ad770999ull);
static_assert(emb::key_space(26).feature_bits() == 5);
static_assert(emb::key_space(1).feature_bits() == 0);
static_assert(emb::key_space(26).feature_of(emb::key_space(26).key(25, std::uint64_t{12345})) == 25);

BOOST_DATA_TEST_CASE(xxhash64_of_strings_matches_the_reference_library, boost::unit_test::data::make(text_vectors), v) {
  BOOST_TEST(emb::xxhash64(std::string_view(v.text)) == v.seed0);
  BOOST_TEST(emb::xxhash64(std::string_view(v.text), other_seed) == v.seed_other);
  BOOST_TEST(emb::string_key(v.text) == v.seed0);
}

BOOST_DATA_TEST_CASE(xxhash64_of_every_branch_length_matches_the_reference_library,
                     boost::unit_test::data::make(prefix_vectors), v) {
  const std::vector<std::byte> b = buffer();
  const std::span<const std::byte> prefix(b.data(), v.length);
  BOOST_TEST(emb::xxhash64(prefix) == v.seed0);
  BOOST_TEST(emb::xxhash64(prefix, other_seed) == v.seed_other);
  // The same bytes as chars hash the same (bytes are read one at a time, never reinterpreted).
  std::string s(v.length, '\0');
  for (std::size_t i = 0; i < v.length; ++i) s[i] = static_cast<char>(b[i]);
  BOOST_TEST(emb::xxhash64(std::string_view(s)) == v.seed0);
}

BOOST_AUTO_TEST_CASE(xxhash64_reads_unaligned_input) {
  const std::vector<std::byte> b = buffer();
  std::vector<std::byte> shifted(b.size() + 3);
  for (std::size_t i = 0; i < b.size(); ++i) shifted[i + 3] = b[i];
  BOOST_TEST(emb::xxhash64(std::span<const std::byte>(shifted.data() + 3, 100)) == 0x7f8375f3e09d8123ull);
}

BOOST_AUTO_TEST_CASE(features_of_a_shared_space_never_share_a_key) {
  const emb::key_space space(26);
  BOOST_TEST(space.features() == 26u);
  BOOST_TEST(space.id_bits() == 59);
  // The same ids, and ids equal in their kept bits, in every feature: 26 x 1000 distinct keys.
  std::unordered_set<std::uint64_t> keys;
  for (std::size_t f = 0; f < 26; ++f)
    for (std::uint64_t id = 0; id < 1000; ++id) {
      const std::uint64_t k = space.key(f, id);
      keys.insert(k);
      BOOST_TEST(space.feature_of(k) == f);
      BOOST_TEST(space.id_of(k) == id);
    }
  BOOST_TEST(keys.size() == 26u * 1000u);
  // Ids that differ only in the bits the space drops map to the same key of a feature.
  BOOST_TEST(space.key(3, std::uint64_t{7}) == space.key(3, (std::uint64_t{1} << 63) | 7));
}

BOOST_AUTO_TEST_CASE(string_values_key_by_their_xxhash64_in_each_feature) {
  const emb::key_space space(26);
  const std::uint64_t h = 0xe3e8f01dd64a85b2ull;  // XXH64("C1:68fd1e64")
  BOOST_TEST(space.key(0, "C1:68fd1e64") == space.key(0, h));
  BOOST_TEST(space.id_of(space.key(0, "C1:68fd1e64")) == (h & (~std::uint64_t{0} >> 5)));
  BOOST_TEST(space.key(0, "x") != space.key(1, "x"));
}

BOOST_AUTO_TEST_CASE(keys_of_small_ids_are_spread_over_all_bits) {
  // The low 10 bits of 4096 consecutive ids' keys fill 1024 buckets about evenly: a placement or
  // a hash table reading low bits stays balanced.
  const emb::key_space space(4);
  std::vector<int> buckets(1024);
  for (std::uint64_t id = 0; id < 4096; ++id) ++buckets[space.key(2, id) & 1023];
  int most = 0;
  for (int c : buckets) most = std::max(most, c);
  BOOST_TEST(most <= 16);  // Poisson(4): P(any of 1024 buckets > 16) = 0.001 for a random function
}

BOOST_AUTO_TEST_CASE(a_space_of_one_feature_keeps_every_id_bit) {
  const emb::key_space space(1);
  BOOST_TEST(space.id_bits() == 64);
  const std::uint64_t id = 0xfedcba9876543210ull;
  BOOST_TEST(space.id_of(space.key(0, id)) == id);
  BOOST_TEST(space.key(0, id) != space.key(0, id ^ (std::uint64_t{1} << 63)));
  BOOST_TEST(emb::key_space(2).feature_bits() == 1);
  BOOST_TEST(emb::key_space(3).feature_bits() == 2);
}

BOOST_AUTO_TEST_CASE(bad_features_are_named) {
  BOOST_CHECK_EXCEPTION(emb::key_space(0), dsgd::error, [](const dsgd::error& e) {
    return e.code() == dsgd::errc::invalid_argument && std::string(e.what()).find("features") != std::string::npos;
  });
  const emb::key_space space(26);
  BOOST_CHECK_EXCEPTION(space.key(26, std::uint64_t{1}), dsgd::error, [](const dsgd::error& e) {
    return std::string(e.what()).find("feature 26 is out of range") != std::string::npos;
  });
}

BOOST_AUTO_TEST_SUITE_END()
