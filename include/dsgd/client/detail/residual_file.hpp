// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// A worker's error-feedback residuals (top_k, two_bit) in a checkpoint: the file
/// "ckpt-<step>.<task>.residual" (task as "worker-1") beside the ps tasks' data files of the
/// same step, written atomically by the worker and read back when it restores, so that a
/// restarted worker resumes with the gradient mass it had not yet sent. Its name starts as the
/// step's other files do, so checkpoint::saver's pruning deletes it with its step. Layout,
/// little-endian: "dsgdres1", u32 shards, then per plan shard u32 codec-name length, the name
/// (codec::describe), u64 n, n f32 (n = 0: no residual yet); then the CRC-32C of all before.
// IWYU pragma: private, include <dsgd/client/ps_client.hpp>
#pragma once

#include <dsgd/checkpoint/detail/atomic_file.hpp>
#include <dsgd/compress/detail/bytes.hpp>
#include <dsgd/detail/crc32c.hpp>
#include <dsgd/error.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::client::detail {

/// One plan shard's part of a residual file: its codec's name and its residual.
struct saved_residual {
  std::string codec;
  std::vector<float> values;
};

/// @returns the path of task @p task's residual file of checkpoint @p step in @p dir.
inline std::filesystem::path residual_path(const std::filesystem::path& dir, std::uint64_t step, std::string task) {
  for (auto& ch : task)
    if (ch == ':') ch = '-';
  return dir / ("ckpt-" + std::to_string(step) + "." + task + ".residual");
}

/// Writes @p shards as the residual file @p path, atomically (a crash leaves the old one or none).
inline void write_residuals(const std::filesystem::path& path, const std::vector<saved_residual>& shards) {
  std::string out = "dsgdres1";
  auto put = [&out](const void* p, std::size_t n) {
    if (n != 0) out.append(static_cast<const char*>(p), n);  // p may be an empty vector's null data()
  };
  const auto count = static_cast<std::uint32_t>(shards.size());
  put(&count, 4);
  for (const auto& s : shards) {
    const auto len = static_cast<std::uint32_t>(s.codec.size());
    const auto n = static_cast<std::uint64_t>(s.values.size());
    put(&len, 4);
    put(s.codec.data(), s.codec.size());
    put(&n, 8);
    put(s.values.data(), s.values.size() * sizeof(float));
  }
  const std::uint32_t crc = dsgd::detail::crc32c(std::as_bytes(std::span(out.data(), out.size())));
  put(&crc, 4);
  std::filesystem::create_directories(path.parent_path());
  checkpoint::detail::write_file_atomically(path, out);
}

/// Reads the residual file @p path, at most @p max_floats floats in all (the plan's size).
/// @throws dsgd::error errc::not_found without the file; errc::checkpoint_corrupt naming it
///         when it is truncated, fails its checksum or claims more than @p max_floats
inline std::vector<saved_residual> read_residuals(const std::filesystem::path& path, std::size_t max_floats) {
  const std::size_t limit = 16 + max_floats * sizeof(float) + 4096 * 1024;
  const std::string bytes = checkpoint::detail::read_file(path, limit);
  const auto name = path.filename().string();
  auto bad = [&](const std::string& why) -> dsgd::error { return error(errc::checkpoint_corrupt, name + ": " + why); };
  if (bytes.size() < 16 || bytes.compare(0, 8, "dsgdres1") != 0) throw bad("not a residual file");
  const auto body = std::as_bytes(std::span(bytes.data(), bytes.size() - 4));
  std::uint32_t crc = 0;
  std::memcpy(&crc, bytes.data() + bytes.size() - 4, 4);
  if (crc != dsgd::detail::crc32c(body)) throw bad("checksum mismatch");
  std::size_t at = 8;
  auto take = [&](void* p, std::size_t n) {
    if (n > body.size() - at) throw bad("truncated");
    if (n == 0) return;  // p may be an empty vector's null data()
    std::memcpy(p, body.data() + at, n);
    at += n;
  };
  std::uint32_t count = 0;
  take(&count, 4);
  std::vector<saved_residual> out;
  std::size_t floats = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint32_t len = 0;
    take(&len, 4);
    if (len > 64) throw bad("codec name of " + std::to_string(len) + " bytes");
    saved_residual s;
    s.codec.resize(len);
    take(s.codec.data(), len);
    std::uint64_t n = 0;
    take(&n, 8);
    if (n > max_floats - floats)
      throw bad("more residual floats than the plan has (" + std::to_string(max_floats) + ")");
    floats += static_cast<std::size_t>(n);
    s.values.resize(static_cast<std::size_t>(n));
    take(s.values.data(), s.values.size() * sizeof(float));
    out.push_back(std::move(s));
  }
  if (at != body.size()) throw bad("trailing bytes");
  return out;
}

}  // namespace dsgd::client::detail
