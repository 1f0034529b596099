// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/data/ctr_file.hpp> and <dsgd/data/ctr_batch.hpp>: the byte layout, a round
// trip of click-stream examples, shards that cover every record once, looping over epochs and
// resuming, batches larger than a shard, every damaged file rejected naming the file and the
// check (header fields, size, a bad label, probability, dense value or padding), the writer's
// checks, an interrupted writer's file, and write errors naming the file.
#include <dsgd/data/click_stream.hpp>
#include <dsgd/data/ctr_batch.hpp>
#include <dsgd/data/ctr_file.hpp>

#include <support/error_checks.hpp>
#include <support/temp_dir.hpp>

#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

BOOST_AUTO_TEST_SUITE(ctr_file_test)

namespace {

namespace fs = std::filesystem;
using dsgd::errc;
using dsgd::data::ctr_batch;
using dsgd::data::ctr_file_header;
using dsgd::data::ctr_file_reader;
using dsgd::data::ctr_file_writer;
using dsgd::test::throws_named;
using stream = dsgd::data::click_stream;

constexpr std::uint32_t n_dense = stream::dense_features, n_fields = stream::categorical_features;

// The click stream's batches are the file's: a model takes either source.
static_assert(std::is_same_v<stream::batch, ctr_batch>);
// A reader and a writer own a file: moved, never copied.
static_assert(std::is_nothrow_move_constructible_v<ctr_file_writer> && !std::is_copy_constructible_v<ctr_file_writer>);
static_assert(std::is_move_constructible_v<ctr_file_reader> && !std::is_copy_constructible_v<ctr_file_reader>);

/// @returns examples @p first .. @p first + @p n - 1 of a small click stream.
ctr_batch examples(std::size_t n, std::uint64_t first = 0) {
  stream s({.seed = 3, .cardinality_scale = 0.01});
  ctr_batch b;
  s.fill(first, n, b);
  return b;
}

/// Writes @p b to @p path (with the teacher's probabilities).
void write_file(const fs::path& path, const ctr_batch& b) {
  ctr_file_writer w(path, n_dense, n_fields, dsgd::data::ctr_file_probabilities);
  w.write(b);
  w.close();
}

/// @returns every batch of @p o's shard until the empty one.
std::vector<ctr_batch> read_all(const ctr_file_reader::options& o) {
  ctr_file_reader r(o);
  std::vector<ctr_batch> out;
  for (;;) {
    const auto& b = r.next();
    if (b.size == 0) break;
    out.push_back(b);
  }
  return out;
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <class T>
void put(std::string& s, std::size_t at, T v) {
  static_assert(std::endian::native == std::endian::little, "the test patches bytes as a little-endian host");
  std::memcpy(s.data() + at, &v, sizeof v);
}

template <class T>
T get(const std::string& s, std::size_t at) {
  T v;
  std::memcpy(&v, s.data() + at, sizeof v);
  return v;
}

/// Checks that example @p r of @p a is example @p s of @p b, bit for bit.
bool same_example(const ctr_batch& a, std::size_t r, const ctr_batch& b, std::size_t s) {
  return std::memcmp(a.dense_row(r).data(), b.dense_row(s).data(), 4 * a.dense_features) == 0 &&
         std::memcmp(a.keys_row(r).data(), b.keys_row(s).data(), 8 * a.fields) == 0 && a.labels[r] == b.labels[s] &&
         a.probabilities[r] == b.probabilities[s];
}

}  // namespace

BOOST_AUTO_TEST_CASE(record_bytes_follow_the_layout) {
  BOOST_TEST((ctr_file_header{0, 1, 0, 0}.record_bytes()) == 16u);                // 8 + 8
  BOOST_TEST((ctr_file_header{1, 1, 0, 0}.record_bytes()) == 24u);                // 12 -> 16, + 8
  BOOST_TEST((ctr_file_header{2, 3, 0, 0}.record_bytes()) == 40u);                // 16 + 24
  BOOST_TEST((ctr_file_header{n_dense, n_fields, 1, 0}.record_bytes()) == 272u);  // 60 -> 64, + 208
  BOOST_TEST((ctr_file_header{0, 1, 1, 0}.has_probabilities()));
  BOOST_TEST(!(ctr_file_header{0, 1, 0, 0}.has_probabilities()));
}

BOOST_AUTO_TEST_CASE(the_bytes_are_the_documented_layout) {
  dsgd::test::temp_dir dir("ctr_file_layout_");
  const auto path = dir.path / "x.ctr";
  {
    ctr_file_writer w(path, 3, 2, dsgd::data::ctr_file_probabilities);
    const std::vector<float> d0{1.5f, -2.f, 0.25f}, d1{0, 0, 7};
    const std::vector<std::uint64_t> k0{1, 0xffffffffffffffffull}, k1{42, 0x8000000000000000ull};
    w.write(d0, k0, 1.f, 0.75f);
    w.write(d1, k1, 0.f, 0.125f);
    BOOST_TEST(w.examples() == 2u);
  }  // the destructor finishes it
  const auto bytes = dsgd::test::slurp(path);
  BOOST_TEST_REQUIRE(bytes.size() == 64u + 2 * 40);
  BOOST_TEST(bytes.substr(0, 8) == "DSGDCTR1");
  BOOST_TEST(get<std::uint32_t>(bytes, 8) == 1u);
  BOOST_TEST(get<std::uint32_t>(bytes, 12) == 3u);
  BOOST_TEST(get<std::uint32_t>(bytes, 16) == 2u);
  BOOST_TEST(get<std::uint32_t>(bytes, 20) == 1u);
  BOOST_TEST(get<std::uint64_t>(bytes, 24) == 2u);
  BOOST_TEST((bytes.substr(32, 32) == std::string(32, '\0')));
  // Record 1: label, probability, 3 dense, 4 bytes of padding, 2 keys.
  const std::size_t r1 = 64 + 40;
  BOOST_TEST(get<float>(bytes, r1) == 0.f);
  BOOST_TEST(get<float>(bytes, r1 + 4) == 0.125f);
  BOOST_TEST(get<float>(bytes, r1 + 16) == 7.f);
  BOOST_TEST(get<std::uint32_t>(bytes, r1 + 20) == 0u);
  BOOST_TEST(get<std::uint64_t>(bytes, r1 + 24) == 42u);
  BOOST_TEST(get<std::uint64_t>(bytes, r1 + 32) == 0x8000000000000000ull);
  BOOST_TEST(get<std::uint64_t>(bytes, 64 + 32) == 0xffffffffffffffffull);
  BOOST_TEST((dsgd::data::read_ctr_file_header(path) == ctr_file_header{3, 2, 1, 2}));
}

BOOST_AUTO_TEST_CASE(click_stream_examples_read_back_bit_for_bit) {
  dsgd::test::temp_dir dir("ctr_file_round_trip_");
  const auto path = dir.path / "train.ctr";
  const auto b = examples(1000, 5);
  {
    ctr_file_writer w(path, n_dense, n_fields, dsgd::data::ctr_file_probabilities);
    for (std::size_t r = 0; r < 10; ++r) w.write(b.dense_row(r), b.keys_row(r), b.labels[r], b.probabilities[r]);
    ctr_batch rest = examples(990, 15);
    w.write(rest);
    BOOST_TEST(w.header().examples == 1000u);
    w.close();
    w.close();  // a second close does nothing
  }
  BOOST_TEST(fs::file_size(path) == 64u + 1000u * 272u);
  const auto h = dsgd::data::read_ctr_file_header(path);
  BOOST_TEST((h == ctr_file_header{n_dense, n_fields, dsgd::data::ctr_file_probabilities, 1000}));
  // A read buffer of 3 records: a batch takes many reads.
  ctr_file_reader r({.path = path, .batch = 64, .buffer_bytes = 3 * 272 + 100});
  BOOST_TEST(r.examples() == 1000u);
  BOOST_TEST((r.header() == h));
  std::size_t seen = 0;
  for (const ctr_batch* got = &r.next(); got->size > 0; got = &r.next()) {
    BOOST_TEST(got->first == seen);
    BOOST_TEST(got->dense_features == n_dense);
    BOOST_TEST(got->fields == n_fields);
    for (std::size_t i = 0; i < got->size; ++i) BOOST_TEST_REQUIRE(same_example(*got, i, b, seen + i));
    seen += got->size;
  }
  BOOST_TEST(seen == 1000u);
  BOOST_TEST(r.epoch() == 0u);
  BOOST_TEST(r.position() == 1000u);
  BOOST_TEST(r.next().size == 0u);
}

BOOST_AUTO_TEST_CASE(files_without_probabilities_or_dense_features_round_trip) {
  dsgd::test::temp_dir dir("ctr_file_shapes_");
  for (std::uint32_t d : {0u, 1u, 2u}) {
    BOOST_TEST_CONTEXT("dense features " << d) {
      const auto path = dir.path / ("d" + std::to_string(d) + ".ctr");
      std::vector<float> dense(d);
      {
        ctr_file_writer w(path, d, 1);
        for (std::uint64_t i = 0; i < 7; ++i) {
          for (std::uint32_t j = 0; j < d; ++j) dense[j] = static_cast<float>(i) + 0.5f * static_cast<float>(j);
          const std::uint64_t key = i * 0x9e3779b97f4a7c15ull;
          w.write(dense, {&key, 1}, static_cast<float>(i % 2), 0.9f);  // no flag: the probability is not written
        }
        w.close();
      }
      BOOST_TEST(fs::file_size(path) == 64u + 7u * (ctr_file_header{d, 1, 0, 0}.record_bytes()));
      const auto batches = read_all({.path = path, .batch = 3});
      BOOST_TEST_REQUIRE(batches.size() == 3u);
      for (std::uint64_t i = 0; i < 7; ++i) {
        const auto& b = batches[i / 3];
        const std::size_t r = i % 3;
        BOOST_TEST(b.keys_row(r)[0] == i * 0x9e3779b97f4a7c15ull);
        BOOST_TEST(b.labels[r] == static_cast<float>(i % 2));
        BOOST_TEST(b.probabilities[r] == 0.f);
        for (std::uint32_t j = 0; j < d; ++j)
          BOOST_TEST(b.dense_row(r)[j] == static_cast<float>(i) + 0.5f * static_cast<float>(j));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(shards_cover_every_record_exactly_once) {
  dsgd::test::temp_dir dir("ctr_file_shards_");
  const auto path = dir.path / "x.ctr";
  constexpr std::size_t n = 103;
  const auto all = examples(n);
  write_file(path, all);
  for (std::size_t shards : {1u, 2u, 3u, 7u, 10u, 103u, 110u}) {
    BOOST_TEST_CONTEXT("shards " << shards) {
      std::vector<int> seen(n, 0);
      for (std::size_t k = 0; k < shards; ++k) {
        ctr_file_reader r({.path = path, .batch = 4, .shard = k, .shards = shards});
        const std::uint64_t begin = k * n / shards, end = (k + 1) * n / shards;
        BOOST_TEST(r.shard_begin() == begin);
        BOOST_TEST(r.examples() == end - begin);
        std::uint64_t next_first = begin;
        for (const ctr_batch* b = &r.next(); b->size > 0; b = &r.next()) {
          BOOST_TEST(b->first == next_first);
          BOOST_TEST(b->size <= 4u);
          for (std::size_t i = 0; i < b->size; ++i) {
            ++seen[b->first + i];
            BOOST_TEST_REQUIRE(same_example(*b, i, all, b->first + i));
          }
          next_first += b->size;
        }
        BOOST_TEST(next_first == end);
      }
      BOOST_TEST(std::count(seen.begin(), seen.end(), 1) == static_cast<std::ptrdiff_t>(n));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_looping_reader_wraps_counting_epochs_and_resumes_from_its_position) {
  dsgd::test::temp_dir dir("ctr_file_loop_");
  const auto path = dir.path / "x.ctr";
  write_file(path, examples(23));
  // Shard 1 of 2 is records 11..22 (12 of them): batches of 5, 5, 2 per epoch.
  ctr_file_reader r({.path = path, .batch = 5, .shard = 1, .shards = 2, .loop = true});
  BOOST_TEST(r.examples() == 12u);
  const std::vector<std::pair<std::uint64_t, std::size_t>> expected{{11, 5}, {16, 5}, {21, 2}, {11, 5},
                                                                    {16, 5}, {21, 2}, {11, 5}};
  const std::vector<std::uint64_t> epochs{0, 0, 0, 1, 1, 1, 2};
  std::vector<std::uint64_t> positions;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto& b = r.next();
    BOOST_TEST(b.first == expected[i].first);
    BOOST_TEST(b.size == expected[i].second);
    BOOST_TEST(r.epoch() == epochs[i]);
    positions.push_back(r.position());
  }
  BOOST_TEST(positions.back() == 29u);  // 2 epochs of 12 and 5
  // A reader made with first = position() goes on where another stopped: epoch 2, record 16.
  ctr_file_reader resumed({.path = path, .batch = 5, .shard = 1, .shards = 2, .loop = true, .first = 29});
  BOOST_TEST(resumed.epoch() == 2u);
  BOOST_TEST(resumed.position() == 29u);
  const auto& a = r.next();
  const ctr_batch copy = a;
  const auto& b = resumed.next();
  BOOST_TEST(b.first == 16u);
  BOOST_TEST(b.size == 5u);
  for (std::size_t i = 0; i < b.size; ++i) BOOST_TEST(same_example(b, i, copy, i));
  // Without loop, first skips part of the shard, and may be its end (nothing left).
  ctr_file_reader skipping({.path = path, .batch = 100, .shard = 1, .shards = 2, .first = 10});
  BOOST_TEST(skipping.next().first == 21u);
  BOOST_TEST(ctr_file_reader({.path = path, .first = 23}).next().size == 0u);
}

BOOST_AUTO_TEST_CASE(a_batch_larger_than_the_shard_is_the_whole_shard) {
  dsgd::test::temp_dir dir("ctr_file_big_batch_");
  const auto path = dir.path / "x.ctr";
  write_file(path, examples(10));
  for (std::size_t k = 0; k < 3; ++k) {
    ctr_file_reader r({.path = path, .batch = 1000, .shard = k, .shards = 3});
    const auto& b = r.next();
    BOOST_TEST(b.first == k * 10 / 3);
    BOOST_TEST(b.size == (k + 1) * 10 / 3 - k * 10 / 3);
    BOOST_TEST(r.next().size == 0u);
    BOOST_TEST(r.next().size == 0u);
  }
  ctr_file_reader looping({.path = path, .batch = 1000, .loop = true});
  for (std::uint64_t e = 0; e < 3; ++e) {
    BOOST_TEST(looping.next().size == 10u);
    BOOST_TEST(looping.epoch() == e);
  }
}

BOOST_AUTO_TEST_CASE(an_empty_file_has_empty_shards) {
  dsgd::test::temp_dir dir("ctr_file_empty_");
  const auto path = dir.path / "x.ctr";
  ctr_file_writer(path, 2, 3).close();
  BOOST_TEST(fs::file_size(path) == 64u);
  ctr_file_reader r({.path = path, .shard = 1, .shards = 2});
  BOOST_TEST(r.examples() == 0u);
  BOOST_TEST(r.next().size == 0u);
  BOOST_TEST(throws_named([&] { ctr_file_reader({.path = path, .loop = true}); }, errc::invalid_argument,
                          {"ctr_file_reader::options.loop", path.string(), "is empty"}));
}

namespace {

/// A damage done to a valid file of 8 examples (13 dense, 26 fields, probabilities) and what
/// the reader must say about it.
struct damage {
  const char* name;
  void (*apply)(std::string&);
  const char* says;
  bool in_header;  ///< found when the file is opened (else by next(), at record 5 or wherever)
};

std::ostream& operator<<(std::ostream& out, const damage& d) { return out << d.name; }

constexpr std::size_t record = 272;

const damage damages[] = {
    {"wrong magic", [](std::string& f) { f[3] = 'X'; }, "wrong magic: expected \"DSGDCTR1\", got \"DSGXCTR1\"", true},
    {"version 2", [](std::string& f) { put<std::uint32_t>(f, 8, 2); }, "unsupported version 2", true},
    {"fields 0", [](std::string& f) { put<std::uint32_t>(f, 16, 0); }, "fields is 0", true},
    {"unknown flag", [](std::string& f) { put<std::uint32_t>(f, 20, 5); }, "unknown flags 0x00000005", true},
    {"reserved byte", [](std::string& f) { f[40] = 1; }, "reserved header byte 40 is not zero", true},
    {"unfinished", [](std::string& f) { put<std::uint64_t>(f, 24, ~std::uint64_t{0}); }, "unfinished", true},
    {"truncated", [](std::string& f) { f.resize(f.size() - 10); },
     "wrong size: a 64-byte header and 8 examples of 272 bytes are 2240 bytes, but the file has 2230 (truncated)",
     true},
    {"trailing bytes", [](std::string& f) { f += "x"; }, "but the file has 2241 (trailing bytes)", true},
    {"a huge count", [](std::string& f) { put<std::uint64_t>(f, 24, std::uint64_t{1} << 62); },
     "more than 2^64 bytes, but the file has 2240 (truncated)", true},
    {"shorter than a header", [](std::string& f) { f.resize(10); },
     "truncated: 10 bytes is shorter than the 64-byte header", true},
    {"label 0.5", [](std::string& f) { put<float>(f, 64 + 5 * record, 0.5f); }, "record 5: label 0.5 is not 0 or 1",
     false},
    {"a NaN dense value",
     [](std::string& f) { put<float>(f, 64 + 5 * record + 8 + 4 * 2, std::numeric_limits<float>::quiet_NaN()); },
     "record 5: dense feature 2 is nan", false},
    {"an infinite dense value",
     [](std::string& f) { put<float>(f, 64 + 7 * record + 8, -std::numeric_limits<float>::infinity()); },
     "record 7: dense feature 0 is -inf", false},
    {"probability 1.5", [](std::string& f) { put<float>(f, 64 + 5 * record + 4, 1.5f); },
     "record 5: probability 1.5 is not in [0, 1]", false},
    {"a probability without the flag",
     [](std::string& f) {
       put<std::uint32_t>(f, 20, 0);
       for (std::size_t r = 0; r < 5; ++r) put<float>(f, 64 + r * record + 4, 0.f);
     },
     "is not 0 (flags bit 0 is clear", false},
    {"padding", [](std::string& f) { f[64 + 5 * record + 61] = 1; }, "record 5: padding byte 61 is not zero", false},
};

}  // namespace

BOOST_DATA_TEST_CASE(a_damaged_file_is_rejected_naming_the_file_and_the_check, boost::unit_test::data::make(damages),
                     d) {
  dsgd::test::temp_dir dir("ctr_file_damage_");
  const auto good = dir.path / "good.ctr", bad = dir.path / "bad.ctr";
  write_file(good, examples(8));
  auto bytes = dsgd::test::slurp(good);
  d.apply(bytes);
  write_bytes(bad, bytes);
  if (d.in_header) {
    BOOST_TEST(throws_named([&] { (void)dsgd::data::read_ctr_file_header(bad); }, errc::dataset_corrupt,
                            {bad.string() + ": ", d.says}));
    BOOST_TEST(
        throws_named([&] { ctr_file_reader({.path = bad}); }, errc::dataset_corrupt, {bad.string() + ": ", d.says}));
  } else {
    (void)dsgd::data::read_ctr_file_header(bad);  // records are checked as they are read
    ctr_file_reader r({.path = bad, .batch = 3});
    BOOST_TEST(throws_named(
        [&] {
          while (r.next().size > 0) {
          }
        },
        errc::dataset_corrupt, {bad.string() + ": ", d.says}));
    // Shard 1 of 2 (records 4..7) names the record by its index in the file too.
    ctr_file_reader shard({.path = bad, .batch = 100, .shard = 1, .shards = 2});
    BOOST_TEST(throws_named([&] { shard.next(); }, errc::dataset_corrupt, {bad.string() + ": ", d.says}));
  }
}

BOOST_AUTO_TEST_CASE(a_missing_file_and_bad_options_are_named) {
  dsgd::test::temp_dir dir("ctr_file_options_");
  const auto missing = dir.path / "missing.ctr";
  BOOST_TEST(throws_named([&] { (void)dsgd::data::read_ctr_file_header(missing); }, errc::dataset_missing,
                          {missing.string(), "no such"}));
  BOOST_TEST(throws_named([&] { ctr_file_reader({.path = missing}); }, errc::dataset_missing, {missing.string()}));
  const auto path = dir.path / "x.ctr";
  write_file(path, examples(4));
  BOOST_TEST(throws_named([&] { ctr_file_reader({}); }, errc::invalid_argument, {"ctr_file_reader::options.path"}));
  BOOST_TEST(throws_named([&] { ctr_file_reader({.path = path, .batch = 0}); }, errc::invalid_argument,
                          {"ctr_file_reader::options.batch"}));
  BOOST_TEST(throws_named([&] { ctr_file_reader({.path = path, .shard = 2, .shards = 2}); }, errc::invalid_argument,
                          {"ctr_file_reader::options.shard: must be less than shards (2), got 2"}));
  BOOST_TEST(throws_named([&] { ctr_file_reader({.path = path, .shards = 0}); }, errc::invalid_argument,
                          {"ctr_file_reader::options.shards"}));
  BOOST_TEST(throws_named([&] { ctr_file_reader({.path = path, .buffer_bytes = 0}); }, errc::invalid_argument,
                          {"ctr_file_reader::options.buffer_bytes"}));
  BOOST_TEST(throws_named([&] { ctr_file_reader({.path = path, .first = 5}); }, errc::invalid_argument,
                          {"ctr_file_reader::options.first: 5 is past the 4 examples of shard 0 of " + path.string()}));
}

BOOST_AUTO_TEST_CASE(the_writer_rejects_bad_examples_and_writes_none_of_them) {
  dsgd::test::temp_dir dir("ctr_file_writer_checks_");
  const auto path = dir.path / "x.ctr";
  BOOST_TEST(throws_named([&] { ctr_file_writer(path, 2, 0); }, errc::invalid_argument, {path.string(), "fields"}));
  BOOST_TEST(throws_named([&] { ctr_file_writer(path, 2, 1, 2); }, errc::invalid_argument, {path.string(), "flags 2"}));
  ctr_file_writer w(path, 2, 1, dsgd::data::ctr_file_probabilities);
  const std::vector<float> dense{1, 2}, nan_dense{1, std::nanf("")}, short_dense{1};
  const std::uint64_t key = 9;
  const std::span<const std::uint64_t> keys(&key, 1);
  w.write(dense, keys, 1, 0.5f);
  BOOST_TEST(throws_named([&] { w.write(short_dense, keys, 1, 0.5f); }, errc::invalid_argument,
                          {path.string(), "example 1: 1 dense features and 1 keys, expected 2 and 1"}));
  BOOST_TEST(throws_named([&] { w.write(dense, {}, 1, 0.5f); }, errc::invalid_argument,
                          {path.string(), "example 1: 2 dense features and 0 keys"}));
  BOOST_TEST(throws_named([&] { w.write(dense, keys, 0.5f, 0.5f); }, errc::invalid_argument,
                          {path.string(), "example 1: label 0.5 is not 0 or 1"}));
  BOOST_TEST(throws_named([&] { w.write(nan_dense, keys, 0, 0.5f); }, errc::invalid_argument,
                          {path.string(), "example 1: dense feature 1 is nan"}));
  BOOST_TEST(throws_named([&] { w.write(dense, keys, 0, -0.25f); }, errc::invalid_argument,
                          {path.string(), "example 1: probability -0.25 is not in [0, 1]"}));
  // A batch with one bad example writes none of it.
  ctr_batch b;
  b.resize(3, 2, 1);
  b.labels = {0, 1, 2};
  BOOST_TEST(throws_named([&] { w.write(b); }, errc::invalid_argument, {path.string(), "example 3: label 2"}));
  ctr_batch wide;
  wide.resize(1, 3, 1);
  BOOST_TEST(throws_named([&] { w.write(wide); }, errc::invalid_argument,
                          {path.string(), "a batch of 3 dense features and 1 fields"}));
  BOOST_TEST(w.examples() == 1u);
  w.close();
  BOOST_TEST(
      throws_named([&] { w.write(dense, keys, 1, 0.5f); }, errc::invalid_argument, {path.string(), "after close()"}));
  BOOST_TEST(dsgd::data::read_ctr_file_header(path).examples == 1u);
}

BOOST_AUTO_TEST_CASE(an_interrupted_writer_leaves_a_file_no_reader_accepts) {
  dsgd::test::temp_dir dir("ctr_file_interrupted_");
  const auto path = dir.path / "x.ctr";
  const auto b = examples(5000);  // 1.36 MB: more than the writer buffers, so records reach the file
  {
    ctr_file_writer w(path, n_dense, n_fields, dsgd::data::ctr_file_probabilities);
    w.write(b);
    BOOST_TEST(fs::file_size(path) > 64u);
    // While it writes, the file is unfinished.
    BOOST_TEST(throws_named([&] { (void)dsgd::data::read_ctr_file_header(path); }, errc::dataset_corrupt,
                            {path.string(), "unfinished"}));
  }
  BOOST_TEST(dsgd::data::read_ctr_file_header(path).examples == 5000u);
  // An exception through the writer leaves the file unfinished, rather than short.
  try {
    ctr_file_writer w(path, n_dense, n_fields, dsgd::data::ctr_file_probabilities);
    w.write(b);
    throw std::runtime_error("the generator failed");
  } catch (const std::runtime_error&) {
  }
  BOOST_TEST(throws_named([&] { ctr_file_reader({.path = path}); }, errc::dataset_corrupt,
                          {path.string(), "unfinished: examples is 2^64-1"}));
}

BOOST_AUTO_TEST_CASE(write_errors_name_the_file) {
  const fs::path nowhere = "/nonexistent-dsgd-dir/x.ctr";
  try {
    ctr_file_writer w(nowhere, 1, 1);
    BOOST_ERROR("created a file in a directory that does not exist");
  } catch (const dsgd::error& e) {
    BOOST_TEST(dsgd::test::contains(e.what(), "cannot create " + nowhere.string()));
    BOOST_TEST(dsgd::test::contains(e.what(), "No such file or directory"));
  }
  if (!fs::exists("/dev/full")) return;  // Linux's device whose every write fails with ENOSPC
  ctr_file_writer w("/dev/full", 1, 1);
  const float dense = 1;
  const std::uint64_t key = 1;
  w.write({&dense, 1}, {&key, 1}, 1);
  try {
    w.close();
    BOOST_ERROR("close() on /dev/full did not throw");
  } catch (const dsgd::error& e) {
    BOOST_TEST(dsgd::test::contains(e.what(), "/dev/full"));
    BOOST_TEST(dsgd::test::contains(e.what(), "No space left on device"));
  }
  BOOST_TEST(throws_named([&] { w.write({&dense, 1}, {&key, 1}, 1); }, errc::invalid_argument, {"/dev/full"}));
}

BOOST_AUTO_TEST_SUITE_END()
