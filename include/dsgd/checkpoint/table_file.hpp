// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The embedding tables' part of a checkpoint: one table file per ps task, full (every row) or
/// a delta (the rows changed since an earlier checkpoint and the keys removed since), the chain
/// of checkpoints a delta restores from, and the merge of that chain into each table's rows
/// (checkpoint/table_export.hpp writes a merged table for serving).
///
/// A checkpoint of step S whose ps tasks hold dynamic tables has, besides its data files, a
/// table file "ckpt-S.tables.ps-i-of-n" per ps task, named with its size and CRC-32C by the
/// manifest ("table_file" lines), so that the manifest's rename commits both at once. A delta's
/// manifest also names the checkpoint its tables are a delta of ("tables_delta_of P"): the
/// tables of S are those of P (itself full or a delta) with S's table files applied over them,
/// so restore reads the chain from its full base up. Keys are re-routed on restore
/// (placement::hash_keys), so the tables restore onto any number of ps tasks.
/// docs/checkpoints.md has the byte layout.
///
/// @code
///   namespace ck = dsgd::checkpoint;
///   // every row of table 'user_id' at checkpoint 900 (a full one or a delta), by key
///   for (const auto& t : ck::read_tables(dir, 900))
///     if (t.spec.name == "user_id") use(t.keys, t.values);
/// @endcode
#pragma once

#include <dsgd/checkpoint/detail/atomic_file.hpp>
#include <dsgd/checkpoint/detail/format.hpp>
#include <dsgd/detail/byte_io.hpp>
#include <dsgd/detail/crc32c.hpp>
#include <dsgd/embedding/any_row_optimizer.hpp>
#include <dsgd/embedding/eviction.hpp>
#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/error.hpp>

#include <boost/archive/text_iarchive.hpp>
#include <boost/archive/text_oarchive.hpp>

#include <tsl/robin_map.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace dsgd::checkpoint {

/// What a table's ps task counts besides its rows, so that training continues exactly after a
/// restore: update::table_shard's sync step, its update count (lazy Adam's t), the gradient
/// rows and pushes it dropped, and (bounded staleness) each worker's clock.
struct table_counters {
  std::uint64_t step = 0;
  std::uint64_t updates = 0;
  std::uint64_t dropped_keys = 0;
  std::uint64_t dropped_pushes = 0;
  std::vector<std::uint64_t> clocks;
  friend bool operator==(const table_counters&, const table_counters&) = default;
};

/// One table as one ps task wrote it into a table file: its id and spec, its counters, its rows
/// in ascending key order (weights then optimizer state, `dim + state_floats` floats each, with
/// their stats), and (a delta) the keys it no longer holds, ascending.
struct table_part {
  std::uint32_t id = 0;
  embedding::table_spec spec{};
  std::size_t dim = 0;
  std::size_t state_floats = 0;
  table_counters counters{};
  std::vector<std::uint64_t> keys;
  std::vector<embedding::row_stats> stats;
  std::vector<float> values;
  std::vector<std::uint64_t> tombstones;

  std::size_t width() const noexcept { return dim + state_floats; }
  std::size_t rows() const noexcept { return keys.size(); }
  /// @returns row @p i's weights then state.
  std::span<const float> row(std::size_t i) const noexcept { return {values.data() + i * width(), width()}; }
};

/// Whether a table file holds every row or the changes since an earlier checkpoint.
enum class table_file_kind : std::uint32_t { full = 1, delta = 2 };

/// A table file's header: whose it is and what it holds.
struct table_file_info {
  table_file_kind kind = table_file_kind::full;
  std::size_t ps_task = 0;
  std::size_t ps_tasks = 1;
  std::uint64_t step = 0;
  std::uint64_t delta_of = 0;  ///< a delta: the checkpoint it is a delta of (0 for full)
  std::size_t tables = 0;
};

/// A table file as parsed and verified.
struct table_file {
  table_file_info info;
  std::vector<table_part> tables;
};

namespace detail {

inline constexpr std::string_view table_magic = "DSGDTABL";
inline constexpr std::string_view table_trailer_magic = "DSGDTEND";
/// The table file's own version (independent of the data files' format_version).
inline constexpr std::uint32_t table_format_version = 1;
inline constexpr std::size_t table_header_bytes = 48;
inline constexpr std::size_t table_trailer_bytes = 24;
inline constexpr std::size_t max_spec_bytes = std::size_t{1} << 20;
inline constexpr std::size_t max_clocks = std::size_t{1} << 20;
inline constexpr std::size_t max_table_width = std::size_t{1} << 24;
/// Bytes of one row before its floats: key, last step, uses.
inline constexpr std::size_t row_head_bytes = 20;

/// @returns @p spec as the bytes a table file holds (a Boost text archive, which later Boost
/// versions still read).
inline std::string encode_spec(const embedding::table_spec& spec) {
  std::ostringstream out;
  {
    boost::archive::text_oarchive ar(out);
    ar << spec;
  }
  return std::move(out).str();
}

/// @returns the spec @p bytes hold. @throws dsgd::error (errc::checkpoint_corrupt) naming
/// @p where when they do not decode to a valid spec
inline embedding::table_spec decode_spec(std::string_view bytes, const std::string& where) {
  embedding::table_spec spec;
  try {
    std::istringstream in{std::string(bytes)};
    boost::archive::text_iarchive ar(in);
    ar >> spec;
  } catch (const std::exception& e) {
    throw error(errc::checkpoint_corrupt, where + ": its spec does not decode: " + e.what());
  }
  try {
    spec.validate();
  } catch (const error& e) {
    throw error(errc::checkpoint_corrupt, where + ": its spec is invalid: " + e.what());
  }
  return spec;
}

/// @returns the state floats a row of @p spec keeps (its optimizer's slots).
inline std::size_t state_floats_of(const embedding::table_spec& spec) {
  return embedding::any_row_optimizer(spec.optimizer).row_slots(spec.dim);
}

/// Buffers bytes on their way into an atomic_file, with their running CRC-32C and count.
class table_writer {
 public:
  explicit table_writer(atomic_file& out) : out_(out) {}
  std::string& buffer() noexcept { return buf_; }
  /// Writes the buffer out once it holds @p at_least bytes (0: always).
  void flush(std::size_t at_least = 0) {
    if (buf_.empty() || buf_.size() < at_least) return;
    out_.write(buf_);
    crc_ = dsgd::detail::crc32c_extend(crc_, as_bytes(buf_));
    size_ += buf_.size();
    buf_.clear();
  }
  std::uint32_t crc() const noexcept { return crc_; }
  std::uint64_t size() const noexcept { return size_ + buf_.size(); }

 private:
  atomic_file& out_;
  std::string buf_;
  std::uint32_t crc_ = 0;
  std::uint64_t size_ = 0;
};

}  // namespace detail

/// @returns "table 3 ('user_id')", how errors name a table.
inline std::string table_name(std::uint32_t id, const std::string& name) {
  return "table " + std::to_string(id) + " ('" + name + "')";
}

/// Writes @p file into @p dir as "ckpt-S.tables.ps-i-of-n" (detail::table_file_name), atomically.
/// @returns its size and CRC-32C (what the manifest names).
/// @throws dsgd::error (errc::invalid_argument) for a part whose rows, stats, values or
///         tombstones disagree in size, or keys out of order; an I/O error naming the file
inline std::pair<std::uint64_t, std::uint32_t> write_table_file(const std::filesystem::path& dir,
                                                                const table_file& file) {
  const auto& info = file.info;
  const auto name = detail::table_file_name(info.step, info.ps_task, info.ps_tasks);
  if (info.ps_tasks == 0 || info.ps_task >= info.ps_tasks || info.ps_tasks > detail::max_ps_tasks)
    throw error(errc::invalid_argument, name + ": ps task " + std::to_string(info.ps_task) + " of " +
                                            std::to_string(info.ps_tasks) + " is out of range");
  for (const auto& t : file.tables) {
    const auto who = name + ": " + table_name(t.id, t.spec.name);
    if (t.stats.size() != t.keys.size() || t.values.size() != t.keys.size() * t.width() ||
        (info.kind == table_file_kind::full && !t.tombstones.empty()) || t.counters.clocks.size() > detail::max_clocks)
      throw error(errc::invalid_argument, who + ": its keys, stats, values, tombstones or clocks disagree in size");
    if (!std::is_sorted(t.keys.begin(), t.keys.end()) || !std::is_sorted(t.tombstones.begin(), t.tombstones.end()))
      throw error(errc::invalid_argument, who + ": its keys or tombstones are not in ascending order");
  }
  std::filesystem::create_directories(dir);
  detail::atomic_file out(dir / name);
  detail::table_writer w(out);
  using dsgd::detail::put_le;
  std::string& b = w.buffer();
  b.append(detail::table_magic);
  put_le<std::uint32_t>(b, detail::table_format_version);
  put_le<std::uint32_t>(b, static_cast<std::uint32_t>(info.kind));
  put_le<std::uint32_t>(b, static_cast<std::uint32_t>(info.ps_task));
  put_le<std::uint32_t>(b, static_cast<std::uint32_t>(info.ps_tasks));
  put_le<std::uint64_t>(b, info.step);
  put_le<std::uint64_t>(b, info.kind == table_file_kind::delta ? info.delta_of : 0);
  put_le<std::uint32_t>(b, static_cast<std::uint32_t>(file.tables.size()));
  put_le<std::uint32_t>(b, dsgd::detail::crc32c(detail::as_bytes(b)));
  for (const auto& t : file.tables) {
    w.flush();
    const auto spec = detail::encode_spec(t.spec);
    put_le<std::uint32_t>(b, t.id);
    put_le<std::uint32_t>(b, static_cast<std::uint32_t>(spec.size()));
    b.append(spec);
    put_le<std::uint32_t>(b, static_cast<std::uint32_t>(t.dim));
    put_le<std::uint32_t>(b, static_cast<std::uint32_t>(t.state_floats));
    put_le<std::uint64_t>(b, t.counters.step);
    put_le<std::uint64_t>(b, t.counters.updates);
    put_le<std::uint64_t>(b, t.counters.dropped_keys);
    put_le<std::uint64_t>(b, t.counters.dropped_pushes);
    put_le<std::uint32_t>(b, static_cast<std::uint32_t>(t.counters.clocks.size()));
    for (auto c : t.counters.clocks) put_le<std::uint64_t>(b, c);
    put_le<std::uint64_t>(b, t.keys.size());
    put_le<std::uint64_t>(b, t.tombstones.size());
    put_le<std::uint32_t>(b, dsgd::detail::crc32c(detail::as_bytes(b)));
    w.flush();
    std::uint32_t crc = 0;
    for (std::size_t i = 0; i < t.keys.size(); ++i) {
      const auto start = b.size();
      put_le<std::uint64_t>(b, t.keys[i]);
      put_le<std::uint64_t>(b, t.stats[i].last_step);
      put_le<std::uint32_t>(b, t.stats[i].uses);
      dsgd::detail::put_floats(b, t.row(i));
      crc = dsgd::detail::crc32c_extend(crc, detail::as_bytes(std::string_view(b).substr(start)));
      w.flush(std::size_t{1} << 20);
    }
    for (auto k : t.tombstones) {
      const auto start = b.size();
      put_le<std::uint64_t>(b, k);
      crc = dsgd::detail::crc32c_extend(crc, detail::as_bytes(std::string_view(b).substr(start)));
      w.flush(std::size_t{1} << 20);
    }
    put_le<std::uint32_t>(b, crc);
  }
  w.flush();
  const auto body_crc = w.crc();
  const auto body_size = w.size();
  b.append(detail::table_trailer_magic);
  put_le<std::uint32_t>(b, static_cast<std::uint32_t>(file.tables.size()));
  put_le<std::uint32_t>(b, body_crc);
  put_le<std::uint64_t>(b, body_size + detail::table_trailer_bytes);
  w.flush();
  out.commit();
  return {w.size(), w.crc()};
}

namespace detail {

/// Parses the header of table file @p bytes (at least table_header_bytes), named @p name.
inline table_file_info parse_table_header(std::span<const std::byte> bytes, const std::string& name) {
  byte_reader in(bytes, name);
  auto magic = in.take(8, "magic");
  if (std::string_view(reinterpret_cast<const char*>(magic.data()), 8) != table_magic)
    in.fail("wrong magic: not a dsgd table file");
  auto version = in.read<std::uint32_t>("version");
  if (version != table_format_version)
    in.fail("unsupported table file version " + std::to_string(version) + " (this build reads " +
            std::to_string(table_format_version) + ")");
  table_file_info info;
  auto kind = in.read<std::uint32_t>("kind");
  if (kind != static_cast<std::uint32_t>(table_file_kind::full) &&
      kind != static_cast<std::uint32_t>(table_file_kind::delta))
    in.fail("unknown kind " + std::to_string(kind) + " (1 full, 2 delta)");
  info.kind = static_cast<table_file_kind>(kind);
  info.ps_task = in.read<std::uint32_t>("ps task");
  info.ps_tasks = in.read<std::uint32_t>("ps task count");
  info.step = in.read<std::uint64_t>("step");
  info.delta_of = in.read<std::uint64_t>("delta of");
  info.tables = in.read<std::uint32_t>("table count");
  auto crc = in.read<std::uint32_t>("header checksum");
  if (crc != dsgd::detail::crc32c(bytes.first(table_header_bytes - 4))) in.fail("header checksum mismatch");
  if (info.ps_tasks == 0 || info.ps_task >= info.ps_tasks || info.ps_tasks > max_ps_tasks)
    in.fail("ps task " + std::to_string(info.ps_task) + " of " + std::to_string(info.ps_tasks) + " is out of range");
  if (info.kind == table_file_kind::delta && info.delta_of >= info.step)
    in.fail("a delta of checkpoint " + std::to_string(info.delta_of) + " is not after it (step " +
            std::to_string(info.step) + ")");
  return info;
}

/// Checks the trailer at the end of @p size bytes (@p tail: the last table_trailer_bytes);
/// @returns the CRC-32C it names for the bytes before it.
inline std::uint32_t parse_table_trailer(std::span<const std::byte> tail, std::uint64_t size, std::size_t tables,
                                         const std::string& name) {
  byte_reader t(tail, name);
  auto magic = t.take(8, "trailer magic");
  auto count = t.read<std::uint32_t>("trailer table count");
  auto crc = t.read<std::uint32_t>("trailer checksum");
  auto expected = t.read<std::uint64_t>("trailer file size");
  if (std::string_view(reinterpret_cast<const char*>(magic.data()), 8) != table_trailer_magic)
    t.fail("truncated or damaged: no trailer at the end of its " + std::to_string(size) + " bytes");
  if (expected != size)
    t.fail("truncated: expected " + std::to_string(expected) + " bytes, got " + std::to_string(size));
  if (count != tables) t.fail("trailer counts " + std::to_string(count) + " tables, header " + std::to_string(tables));
  return crc;
}

}  // namespace detail

/// Parses and verifies table file @p bytes, named @p name in errors: its header, trailer and
/// every checksum, each table's spec (which must decode and validate, and agree with the
/// table's dim and state floats), keys ascending and unique, no key both a row and a tombstone,
/// every float finite, and no tombstones in a full file.
/// @throws dsgd::error (errc::checkpoint_corrupt) naming the file and, inside it, the table (and
///         key) that is wrong
inline table_file parse_table_file(std::span<const std::byte> bytes, const std::string& name) {
  using dsgd::detail::byte_reader;
  byte_reader whole(bytes, name);
  if (bytes.size() < detail::table_header_bytes + detail::table_trailer_bytes)
    whole.fail("truncated: " + std::to_string(bytes.size()) + " bytes is shorter than a header (" +
               std::to_string(detail::table_header_bytes) + ") and trailer (" +
               std::to_string(detail::table_trailer_bytes) + ")");
  table_file out;
  out.info = detail::parse_table_header(bytes.first(detail::table_header_bytes), name);
  const auto body_crc =
      detail::parse_table_trailer(bytes.last(detail::table_trailer_bytes), bytes.size(), out.info.tables, name);
  const auto body = bytes.first(bytes.size() - detail::table_trailer_bytes);
  byte_reader in(body, name);
  in.take(detail::table_header_bytes, "header");
  // Each table takes at least 60 bytes: a damaged count cannot make us reserve much.
  if (out.info.tables > in.remaining() / 60)
    whole.fail("table count " + std::to_string(out.info.tables) + " is impossible");
  out.tables.reserve(out.info.tables);
  for (std::size_t n = 0; n < out.info.tables; ++n) {
    const auto start = in.offset();
    table_part t;
    t.id = in.read<std::uint32_t>("table id");
    auto where = [&] {
      return "table " + std::to_string(t.id) + (t.spec.name.empty() ? "" : " ('" + t.spec.name + "')");
    };
    auto fail = [&](const std::string& what) { in.fail(where() + ": " + what); };
    auto spec_len = in.read<std::uint32_t>("spec length");
    if (spec_len == 0 || spec_len > detail::max_spec_bytes)
      fail("spec length " + std::to_string(spec_len) + " out of range");
    auto spec_bytes = in.take(spec_len, "spec");
    t.dim = in.read<std::uint32_t>("dim");
    t.state_floats = in.read<std::uint32_t>("state floats");
    t.counters.step = in.read<std::uint64_t>("step");
    t.counters.updates = in.read<std::uint64_t>("updates");
    t.counters.dropped_keys = in.read<std::uint64_t>("dropped keys");
    t.counters.dropped_pushes = in.read<std::uint64_t>("dropped pushes");
    auto clocks = in.read<std::uint32_t>("clock count");
    if (clocks > detail::max_clocks || clocks > in.remaining() / 8)
      fail("clock count " + std::to_string(clocks) + " out of range");
    for (std::uint32_t c = 0; c < clocks; ++c) t.counters.clocks.push_back(in.read<std::uint64_t>("clock"));
    auto rows = in.read<std::uint64_t>("row count");
    auto tombstones = in.read<std::uint64_t>("tombstone count");
    auto head_crc = in.read<std::uint32_t>("table header checksum");
    if (head_crc != dsgd::detail::crc32c(body.subspan(start, in.offset() - 4 - start)))
      fail("table header checksum mismatch");
    // The checksum held: the spec's bytes are what was written.
    t.spec = detail::decode_spec(std::string_view(reinterpret_cast<const char*>(spec_bytes.data()), spec_len),
                                 name + ": " + where());
    if (t.dim != t.spec.dim || t.state_floats != detail::state_floats_of(t.spec) || t.width() > detail::max_table_width)
      fail("rows of " + std::to_string(t.dim) + " weights and " + std::to_string(t.state_floats) +
           " state floats, but its spec (" + t.spec.describe() + ") has dim " + std::to_string(t.spec.dim) + " and " +
           std::to_string(detail::state_floats_of(t.spec)) + " state floats");
    if (out.info.kind == table_file_kind::full && tombstones != 0)
      fail(std::to_string(tombstones) + " tombstones in a full table file");
    const std::size_t row_bytes = detail::row_head_bytes + 4 * t.width();
    if (rows > in.remaining() / row_bytes || tombstones > (in.remaining() - rows * row_bytes) / 8)
      fail(std::to_string(rows) + " rows and " + std::to_string(tombstones) + " tombstones exceed the " +
           std::to_string(in.remaining()) + " bytes that remain");
    const auto rows_start = in.offset();
    t.keys.resize(rows);
    t.stats.resize(rows);
    t.values.resize(rows * t.width());
    for (std::size_t i = 0; i < rows; ++i) {
      t.keys[i] = in.read<std::uint64_t>("key");
      t.stats[i].last_step = in.read<std::uint64_t>("last step");
      t.stats[i].uses = in.read<std::uint32_t>("uses");
      auto floats = in.take(4 * t.width(), "row");
      dsgd::detail::get_floats(floats.data(), t.width(), t.values.data() + i * t.width());
    }
    t.tombstones.resize(tombstones);
    for (auto& k : t.tombstones) k = in.read<std::uint64_t>("tombstone");
    auto rows_crc = in.read<std::uint32_t>("rows checksum");
    if (rows_crc != dsgd::detail::crc32c(body.subspan(rows_start, in.offset() - 4 - rows_start)))
      fail("rows checksum mismatch");
    for (std::size_t i = 0; i < rows; ++i) {
      if (i > 0 && t.keys[i] <= t.keys[i - 1])
        fail("key " + std::to_string(t.keys[i]) + " is out of order or repeated");
      const auto row = t.row(i);
      for (std::size_t c = 0; c < row.size(); ++c)
        if (!std::isfinite(row[c]))
          fail("key " + std::to_string(t.keys[i]) + ": " +
               (c < t.dim ? "weight " + std::to_string(c) : "state float " + std::to_string(c - t.dim)) +
               " is not finite");
    }
    for (std::size_t i = 1; i < t.tombstones.size(); ++i)
      if (t.tombstones[i] <= t.tombstones[i - 1])
        fail("tombstone " + std::to_string(t.tombstones[i]) + " is out of order or repeated");
    for (auto k : t.tombstones)
      if (std::binary_search(t.keys.begin(), t.keys.end(), k))
        fail("key " + std::to_string(k) + " is both a row and a tombstone");
    for (const auto& other : out.tables)
      if (other.id == t.id) fail("appears twice");
    out.tables.push_back(std::move(t));
  }
  if (in.remaining() != 0)
    whole.fail(std::to_string(in.remaining()) + " unexpected bytes after table " + std::to_string(out.info.tables));
  if (body_crc != dsgd::detail::crc32c(body)) whole.fail("file checksum mismatch");
  return out;
}

/// What verify_table_file() found: the header, and the file's size and CRC-32C.
struct verified_table_file {
  table_file_info info;
  std::uint64_t bytes = 0;
  std::uint32_t crc32c = 0;
};

/// Verifies the table file at @p path without holding it in memory: its header, its trailer,
/// and the CRC-32C of everything before the trailer (read in 1 MiB pieces); the tables' own
/// checksums are verified when it is read (parse_table_file()). What saver::commit() checks.
/// @throws dsgd::error errc::not_found when it does not exist, errc::checkpoint_corrupt naming
///         it when it is truncated or damaged
inline verified_table_file verify_table_file(const std::filesystem::path& path) {
  const auto name = path.filename().string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) throw error(errc::not_found, "table file " + path.string() + " does not exist");
    detail::throw_io("cannot open", path, err);
  }
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_it{fd};
  std::vector<std::byte> piece(std::size_t{1} << 20);
  verified_table_file out;
  std::uint32_t crc = 0;
  std::string tail;  // the last table_trailer_bytes read
  std::uint64_t size = 0;
  std::string head;
  for (;;) {
    ssize_t n = ::read(fd, piece.data(), piece.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) detail::throw_io("cannot read", path, errno);
    if (n == 0) break;
    const std::string_view got(reinterpret_cast<const char*>(piece.data()), static_cast<std::size_t>(n));
    if (head.size() < detail::table_header_bytes)
      head.append(got.substr(0, std::min(got.size(), detail::table_header_bytes - head.size())));
    // The CRC covers everything but the last table_trailer_bytes, which are not known to be the
    // trailer until the end: hold them back.
    tail.append(got);
    if (tail.size() > detail::table_trailer_bytes) {
      const auto spill = tail.size() - detail::table_trailer_bytes;
      crc = dsgd::detail::crc32c_extend(crc, detail::as_bytes(std::string_view(tail).substr(0, spill)));
      tail.erase(0, spill);
    }
    size += static_cast<std::uint64_t>(n);
  }
  if (size < detail::table_header_bytes + detail::table_trailer_bytes)
    throw error(errc::checkpoint_corrupt,
                name + ": truncated: " + std::to_string(size) + " bytes is shorter than a header and trailer");
  out.info = detail::parse_table_header(detail::as_bytes(head), name);
  if (detail::parse_table_trailer(detail::as_bytes(tail), size, out.info.tables, name) != crc)
    throw error(errc::checkpoint_corrupt, name + ": file checksum mismatch");
  out.bytes = size;
  out.crc32c = dsgd::detail::crc32c_extend(crc, detail::as_bytes(tail));
  return out;
}

/// One checkpoint of a table chain: its step, the checkpoint its tables are a delta of (none
/// for the full base) and its table files as its manifest names them (none: no tables).
struct table_link {
  std::uint64_t step = 0;
  std::optional<std::uint64_t> delta_of;
  std::vector<detail::manifest::file> files;
};

/// @returns the chain of committed checkpoints whose table files make the tables of checkpoint
/// @p step in @p dir: its full base first, then each delta up to @p step. Reads and verifies
/// the manifests only.
/// @throws dsgd::error errc::not_found when @p step has no manifest; errc::checkpoint_corrupt
///         when a manifest does not verify or names a checkpoint that has none (a delta whose
///         base was deleted)
inline std::vector<table_link> table_chain(const std::filesystem::path& dir, std::uint64_t step) {
  std::vector<table_link> chain;
  std::optional<std::uint64_t> next = step;
  while (next) {
    const auto mname = detail::manifest_name(*next);
    std::string text;
    try {
      text = detail::read_file(dir / mname, detail::max_manifest_bytes);
    } catch (const error& e) {
      if (e.code() != errc::not_found || chain.empty()) throw;
      throw error(errc::checkpoint_corrupt, detail::manifest_name(chain.back().step) + ": its tables are a delta of " +
                                                "checkpoint " + std::to_string(*next) + ", which has no manifest in " +
                                                dir.string());
    }
    auto m = detail::parse_manifest(text, mname);
    if (m.step != *next) throw error(errc::checkpoint_corrupt, mname + ": names step " + std::to_string(m.step));
    chain.push_back({m.step, m.tables_delta_of, std::move(m.table_files)});
    next = m.tables_delta_of;
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

/// Reads the table file @p f of checkpoint @p link (ps task @p ps_task of @p ps_tasks), checking
/// it against the manifest (size, CRC-32C) and its header against the link (step, task, kind,
/// what it is a delta of).
/// @throws dsgd::error (errc::checkpoint_corrupt) naming the file
inline table_file read_table_file(const std::filesystem::path& dir, const table_link& link,
                                  const detail::manifest::file& f, std::size_t ps_task, std::size_t ps_tasks) {
  const auto mname = detail::manifest_name(link.step);
  std::error_code ec;
  const auto size = std::filesystem::file_size(dir / f.name, ec);
  if (ec) throw error(errc::checkpoint_corrupt, f.name + ": missing (named by " + mname + ")");
  if (size != f.bytes)
    throw error(errc::checkpoint_corrupt, f.name + ": " + (size < f.bytes ? "truncated: " : "wrong size: ") +
                                              "expected " + std::to_string(f.bytes) + " bytes, got " +
                                              std::to_string(size));
  const auto bytes = detail::read_file(dir / f.name, f.bytes);
  if (dsgd::detail::crc32c(detail::as_bytes(bytes)) != f.crc32c)
    throw error(errc::checkpoint_corrupt, f.name + ": checksum differs from " + mname);
  auto file = parse_table_file(detail::as_bytes(bytes), f.name);
  const auto& i = file.info;
  const auto kind = link.delta_of ? table_file_kind::delta : table_file_kind::full;
  if (i.step != link.step || i.ps_task != ps_task || i.ps_tasks != ps_tasks || i.kind != kind ||
      (link.delta_of && i.delta_of != *link.delta_of))
    throw error(
        errc::checkpoint_corrupt,
        f.name + ": header names step " + std::to_string(i.step) + ", ps " + std::to_string(i.ps_task) + " of " +
            std::to_string(i.ps_tasks) + ", " +
            (i.kind == table_file_kind::full ? std::string("full") : "a delta of " + std::to_string(i.delta_of)) +
            ", which " + mname + " does not");
  return file;
}

/// One table of a checkpoint, its chain merged: its rows (those a filter kept) in ascending key
/// order, and the counters of every ps task of the newest checkpoint that held it.
struct merged_table {
  std::uint32_t id = 0;
  embedding::table_spec spec{};
  std::size_t dim = 0;
  std::size_t state_floats = 0;
  std::uint64_t counters_step = 0;       ///< the checkpoint whose counters these are
  std::vector<table_counters> counters;  ///< per ps task of that checkpoint
  std::vector<std::uint64_t> keys;
  std::vector<embedding::row_stats> stats;
  std::vector<float> values;  ///< keys.size() x (dim + state_floats)

  std::size_t width() const noexcept { return dim + state_floats; }
  std::size_t rows() const noexcept { return keys.size(); }
  std::span<const float> row(std::size_t i) const noexcept { return {values.data() + i * width(), width()}; }

  /// @returns the counters ps task @p ps_task of @p ps_tasks continues from: its own when the
  /// checkpoint was written by as many ps tasks, else the largest of each (the sync step is the
  /// same on every task; the update counts and clocks of other ps tasks are no one's own).
  table_counters counters_for(std::size_t ps_task, std::size_t ps_tasks) const {
    if (counters.size() == ps_tasks) return counters[ps_task];
    table_counters m;
    for (const auto& c : counters) {
      m.step = std::max(m.step, c.step);
      m.updates = std::max(m.updates, c.updates);
      m.dropped_keys = std::max(m.dropped_keys, c.dropped_keys);
      m.dropped_pushes = std::max(m.dropped_pushes, c.dropped_pushes);
      if (m.clocks.size() < c.clocks.size()) m.clocks.resize(c.clocks.size(), 0);
      for (std::size_t i = 0; i < c.clocks.size(); ++i) m.clocks[i] = std::max(m.clocks[i], c.clocks[i]);
    }
    return m;
  }
};

/// The tables of checkpoint @p step in @p dir (a full one, or a delta: its chain from the full
/// base up, table_chain()), merged: for each table, the rows whose key @p keep(key) accepts, as
/// the base has them with every delta's rows and tombstones applied in order. One table file
/// is in memory at a time, besides the merged rows.
/// @returns the tables by ascending id (none when the checkpoint holds none).
/// @throws dsgd::error as table_chain() and read_table_file(), and errc::checkpoint_corrupt when
///         two files give a table different specs
template <class Keep>
std::vector<merged_table> read_tables(const std::filesystem::path& dir, std::uint64_t step, Keep keep) {
  struct building {
    merged_table t;
    std::size_t counters_link = 0;
    std::string spec_file;
    tsl::robin_map<std::uint64_t, std::size_t> index;  // key -> its row in t
    std::vector<char> alive;
  };
  std::vector<building> tables;
  auto find = [&](std::uint32_t id) {
    return std::find_if(tables.begin(), tables.end(), [&](const building& b) { return b.t.id == id; });
  };
  const auto chain = table_chain(dir, step);
  for (std::size_t l = 0; l < chain.size(); ++l) {
    const auto& link = chain[l];
    for (std::size_t f = 0; f < link.files.size(); ++f) {
      auto file = read_table_file(dir, link, link.files[f], f, link.files.size());
      for (auto& part : file.tables) {
        auto it = find(part.id);
        if (it == tables.end()) {
          tables.emplace_back();
          it = std::prev(tables.end());
          it->t.id = part.id;
          it->t.spec = part.spec;
          it->t.dim = part.dim;
          it->t.state_floats = part.state_floats;
          it->spec_file = link.files[f].name;
        } else if (!(it->t.spec == part.spec)) {
          throw error(errc::checkpoint_corrupt, link.files[f].name + ": " + table_name(part.id, part.spec.name) +
                                                    " is " + part.spec.describe() + ", but " + it->spec_file +
                                                    " has it as " + it->t.spec.describe());
        }
        auto& b = *it;
        if (b.t.counters.empty() || l > b.counters_link) {
          b.counters_link = l;
          b.t.counters_step = link.step;
          b.t.counters.assign(link.files.size(), table_counters{});
        }
        b.t.counters[f] = part.counters;
        for (auto k : part.tombstones)
          if (auto at = b.index.find(k); at != b.index.end()) b.alive[at->second] = 0;
        const std::size_t w = b.t.width();
        for (std::size_t i = 0; i < part.rows(); ++i) {
          if (!keep(part.keys[i])) continue;
          auto [at, fresh] = b.index.try_emplace(part.keys[i], b.t.keys.size());
          if (fresh) {
            b.t.keys.push_back(part.keys[i]);
            b.t.stats.push_back(part.stats[i]);
            b.t.values.insert(b.t.values.end(), part.row(i).begin(), part.row(i).end());
            b.alive.push_back(1);
          } else {
            b.t.stats[at->second] = part.stats[i];
            std::copy(part.row(i).begin(), part.row(i).end(), b.t.values.begin() + at->second * w);
            b.alive[at->second] = 1;
          }
        }
      }
    }
  }
  std::vector<merged_table> out;
  std::sort(tables.begin(), tables.end(), [](const building& a, const building& b) { return a.t.id < b.t.id; });
  for (auto& b : tables) {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < b.t.keys.size(); ++i)
      if (b.alive[i]) order.push_back(i);
    std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return b.t.keys[x] < b.t.keys[y]; });
    merged_table m;
    m.id = b.t.id;
    m.spec = std::move(b.t.spec);
    m.dim = b.t.dim;
    m.state_floats = b.t.state_floats;
    m.counters_step = b.t.counters_step;
    m.counters = std::move(b.t.counters);
    const std::size_t w = m.width();
    m.keys.reserve(order.size());
    m.stats.reserve(order.size());
    m.values.reserve(order.size() * w);
    for (auto i : order) {
      m.keys.push_back(b.t.keys[i]);
      m.stats.push_back(b.t.stats[i]);
      m.values.insert(m.values.end(), b.t.values.begin() + i * w, b.t.values.begin() + (i + 1) * w);
    }
    out.push_back(std::move(m));
  }
  return out;
}

/// @returns every table of checkpoint @p step in @p dir with all its rows (read_tables()).
inline std::vector<merged_table> read_tables(const std::filesystem::path& dir, std::uint64_t step) {
  return read_tables(dir, step, [](std::uint64_t) { return true; });
}

}  // namespace dsgd::checkpoint
