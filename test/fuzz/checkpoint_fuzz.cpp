// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Fuzz target for <dsgd/train/saver.hpp>: checkpoint_reader restoring a checkpoint whose data
// file or manifest holds arbitrary bytes. The reader takes a directory, so the input is written
// to a file in a temporary directory of this process (removed at exit).
//
// Input: one option byte, then the file's bytes.
//   bit 0 clear: the bytes are ps task 0's data file; the harness writes a manifest that names
//                it with its true size and CRC, so the reader reaches the data file's parser.
//                Bit 1 repairs the data file's checksums, sizes and task numbers first, so
//                that mutations get past them to the shape, slice and record checks.
//   bit 0 set:   the bytes are the manifest of a checkpoint whose data file is valid.
// Whatever loads must then serve reads of every variable it lists.
#include "fuzz_support.hpp"

#include <dsgd/train/saver.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace tr = dsgd::train;
namespace d = dsgd::checkpoint::detail;

namespace {

constexpr std::uint64_t manifest_step = 7;

// A directory of this process, removed when the process exits normally.
struct scratch_dir {
  fs::path path = fs::temp_directory_path() / ("dsgd-checkpoint-fuzz-" + std::to_string(::getpid()));
  scratch_dir() {
    fs::remove_all(path);
    fs::create_directories(path / "data");
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

void write(const fs::path& p, std::string_view bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A real checkpoint of step `manifest_step`, written by the saver: two variables, one sliced.
const fs::path& valid_checkpoint() {
  static const fs::path dir = [] {
    auto p = scratch().path / "valid";
    std::vector<float> w(12), b(3, 5.f);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) * 0.5f;
    const std::vector<tr::shard_data> vars{{"dense/kernel", {4, 3}, 0, {w.data(), 6}},
                                           {"dense/kernel", {4, 3}, 6, {w.data() + 6, 6}},
                                           {"dense/bias", {3}, 0, b}};
    tr::saver(p, 0).save(manifest_step, vars);
    return p;
  }();
  return dir;
}

std::uint32_t get_u32(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}
std::uint64_t get_u64(const std::string& s, std::size_t at) {
  return get_u32(s, at) | (static_cast<std::uint64_t>(get_u32(s, at + 4)) << 32);
}
template <class U>
void put(std::string& s, std::size_t at, U v) {
  for (std::size_t i = 0; i < sizeof(U); ++i) s[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
std::uint32_t crc_of(const std::string& s, std::size_t from, std::size_t to) {
  return dsgd::detail::crc32c(d::as_bytes(std::string_view(s).substr(from, to - from)));
}

// Rewrites what a corrupted file would fail on first (task numbers, checksums, trailer), walking
// the records as far as their lengths stay inside the file.
void repair(std::string& f) {
  if (f.size() < d::header_bytes + d::trailer_bytes) return;
  put<std::uint32_t>(f, 12, 0);  // ps task 0
  put<std::uint32_t>(f, 16, 1);  // of 1
  put<std::uint32_t>(f, 36, crc_of(f, 0, 36));
  const std::size_t body = f.size() - d::trailer_bytes;
  const std::uint32_t count = get_u32(f, 20);
  std::size_t at = d::header_bytes;
  for (std::uint32_t i = 0; i < count && at + 4 <= body; ++i) {
    const std::size_t start = at;
    const std::uint64_t name = get_u32(f, at);
    if (name > body || at + 4 + name + 8 > body) break;
    at += 4 + name + 4;
    const std::uint64_t rank = get_u32(f, at);
    if (rank > d::max_rank || at + 4 + 8 * rank + 16 > body) break;
    at += 4 + 8 * rank + 8;
    const std::uint64_t n = get_u64(f, at);
    at += 8;
    if (n > (body - at) / 4 || at + 4 * n + 4 > body) break;
    at += 4 * n;
    put<std::uint32_t>(f, at, crc_of(f, start, at));
    at += 4;
  }
  std::memcpy(f.data() + body, d::trailer_magic.data(), 8);
  put<std::uint32_t>(f, body + 8, count);
  put<std::uint32_t>(f, body + 12, crc_of(f, 0, body));
  put<std::uint64_t>(f, body + 16, f.size());
}

// Reads every variable the checkpoint lists, a bounded number of elements at each end.
void read_everything(const tr::checkpoint_reader& r) {
  for (const auto& v : r.variables()) {
    dsgd::fuzz::check(r.contains(v.name) && r.shape_of(v.name) == v.shape, "a listed variable cannot be found");
    const auto total = v.shape.elements();
    std::vector<float> buf(std::min<std::size_t>(total, 1024));
    dsgd::fuzz::decodes([&] { r.read_into(v.name, 0, buf); });
    dsgd::fuzz::decodes([&] { r.read_into(v.name, total - buf.size(), buf); });
    bool refused = false;
    try {
      r.read_into(v.name, total, std::span<float>(buf.data(), buf.empty() ? 0 : 1));
    } catch (const dsgd::error& e) {
      refused = e.code() == dsgd::errc::invalid_argument;
    }
    dsgd::fuzz::check(buf.empty() || refused, "a read past the end of a variable was not refused");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto& dir = scratch().path;
  (void)valid_checkpoint();  // first use allocates; keep it out of the tracked input
  dsgd::fuzz::input_scope scope({data, size});
  if (size == 0) return 0;
  const std::uint8_t options = data[0];
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);

  if (options & 1) {
    const auto& valid = valid_checkpoint();
    write(valid / d::manifest_name(manifest_step), bytes);
    dsgd::fuzz::decodes([&] { read_everything(tr::checkpoint_reader(valid, manifest_step)); });
    return 0;
  }

  if (options & 2) repair(bytes);
  const std::uint64_t step = bytes.size() >= 32 ? get_u64(bytes, 24) : 0;
  const auto name = d::data_file_name(step, 0, 1);
  const auto data_dir = dir / "data";
  // The previous input's files go, so that a step named by this input finds only its own.
  static std::vector<fs::path> previous;
  for (const auto& p : previous) ::unlink(p.c_str());
  previous = {data_dir / name, data_dir / d::manifest_name(step)};
  write(data_dir / name, bytes);
  d::manifest m{step, 0x1234, "fuzz", {{name, bytes.size(), dsgd::detail::crc32c(d::as_bytes(bytes))}}};
  write(data_dir / d::manifest_name(step), d::encode_manifest(m));
  dsgd::fuzz::decodes([&] { read_everything(tr::checkpoint_reader(data_dir, step)); });
  return 0;
}

std::vector<std::string> dsgd::fuzz::seeds() {
  const auto& valid = valid_checkpoint();
  const auto data = read(valid / d::data_file_name(manifest_step, 0, 1));
  const auto manifest = read(valid / d::manifest_name(manifest_step));
  std::vector<std::string> out{std::string(1, '\0') + data, std::string(1, '\2') + data,
                               std::string(1, '\1') + manifest};
  // One record whose shape is huge but whose slice is small: reads must stay bounded.
  auto p = scratch().path / "huge";
  const std::vector<float> one{1.f, 2.f};
  tr::saver(p, 0).write_shard_file(3, 0, 1, std::vector<tr::shard_data>{{"emb", {1u << 20, 1u << 12}, 5, one}});
  out.push_back(std::string(1, '\2') + read(p / d::data_file_name(3, 0, 1)));
  return out;
}
