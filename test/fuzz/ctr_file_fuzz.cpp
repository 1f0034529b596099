// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Fuzz target for <dsgd/data/ctr_file.hpp>: read_ctr_file_header() and ctr_file_reader over a
// CTR example file holding arbitrary bytes. The reader takes a path, so the input is written to
// a file in a temporary directory of this process (removed at exit).
//
// Input: two option bytes, then the file's bytes.
//   byte 0: bits 0-1 shards - 1 (1 to 4), bits 2-3 the shard (mod shards), bit 4 loop, bit 5
//           repair: rewrite the magic, version, flags, reserved bytes and N (whole records of
//           the bytes that follow the header, the rest cut) so that mutations get past the
//           header to the record checks;
//   byte 1: the batch size - 1 (also the read buffer in records: batches take several reads).
// Whatever opens must then hand out its shard in order, every record checked (labels 0 or 1,
// finite floats, probabilities in [0, 1] or 0), and a file that reads whole must be what the
// writer writes for the examples read from it, byte for byte.
#include "fuzz_support.hpp"

#include <dsgd/data/ctr_batch.hpp>
#include <dsgd/data/ctr_file.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace data = dsgd::data;

namespace {

// A directory of this process, removed when the process exits normally.
struct scratch_dir {
  fs::path path = fs::temp_directory_path() / ("dsgd-ctr-file-fuzz-" + std::to_string(::getpid()));
  scratch_dir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~scratch_dir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

const scratch_dir& scratch() {
  static const scratch_dir dir;
  return dir;
}

// Removes the previous file first: ext4 flushes a file truncated and written again when it is
// closed (auto_da_alloc), which would make every input wait for the disk.
void write(const fs::path& p, std::string_view bytes) {
  std::error_code ignored;
  fs::remove(p, ignored);
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <class U>
U get(const std::string& s, std::size_t at) {
  U v = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i)
    v |= static_cast<U>(static_cast<U>(static_cast<unsigned char>(s[at + i])) << (8 * i));
  return v;
}
template <class U>
void put(std::string& s, std::size_t at, U v) {
  for (std::size_t i = 0; i < sizeof(U); ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

void repair(std::string& f) {
  if (f.size() < 64) return;
  std::memcpy(f.data(), "DSGDCTR1", 8);
  put<std::uint32_t>(f, 8, 1);
  if (get<std::uint32_t>(f, 16) == 0) put<std::uint32_t>(f, 16, 1);
  put<std::uint32_t>(f, 20, get<std::uint32_t>(f, 20) & 1);
  std::fill(f.begin() + 32, f.begin() + 64, '\0');
  const data::ctr_file_header h{get<std::uint32_t>(f, 12), get<std::uint32_t>(f, 16), 0, 0};
  const std::uint64_t n = (f.size() - 64) / h.record_bytes();
  put<std::uint64_t>(f, 24, n);
  f.resize(64 + n * h.record_bytes());
}

// Checks one batch of the shard: in order, its shape, and every value the reader promises.
void check_batch(const data::ctr_batch& b, const data::ctr_file_header& h, std::uint64_t expected_first,
                 std::size_t batch) {
  dsgd::fuzz::check(b.first == expected_first, "a batch does not start where the previous one ended");
  dsgd::fuzz::check(b.size <= batch, "a batch is larger than options.batch");
  dsgd::fuzz::check(b.dense_features == h.dense_features && b.fields == h.fields, "a batch of another shape");
  dsgd::fuzz::check(b.dense.size() == b.size * h.dense_features && b.keys.size() == b.size * h.fields &&
                        b.labels.size() == b.size && b.probabilities.size() == b.size,
                    "a batch's vectors do not match its size");
  for (std::size_t r = 0; r < b.size; ++r) {
    dsgd::fuzz::check(b.labels[r] == 0.0f || b.labels[r] == 1.0f, "a label that is not 0 or 1 was read");
    const float p = b.probabilities[r];
    dsgd::fuzz::check(h.has_probabilities() ? p >= 0.0f && p <= 1.0f : p == 0.0f, "a bad probability was read");
  }
  for (float x : b.dense) dsgd::fuzz::check(std::isfinite(x), "a dense value that is not finite was read");
}

// Reads the whole shard (loop: two passes and one batch more), checking every batch.
void read_shard(const fs::path& path, std::size_t shard, std::size_t shards, bool loop, std::size_t batch,
                std::uint64_t file_bytes) {
  data::ctr_file_reader r(
      {.path = path, .batch = batch, .shard = shard, .shards = shards, .loop = loop, .buffer_bytes = 1});
  const auto& h = r.header();
  dsgd::fuzz::check(h.file_bytes() == file_bytes, "an accepted header does not match the file's size");
  const std::uint64_t n = h.examples, begin = shard * n / shards, end = (shard + 1) * n / shards;
  dsgd::fuzz::check(r.shard_begin() == begin && r.examples() == end - begin, "a shard's range is not [kN/K, (k+1)N/K)");
  if (loop) {
    const std::uint64_t per_epoch = (r.examples() + batch - 1) / batch;
    std::uint64_t first = begin;
    for (std::uint64_t i = 0; i < 2 * per_epoch + 1; ++i) {
      const auto& b = r.next();
      if (first == end) first = begin;
      check_batch(b, h, first, batch);
      dsgd::fuzz::check(b.size > 0, "a looping reader returned an empty batch");
      dsgd::fuzz::check(r.epoch() == i / per_epoch, "a looping reader counted its epochs wrong");
      first += b.size;
    }
    return;
  }
  std::uint64_t first = begin;
  for (;;) {
    const auto& b = r.next();
    check_batch(b, h, first, batch);
    if (b.size == 0) break;
    first += b.size;
  }
  dsgd::fuzz::check(first == end, "a shard ended before its last record");
}

// The file read whole, written again: the same bytes (the probability column of a file without
// probabilities is written as +0, which the reader also accepts as -0).
void check_rewrite(const fs::path& path, const std::string& bytes) {
  const auto h = data::read_ctr_file_header(path);
  data::ctr_file_reader r({.path = path, .batch = 7});
  const auto again = scratch().path / "again.ctr";
  std::error_code ignored;
  fs::remove(again, ignored);  // not truncated: see write()
  {
    data::ctr_file_writer w(again, h.dense_features, h.fields, h.flags);
    for (const auto* b = &r.next(); b->size > 0; b = &r.next()) w.write(*b);
    w.close();
  }
  std::string expected = bytes;
  if (!h.has_probabilities())
    for (std::uint64_t i = 0; i < h.examples; ++i) put<std::uint32_t>(expected, 64 + i * h.record_bytes() + 4, 0);
  dsgd::fuzz::check(read(again) == expected, "the writer does not write back the file the reader read");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto& dir = scratch().path;  // first use allocates; keep it out of the tracked input
  dsgd::fuzz::input_scope scope({data, size});
  if (size < 2) return 0;
  const std::uint8_t options = data[0];
  const std::size_t shards = 1 + (options & 3), shard = ((options >> 2) & 3) % shards, batch = 1 + data[1];
  const bool loop = (options & 16) != 0;
  std::string bytes(reinterpret_cast<const char*>(data) + 2, size - 2);
  if (options & 32) repair(bytes);
  const auto path = dir / "input.ctr";
  write(path, bytes);

  data::ctr_file_header h;
  if (!dsgd::fuzz::decodes([&] { h = data::read_ctr_file_header(path); })) {
    bool refused = false;
    try {
      data::ctr_file_reader r({.path = path});
    } catch (const dsgd::error& e) {
      refused = e.code() == dsgd::errc::dataset_corrupt;
    }
    dsgd::fuzz::check(refused, "the reader opened a file whose header read_ctr_file_header() refused");
    return 0;
  }
  dsgd::fuzz::check(data::detail::encode_ctr_header(h) == bytes.substr(0, 64),
                    "an accepted header does not encode back to its bytes");
  if (loop && (shard + 1) * h.examples / shards == shard * h.examples / shards) {
    dsgd::fuzz::check(!dsgd::fuzz::decodes([&] { read_shard(path, shard, shards, loop, batch, bytes.size()); }),
                      "a looping reader accepted an empty shard");
    return 0;
  }
  if (dsgd::fuzz::decodes([&] { read_shard(path, shard, shards, loop, batch, bytes.size()); }) && !loop && shards == 1)
    check_rewrite(path, bytes);
  return 0;
}

std::vector<std::string> dsgd::fuzz::seeds() {
  const auto& dir = scratch().path;
  std::vector<std::string> out;
  auto file = [&](std::uint32_t d, std::uint32_t f, std::uint32_t flags, std::size_t n) {
    const auto p = dir / "seed.ctr";
    {
      data::ctr_file_writer w(p, d, f, flags);
      std::vector<float> dense(d);
      std::vector<std::uint64_t> keys(f);
      for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t j = 0; j < d; ++j) dense[j] = static_cast<float>(i) * 0.25f - static_cast<float>(j);
        for (std::size_t k = 0; k < f; ++k) keys[k] = (i + 1) * 0x9e3779b97f4a7c15ull + k;
        w.write(dense, keys, static_cast<float>(i % 2), 0.125f * static_cast<float>(i % 8));
      }
      w.close();
    }
    return read(p);
  };
  // 13 dense and 26 ids with probabilities, read whole in batches of 3, as it is and repaired;
  // shard 1 of 3, repaired.
  out.push_back(std::string{'\x00', '\x02'} + file(13, 26, 1, 9));
  out.push_back(std::string{'\x20', '\x02'} + file(13, 26, 1, 9));
  out.push_back(std::string{'\x26', '\x01'} + file(13, 26, 1, 9));
  // Odd shapes without probabilities: repaired, looping over shard 2 of 4; one dense feature.
  out.push_back(std::string{'\x3b', '\x00'} + file(2, 3, 0, 6));
  out.push_back(std::string{'\x10', '\x04'} + file(1, 1, 0, 5));
  // No dense features, and an empty file.
  out.push_back(std::string{'\x00', '\x00'} + file(0, 2, 1, 4));
  out.push_back(std::string{'\x00', '\x00'} + file(3, 2, 0, 0));
  return out;
}
