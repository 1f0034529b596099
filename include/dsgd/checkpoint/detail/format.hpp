// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The bytes of a checkpoint: the per-ps data file and the manifest (docs/checkpoints.md has the
/// byte table). Encoding and strict, bounds-checked decoding; no I/O beyond the atomic writer.
// IWYU pragma: private, include <dsgd/checkpoint/saver.hpp>
#pragma once

#include <dsgd/checkpoint/detail/atomic_file.hpp>
#include <dsgd/detail/byte_io.hpp>
#include <dsgd/detail/crc32c.hpp>
#include <dsgd/error.hpp>
#include <dsgd/tensor/shape.hpp>

#include <bit>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsgd::checkpoint::detail {

using namespace dsgd::detail;  // put_le, get_le, as_bytes, byte_reader

inline constexpr std::string_view data_magic = "DSGDCKPT";
inline constexpr std::string_view trailer_magic = "DSGDTAIL";
/// The version this build writes. 3: as 2, and a ps's data file holds each shard's pushes
/// received per replica (server/detail/shard_checkpoint.hpp); 2 (read, never written): a ps's
/// data file holds every slot and counter of its optimizer's state (learning-rate schedules
/// included), so a restore that misses one is an error, and no push counts (they restore as
/// 0); 1 (read): a slot or counter it lacks starts afresh on restore.
inline constexpr std::uint32_t format_version = 3;
/// The oldest version this build reads.
inline constexpr std::uint32_t oldest_format_version = 1;
inline constexpr std::uint32_t dtype_float32 = 1;
inline constexpr std::size_t header_bytes = 40;
inline constexpr std::size_t trailer_bytes = 24;
inline constexpr std::size_t max_name_bytes = 4096;
inline constexpr std::size_t max_rank = 32;
inline constexpr std::size_t max_manifest_bytes = std::size_t{64} << 20;
inline constexpr std::size_t max_ps_tasks = 1u << 16;

/// One record as it will be written: a slice [offset, offset + values.size()) of a variable.
struct record_view {
  std::string_view variable;
  const dsgd::shape* shape;
  std::size_t offset;
  std::span<const float> values;
};

/// One record as parsed: its metadata and a view of its float bytes in the file buffer.
struct parsed_record {
  std::string variable;
  dsgd::shape shape;
  std::size_t offset = 0;
  std::size_t count = 0;
  std::span<const std::byte> data;  ///< count * 4 little-endian float32 bytes
};

/// A data file as parsed and verified.
struct parsed_data_file {
  std::uint32_t version = 0;
  std::uint64_t step = 0;
  std::size_t ps_task = 0;
  std::size_t ps_tasks = 0;
  std::vector<parsed_record> records;
};

inline std::string data_file_name(std::uint64_t step, std::size_t ps_task, std::size_t ps_tasks) {
  return "ckpt-" + std::to_string(step) + ".ps-" + std::to_string(ps_task) + "-of-" + std::to_string(ps_tasks);
}
inline std::string manifest_name(std::uint64_t step) { return "ckpt-" + std::to_string(step) + ".manifest"; }
/// The embedding tables' file of ps task @p ps_task of checkpoint @p step (checkpoint/table_file.hpp).
inline std::string table_file_name(std::uint64_t step, std::size_t ps_task, std::size_t ps_tasks) {
  return "ckpt-" + std::to_string(step) + ".tables.ps-" + std::to_string(ps_task) + "-of-" + std::to_string(ps_tasks);
}

/// Writes a data file through @p out; @returns {file size, CRC-32C of the whole file}.
inline std::pair<std::uint64_t, std::uint32_t> write_data_file(atomic_file& out, std::uint64_t step,
                                                               std::size_t ps_task, std::size_t ps_tasks,
                                                               std::span<const record_view> records) {
  std::uint64_t size = 0;
  std::uint32_t file_crc = 0;
  auto emit = [&](std::string_view bytes) {
    out.write(bytes);
    file_crc = dsgd::detail::crc32c_extend(file_crc, as_bytes(bytes));
    size += bytes.size();
  };
  std::string buf;
  buf.append(data_magic);
  put_le<std::uint32_t>(buf, format_version);
  put_le<std::uint32_t>(buf, static_cast<std::uint32_t>(ps_task));
  put_le<std::uint32_t>(buf, static_cast<std::uint32_t>(ps_tasks));
  put_le<std::uint32_t>(buf, static_cast<std::uint32_t>(records.size()));
  put_le<std::uint64_t>(buf, step);
  put_le<std::uint32_t>(buf, 0);
  put_le<std::uint32_t>(buf, dsgd::detail::crc32c(as_bytes(buf)));
  emit(buf);
  for (const auto& r : records) {
    buf.clear();
    put_le<std::uint32_t>(buf, static_cast<std::uint32_t>(r.variable.size()));
    buf.append(r.variable);
    put_le<std::uint32_t>(buf, dtype_float32);
    put_le<std::uint32_t>(buf, static_cast<std::uint32_t>(r.shape->rank()));
    for (auto e : r.shape->extents()) put_le<std::uint64_t>(buf, e);
    put_le<std::uint64_t>(buf, r.offset);
    put_le<std::uint64_t>(buf, r.values.size());
    std::uint32_t crc = dsgd::detail::crc32c(as_bytes(buf));
    emit(buf);
    // The values go straight from the caller's buffer to the file, without a copy, on
    // little-endian hosts.
    std::string swapped;
    std::string_view data(reinterpret_cast<const char*>(r.values.data()), r.values.size_bytes());
    if constexpr (std::endian::native != std::endian::little) {
      put_floats(swapped, r.values);
      data = swapped;
    }
    crc = dsgd::detail::crc32c_extend(crc, as_bytes(data));
    emit(data);
    buf.clear();
    put_le<std::uint32_t>(buf, crc);
    emit(buf);
  }
  buf.clear();
  buf.append(trailer_magic);
  put_le<std::uint32_t>(buf, static_cast<std::uint32_t>(records.size()));
  put_le<std::uint32_t>(buf, file_crc);
  put_le<std::uint64_t>(buf, size + trailer_bytes);
  emit(buf);
  return {size, file_crc};
}

/// Parses and verifies every checksum of the data file @p bytes, named @p name in errors.
inline parsed_data_file parse_data_file(std::span<const std::byte> bytes, const std::string& name) {
  byte_reader whole(bytes, name);
  if (bytes.size() < header_bytes + trailer_bytes)
    whole.fail("truncated: " + std::to_string(bytes.size()) + " bytes is shorter than a header (" +
               std::to_string(header_bytes) + ") and trailer (" + std::to_string(trailer_bytes) + ")");
  auto head = whole.take(8, "magic");
  if (std::string_view(reinterpret_cast<const char*>(head.data()), 8) != data_magic)
    whole.fail("wrong magic: not a dsgd checkpoint data file");
  auto version = whole.read<std::uint32_t>("version");
  if (version < oldest_format_version || version > format_version)
    whole.fail("unsupported format version " + std::to_string(version) + " (this build reads " +
               std::to_string(oldest_format_version) + " to " + std::to_string(format_version) + ")");
  parsed_data_file out;
  out.version = version;
  out.ps_task = whole.read<std::uint32_t>("ps task");
  out.ps_tasks = whole.read<std::uint32_t>("ps task count");
  auto count = whole.read<std::uint32_t>("record count");
  out.step = whole.read<std::uint64_t>("step");
  whole.read<std::uint32_t>("reserved");
  auto header_crc = whole.read<std::uint32_t>("header checksum");
  if (header_crc != dsgd::detail::crc32c(bytes.first(header_bytes - 4))) whole.fail("header checksum mismatch");

  // The trailer first: it says how long the file should be, so truncation is named as such.
  byte_reader tail(bytes.last(trailer_bytes), name);
  auto tmagic = tail.take(8, "trailer magic");
  auto body_bytes = bytes.size() - trailer_bytes;
  auto trailer_count = tail.read<std::uint32_t>("trailer record count");
  auto body_crc = tail.read<std::uint32_t>("trailer checksum");
  auto expected_size = tail.read<std::uint64_t>("trailer file size");
  if (std::string_view(reinterpret_cast<const char*>(tmagic.data()), 8) != trailer_magic)
    whole.fail("truncated or damaged: no trailer at the end of its " + std::to_string(bytes.size()) + " bytes");
  if (expected_size != bytes.size())
    whole.fail("truncated: expected " + std::to_string(expected_size) + " bytes, got " + std::to_string(bytes.size()));
  if (trailer_count != count)
    whole.fail("trailer counts " + std::to_string(trailer_count) + " records, header " + std::to_string(count));

  byte_reader in(bytes.first(body_bytes), name);
  in.take(header_bytes, "header");
  // Each record holds at least 32 bytes, so a damaged count cannot make us reserve much.
  if (count > in.remaining() / 32) whole.fail("record count " + std::to_string(count) + " is impossible");
  out.records.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    auto start = in.offset();
    auto where = [&](const std::string& what) { return "record " + std::to_string(i) + " " + what; };
    auto name_len = in.read<std::uint32_t>("name length");
    if (name_len == 0 || name_len > max_name_bytes)
      in.fail(where("name length " + std::to_string(name_len) + " out of range"));
    auto name_bytes = in.take(name_len, "variable name");
    parsed_record r;
    r.variable.assign(reinterpret_cast<const char*>(name_bytes.data()), name_len);
    auto rw = [&](const std::string& what) { return where("(" + r.variable + ") " + what); };
    auto dtype = in.read<std::uint32_t>("dtype");
    if (dtype != dtype_float32) in.fail(rw("unknown dtype " + std::to_string(dtype)));
    auto rank = in.read<std::uint32_t>("rank");
    if (rank > max_rank) in.fail(rw("rank " + std::to_string(rank) + " out of range"));
    std::vector<std::size_t> extents(rank);
    std::size_t elements = 1;
    for (auto& e : extents) {
      auto x = in.read<std::uint64_t>("extent");
      if (x != 0 && elements > std::numeric_limits<std::size_t>::max() / x) in.fail(rw("shape overflows"));
      e = static_cast<std::size_t>(x);
      elements *= e;
    }
    r.shape = dsgd::shape(std::move(extents));
    auto offset = in.read<std::uint64_t>("offset");
    auto n = in.read<std::uint64_t>("element count");
    if (offset > elements || n > elements - offset)
      in.fail(rw("slice [" + std::to_string(offset) + ", +" + std::to_string(n) + ") lies outside shape " +
                 r.shape.to_string()));
    if (n > in.remaining() / 4)
      in.fail(rw("element count " + std::to_string(n) + " exceeds the " + std::to_string(in.remaining()) +
                 " bytes that remain"));
    r.offset = offset;
    r.count = n;
    r.data = in.take(n * 4, "values");
    auto stored = in.read<std::uint32_t>("record checksum");
    if (stored != dsgd::detail::crc32c(bytes.subspan(start, in.offset() - 4 - start))) in.fail(rw("checksum mismatch"));
    out.records.push_back(std::move(r));
  }
  if (in.remaining() != 0)
    whole.fail(std::to_string(in.remaining()) + " unexpected bytes after record " + std::to_string(count));
  // Records are checked first so that damage inside one is reported with its name; this
  // catches whatever lies outside them (the reserved header word, the record count).
  if (body_crc != dsgd::detail::crc32c(bytes.first(body_bytes))) whole.fail("file checksum mismatch");
  return out;
}

/// What the manifest names: the step, the placement and every data file with its size and CRC.
struct manifest {
  struct file {
    std::string name;
    std::uint64_t bytes = 0;
    std::uint32_t crc32c = 0;
  };
  std::uint64_t step = 0;
  std::uint64_t placement_fingerprint = 0;
  std::string placement;  ///< placement::plan::describe() of the plan at save time
  std::vector<file> files;
  std::uint32_t version = format_version;  ///< of the manifest and of every data file it names
  /// The embedding tables' files (checkpoint/table_file.hpp), one per ps task, or none for a
  /// checkpoint without tables: "table_file" lines after the data files (format 3 reads a
  /// manifest without them as before; a build without table checkpoints refuses one with them).
  std::vector<file> table_files;
  /// For an incremental checkpoint: the committed checkpoint whose tables its table files are a
  /// delta of ("tables_delta_of" line); nothing for full table files.
  std::optional<std::uint64_t> tables_delta_of;
};

inline std::string hex(std::uint64_t v, int digits) {
  static constexpr char d[] = "0123456789abcdef";
  std::string s(static_cast<std::size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = d[v & 15];
  return "0x" + s;
}

inline std::string encode_manifest(const manifest& m) {
  std::string s = "dsgd checkpoint manifest\nversion " + std::to_string(m.version) + "\nstep " +
                  std::to_string(m.step) + "\nplacement_fingerprint " + hex(m.placement_fingerprint, 16) +
                  "\nplacement " + m.placement + "\nps_tasks " + std::to_string(m.files.size()) + "\n";
  for (const auto& f : m.files) s += "file " + f.name + " " + std::to_string(f.bytes) + " " + hex(f.crc32c, 8) + "\n";
  if (!m.table_files.empty() && m.tables_delta_of) s += "tables_delta_of " + std::to_string(*m.tables_delta_of) + "\n";
  for (const auto& f : m.table_files)
    s += "table_file " + f.name + " " + std::to_string(f.bytes) + " " + hex(f.crc32c, 8) + "\n";
  s += "crc32c " + hex(dsgd::detail::crc32c(as_bytes(s)), 8) + "\n";
  return s;
}

/// Parses and verifies a manifest; errors name @p name and the line.
inline manifest parse_manifest(std::string_view text, const std::string& name) {
  auto fail = [&](const std::string& what) -> void { throw error(errc::checkpoint_corrupt, name + ": " + what); };
  auto crc_at = text.rfind("crc32c 0x");
  if (crc_at == std::string_view::npos || (crc_at != 0 && text[crc_at - 1] != '\n'))
    fail("truncated: no checksum line");
  auto crc_line = text.substr(crc_at);
  std::uint64_t stored = 0;
  if (crc_line.size() != 18 || crc_line.back() != '\n' ||
      std::from_chars(crc_line.data() + 9, crc_line.data() + 17, stored, 16).ptr != crc_line.data() + 17)
    fail("malformed checksum line");
  if (stored != dsgd::detail::crc32c(as_bytes(text.substr(0, crc_at)))) fail("checksum mismatch");

  std::size_t line_no = 0;
  auto body = text.substr(0, crc_at);
  auto next_line = [&](std::string_view key) -> std::string_view {
    ++line_no;
    auto eol = body.find('\n');
    std::string_view line = body.substr(0, eol);
    body.remove_prefix(eol == std::string_view::npos ? body.size() : eol + 1);
    if (line.substr(0, key.size()) != key)
      fail("line " + std::to_string(line_no) + ": expected \"" + std::string(key) + "\"");
    return line.substr(key.size());
  };
  auto number = [&](std::string_view s, int base) -> std::uint64_t {
    std::uint64_t v = 0;
    if (base == 16) {
      if (s.substr(0, 2) != "0x") fail("line " + std::to_string(line_no) + ": expected a hex number");
      s.remove_prefix(2);
    }
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec != std::errc{} || p != s.data() + s.size() || s.empty())
      fail("line " + std::to_string(line_no) + ": bad number \"" + std::string(s) + "\"");
    return v;
  };
  if (!next_line("dsgd checkpoint manifest").empty()) fail("line 1: not a dsgd manifest");
  auto version = number(next_line("version "), 10);
  if (version < oldest_format_version || version > format_version)
    fail("unsupported format version " + std::to_string(version) + " (this build reads " +
         std::to_string(oldest_format_version) + " to " + std::to_string(format_version) + ")");
  manifest m;
  m.version = static_cast<std::uint32_t>(version);
  m.step = number(next_line("step "), 10);
  m.placement_fingerprint = number(next_line("placement_fingerprint "), 16);
  m.placement = std::string(next_line("placement "));
  auto n = number(next_line("ps_tasks "), 10);
  if (n == 0 || n > max_ps_tasks) fail("ps task count " + std::to_string(n) + " out of range");
  auto file_entry = [&](std::string_view key, const std::string& expected) {
    auto rest = next_line(key);
    auto sp1 = rest.find(' ');
    auto sp2 = sp1 == std::string_view::npos ? sp1 : rest.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos) fail("line " + std::to_string(line_no) + ": malformed file entry");
    manifest::file f;
    f.name = std::string(rest.substr(0, sp1));
    f.bytes = number(rest.substr(sp1 + 1, sp2 - sp1 - 1), 10);
    f.crc32c = static_cast<std::uint32_t>(number(rest.substr(sp2 + 1), 16));
    if (f.name != expected)
      fail("line " + std::to_string(line_no) + ": " + std::string(key) + f.name + " should be " + expected);
    return f;
  };
  for (std::uint64_t i = 0; i < n; ++i) m.files.push_back(file_entry("file ", data_file_name(m.step, i, n)));
  // The tables' files, if any (checkpoint/table_file.hpp): an optional "tables_delta_of" line,
  // then one "table_file" line per ps task.
  if (body.substr(0, 16) == "tables_delta_of ") {
    auto previous = number(next_line("tables_delta_of "), 10);
    if (previous >= m.step)
      fail("line " + std::to_string(line_no) + ": tables_delta_of " + std::to_string(previous) +
           " is not a step before " + std::to_string(m.step));
    m.tables_delta_of = previous;
    if (body.substr(0, 11) != "table_file ") fail("line " + std::to_string(line_no) + ": no table_file lines follow");
  }
  if (body.substr(0, 11) == "table_file ")
    for (std::uint64_t i = 0; i < n; ++i)
      m.table_files.push_back(file_entry("table_file ", table_file_name(m.step, i, n)));
  if (!body.empty()) fail("unexpected text after line " + std::to_string(line_no));
  return m;
}

}  // namespace dsgd::checkpoint::detail
