// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// A table of a checkpoint (checkpoint::read_tables: base + deltas merged) exported for serving
/// as key -> row: write_export() in a checksummed binary form or as text, read_export() back.
///
/// @code
///   namespace ck = dsgd::checkpoint;
///   for (const auto& t : ck::read_tables(dir, 900))
///     if (t.spec.name == "user_id") ck::write_export(t, 900, "user_id.emb", ck::export_format::binary);
/// @endcode
#pragma once

#include <dsgd/checkpoint/table_file.hpp>
#include <dsgd/error.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::checkpoint {

// --- export for serving ------------------------------------------------------------------

/// How write_export() writes a table: `binary` (below) or `text`, one line per row,
/// "key w0 w1 ... w(dim-1)\n", each weight as printf's "%.9g" (which reads back exactly).
enum class export_format { binary, text };

namespace detail {
inline constexpr std::string_view export_magic = "DSGDEMBX";
inline constexpr std::uint32_t export_version = 1;
}  // namespace detail

/// Writes the weights of table @p t (from checkpoint @p step) for serving: key -> row, in
/// ascending key order, atomically. Binary: a header ("DSGDEMBX", u32 version 1, u32 dim, u64
/// rows, u64 checkpoint step, u32 name length, the name, u32 CRC-32C of the header's bytes so
/// far), then per row a u64 key and dim float32 weights, then a u32 CRC-32C of the rows; all
/// little-endian. The optimizer's state is not exported.
/// @throws dsgd::error naming @p out when it cannot be written
inline void write_export(const merged_table& t, std::uint64_t step, const std::filesystem::path& out,
                         export_format format) {
  using dsgd::detail::put_le;
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
  detail::atomic_file file(out);
  detail::table_writer w(file);
  std::string& b = w.buffer();
  if (format == export_format::text) {
    char number[32];
    for (std::size_t i = 0; i < t.rows(); ++i) {
      b += std::to_string(t.keys[i]);
      for (std::size_t c = 0; c < t.dim; ++c) {
        std::snprintf(number, sizeof number, " %.9g", static_cast<double>(t.row(i)[c]));
        b += number;
      }
      b += '\n';
      w.flush(std::size_t{1} << 20);
    }
  } else {
    b.append(detail::export_magic);
    put_le<std::uint32_t>(b, detail::export_version);
    put_le<std::uint32_t>(b, static_cast<std::uint32_t>(t.dim));
    put_le<std::uint64_t>(b, t.rows());
    put_le<std::uint64_t>(b, step);
    put_le<std::uint32_t>(b, static_cast<std::uint32_t>(t.spec.name.size()));
    b.append(t.spec.name);
    put_le<std::uint32_t>(b, dsgd::detail::crc32c(detail::as_bytes(b)));
    w.flush();
    std::uint32_t crc = 0;
    for (std::size_t i = 0; i < t.rows(); ++i) {
      const auto start = b.size();
      put_le<std::uint64_t>(b, t.keys[i]);
      dsgd::detail::put_floats(b, t.row(i).first(t.dim));
      crc = dsgd::detail::crc32c_extend(crc, detail::as_bytes(std::string_view(b).substr(start)));
      w.flush(std::size_t{1} << 20);
    }
    put_le<std::uint32_t>(b, crc);
  }
  w.flush();
  file.commit();
}

/// A table as write_export() wrote it in binary: its name, dim, checkpoint step, and the
/// weights of each key (keys ascending).
struct exported_table {
  std::string name;
  std::size_t dim = 0;
  std::uint64_t step = 0;
  std::vector<std::uint64_t> keys;
  std::vector<float> weights;  ///< keys.size() x dim
};

/// Reads and verifies a binary export (write_export()).
/// @throws dsgd::error errc::not_found when it does not exist, errc::checkpoint_corrupt naming
///         the file when it is truncated, damaged or not an export
inline exported_table read_export(const std::filesystem::path& path) {
  const auto name = path.filename().string();
  const auto bytes = detail::read_file(path, std::numeric_limits<std::size_t>::max());
  const auto all = detail::as_bytes(bytes);
  dsgd::detail::byte_reader in(all, name);
  auto magic = in.take(8, "magic");
  if (std::string_view(reinterpret_cast<const char*>(magic.data()), 8) != detail::export_magic)
    in.fail("wrong magic: not a dsgd table export");
  if (auto v = in.read<std::uint32_t>("version"); v != detail::export_version)
    in.fail("unsupported export version " + std::to_string(v));
  exported_table t;
  t.dim = in.read<std::uint32_t>("dim");
  auto rows = in.read<std::uint64_t>("row count");
  t.step = in.read<std::uint64_t>("step");
  auto len = in.read<std::uint32_t>("name length");
  auto n = in.take(len, "name");
  t.name.assign(reinterpret_cast<const char*>(n.data()), len);
  const auto head = in.offset();
  if (in.read<std::uint32_t>("header checksum") != dsgd::detail::crc32c(all.first(head)))
    in.fail("header checksum mismatch");
  const std::size_t row_bytes = 8 + 4 * t.dim;
  if (t.dim == 0 || rows > in.remaining() / row_bytes) in.fail(std::to_string(rows) + " rows do not fit its size");
  const auto start = in.offset();
  t.keys.resize(rows);
  t.weights.resize(rows * t.dim);
  for (std::size_t i = 0; i < rows; ++i) {
    t.keys[i] = in.read<std::uint64_t>("key");
    dsgd::detail::get_floats(in.take(4 * t.dim, "row").data(), t.dim, t.weights.data() + i * t.dim);
  }
  const auto end = in.offset();
  if (in.read<std::uint32_t>("rows checksum") != dsgd::detail::crc32c(all.subspan(start, end - start)))
    in.fail("rows checksum mismatch");
  if (in.remaining() != 0) in.fail(std::to_string(in.remaining()) + " unexpected bytes at the end");
  return t;
}

}  // namespace dsgd::checkpoint
