// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The CTR example file: click-through-rate examples with their categorical ids already
/// hashed to 64-bit keys, in fixed-size little-endian records that every system of the CTR
/// benchmark reads the same way (numpy as a structured dtype at offset 64). A streaming reader
/// (ctr_file_reader: a few MiB in memory whatever the file's size, sharded, looping over
/// epochs) and a writer (ctr_file_writer; tools/dsgd_ctr_data.cpp writes data::click_stream
/// with it).
///
/// Version 1, every number little-endian:
///
///   header, 64 bytes
///     0  char[8] magic "DSGDCTR1"
///     8  u32     version = 1
///     12 u32     dense_features D (may be 0)
///     16 u32     fields F, categorical ids per example (at least 1)
///     20 u32     flags: bit 0 = the probability column holds a teacher's click probability
///                (synthetic data); the other bits are 0
///     24 u64     examples N
///     32 byte[32] zero (room for later versions: a reader rejects anything else)
///   N records of record_bytes = align8(4 (2 + D)) + 8 F bytes each
///     f32 label, exactly 0 or 1
///     f32 probability: the teacher's, in [0, 1], when flags bit 0; else 0
///     f32 dense[D], finite
///     zero bytes up to a multiple of 8
///     u64 keys[F], any 64-bit values
///
/// The file is exactly 64 + N record_bytes bytes. A writer sets N last, in close(): until then
/// the header's N is 2^64 - 1, which no reader accepts, so a file whose writer was interrupted
/// is rejected as unfinished rather than read short.
///
/// @code
/// // numpy: np.fromfile(path, offset=64, dtype=np.dtype([("label", "<f4"), ("probability", "<f4"),
/// //   ("dense", "<f4", D)] + ([("pad", "V4")] if D % 2 else []) + [("keys", "<u8", F)]))
/// dsgd::data::ctr_file_reader train({.path = "train.ctr", .batch = 4096, .shard = k, .shards = workers,
///                                    .loop = true});
/// for (;;) {
///   const dsgd::data::ctr_batch& b = train.next();  // b.dense: b.size x D, b.keys: b.size x F
///   if (train.epoch() == epochs) break;
///   step(b);
/// }
/// @endcode
#pragma once

#include <dsgd/data/ctr_batch.hpp>
#include <dsgd/detail/byte_io.hpp>
#include <dsgd/detail/validate.hpp>
#include <dsgd/error.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace dsgd::data {

/// Flags bit 0 of a CTR file: its probability column holds a teacher's click probabilities.
inline constexpr std::uint32_t ctr_file_probabilities = 1;

/// A CTR file's header: the shape of its records and their number.
struct ctr_file_header {
  std::uint32_t dense_features = 0;  ///< D, dense floats per example
  std::uint32_t fields = 1;          ///< F, categorical ids per example, at least 1
  std::uint32_t flags = 0;           ///< ctr_file_probabilities or 0
  std::uint64_t examples = 0;        ///< N

  /// @returns the bytes of one record: align8(4 (2 + D)) + 8 F.
  std::size_t record_bytes() const noexcept {
    const std::uint64_t floats = 4 * (2 + std::uint64_t{dense_features});
    return static_cast<std::size_t>((floats + 7) / 8 * 8 + 8 * std::uint64_t{fields});
  }
  /// @returns whether the probability column holds a teacher's probabilities (flags bit 0).
  bool has_probabilities() const noexcept { return (flags & ctr_file_probabilities) != 0; }
  /// @returns the file's size in bytes: 64 + N record_bytes() (callers check that it fits).
  std::uint64_t file_bytes() const noexcept { return 64 + examples * record_bytes(); }

  friend bool operator==(const ctr_file_header&, const ctr_file_header&) = default;
};

namespace detail {

inline constexpr std::string_view ctr_magic = "DSGDCTR1";
inline constexpr std::uint32_t ctr_version = 1;
inline constexpr std::size_t ctr_header_bytes = 64;
/// The header's N while a writer has not finished.
inline constexpr std::uint64_t ctr_unfinished = std::numeric_limits<std::uint64_t>::max();

[[noreturn]] inline void ctr_corrupt(const std::string& file, const std::string& what) {
  throw error(errc::dataset_corrupt, file + ": " + what);
}

/// Throws the system error @p err (errno) of @p what on @p path, naming both.
[[noreturn]] inline void ctr_io_error(const std::string& what, const std::filesystem::path& path, int err) {
  if (err == 0) err = EIO;
  throw error(error_code(err, boost::system::system_category()),
              what + " " + path.string() + ": " + std::strerror(err));
}

/// @returns @p v as the shortest text that reads back as it ("0.5", "nan", "-inf").
inline std::string ctr_float_text(float v) {
  std::array<char, 32> text{};
  const auto [end, ec] = std::to_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc{} ? std::string(text.data(), end) : std::to_string(v);
}

/// @returns the header as its 64 bytes.
inline std::string encode_ctr_header(const ctr_file_header& h) {
  std::string out(ctr_magic);
  dsgd::detail::put_le(out, ctr_version);
  dsgd::detail::put_le(out, h.dense_features);
  dsgd::detail::put_le(out, h.fields);
  dsgd::detail::put_le(out, h.flags);
  dsgd::detail::put_le(out, h.examples);
  out.resize(ctr_header_bytes, '\0');
  return out;
}

/// @returns the header in the first bytes of @p bytes (all of them, when there are fewer than
/// 64) of file @p file, whose size is @p file_bytes.
/// @throws dsgd::error (errc::dataset_corrupt) naming @p file and the check it failed
inline ctr_file_header parse_ctr_header(std::span<const std::byte> bytes, std::uint64_t file_bytes,
                                        const std::string& file) {
  if (bytes.size() < ctr_header_bytes || file_bytes < ctr_header_bytes)
    ctr_corrupt(file, "truncated: " + std::to_string(std::min<std::uint64_t>(bytes.size(), file_bytes)) +
                          " bytes is shorter than the 64-byte header");
  const std::string_view magic(reinterpret_cast<const char*>(bytes.data()), ctr_magic.size());
  if (magic != ctr_magic) {
    std::string shown;
    for (char c : magic) {
      if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
        shown += c;
      } else {
        static constexpr char hex[] = "0123456789abcdef";
        const auto u = static_cast<unsigned char>(c);
        shown += std::string("\\x") + hex[u >> 4] + hex[u & 15];
      }
    }
    ctr_corrupt(file, "wrong magic: expected \"DSGDCTR1\", got \"" + shown + "\" (not a CTR example file)");
  }
  const auto version = dsgd::detail::get_le<std::uint32_t>(bytes.data() + 8);
  if (version != ctr_version)
    ctr_corrupt(file, "unsupported version " + std::to_string(version) + " (this reader reads version " +
                          std::to_string(ctr_version) + ")");
  ctr_file_header h;
  h.dense_features = dsgd::detail::get_le<std::uint32_t>(bytes.data() + 12);
  h.fields = dsgd::detail::get_le<std::uint32_t>(bytes.data() + 16);
  h.flags = dsgd::detail::get_le<std::uint32_t>(bytes.data() + 20);
  h.examples = dsgd::detail::get_le<std::uint64_t>(bytes.data() + 24);
  if (h.fields == 0) ctr_corrupt(file, "fields is 0 (an example has at least one categorical id)");
  if ((h.flags & ~ctr_file_probabilities) != 0) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", static_cast<unsigned>(h.flags));
    ctr_corrupt(file, std::string("unknown flags ") + text + " (only bit 0, teacher probabilities, is defined)");
  }
  for (std::size_t i = 32; i < ctr_header_bytes; ++i)
    if (bytes[i] != std::byte{0})
      ctr_corrupt(file, "reserved header byte " + std::to_string(i) + " is not zero (a later version's file?)");
  if (h.examples == ctr_unfinished)
    ctr_corrupt(file, "unfinished: examples is 2^64-1, the mark of a writer that did not reach close()");
  const std::uint64_t record = h.record_bytes();
  const std::uint64_t body = file_bytes - ctr_header_bytes;
  if (h.examples > body / record || body != h.examples * record) {
    const bool fits = h.examples <= (std::numeric_limits<std::uint64_t>::max() - ctr_header_bytes) / record;
    ctr_corrupt(file, "wrong size: a 64-byte header and " + std::to_string(h.examples) + " examples of " +
                          std::to_string(record) + " bytes are " +
                          (fits ? std::to_string(h.file_bytes()) + " bytes" : std::string("more than 2^64 bytes")) +
                          ", but the file has " + std::to_string(file_bytes) +
                          (h.examples > body / record ? " (truncated)" : " (trailing bytes)"));
  }
  return h;
}

/// Decodes record @p index of @p file (header @p h) at @p p into @p dense (D floats), @p keys
/// (F keys), @p label and @p probability, checking it.
/// @throws dsgd::error (errc::dataset_corrupt) naming @p file, the record and the value
inline void decode_ctr_record(const std::byte* p, const ctr_file_header& h, std::uint64_t index,
                              const std::string& file, float* dense, std::uint64_t* keys, float& label,
                              float& probability) {
  auto bad = [&](const std::string& what) { ctr_corrupt(file, "record " + std::to_string(index) + ": " + what); };
  label = dsgd::detail::get_le<float>(p);
  probability = dsgd::detail::get_le<float>(p + 4);
  if (label != 0.0f && label != 1.0f) bad("label " + ctr_float_text(label) + " is not 0 or 1");
  if (h.has_probabilities()) {
    if (!(probability >= 0.0f && probability <= 1.0f))
      bad("probability " + ctr_float_text(probability) + " is not in [0, 1]");
  } else if (probability != 0.0f) {
    bad("probability " + ctr_float_text(probability) + " is not 0 (flags bit 0 is clear: the file has none)");
  }
  const std::size_t d = h.dense_features;
  dsgd::detail::get_floats(p + 8, d, dense);
  for (std::size_t j = 0; j < d; ++j)
    if (!std::isfinite(dense[j])) bad("dense feature " + std::to_string(j) + " is " + ctr_float_text(dense[j]));
  const std::size_t floats_end = 8 + 4 * d, keys_at = (floats_end + 7) / 8 * 8;
  for (std::size_t b = floats_end; b < keys_at; ++b)
    if (p[b] != std::byte{0}) bad("padding byte " + std::to_string(b) + " is not zero");
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(keys, p + keys_at, 8 * std::size_t{h.fields});
  } else {
    for (std::size_t f = 0; f < h.fields; ++f) keys[f] = dsgd::detail::get_le<std::uint64_t>(p + keys_at + 8 * f);
  }
}

}  // namespace detail

/// Reads and checks the header of the CTR file at @p path: magic, version, fields, flags, the
/// reserved bytes, a finished writer and the file's size against N. The records are checked
/// as a reader reads them.
/// @throws dsgd::error errc::dataset_missing when @p path is not a file that can be opened,
///         errc::dataset_corrupt naming it and the check it failed
inline ctr_file_header read_ctr_file_header(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw error(errc::dataset_missing, path.string() + ": no such CTR example file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(errc::dataset_missing, path.string() + ": cannot be opened");
  std::array<std::byte, detail::ctr_header_bytes> head{};
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
  const auto got = static_cast<std::size_t>(in.gcount());
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw error(errc::dataset_missing, path.string() + ": cannot read its size (" + ec.message() + ")");
  return detail::parse_ctr_header(std::span<const std::byte>(head.data(), got), size, path.string());
}

/// Writes a CTR file, one example or one batch at a time, through a buffer of about 1 MiB.
///
/// Every example is checked before any byte of it is buffered (a rejected one is not written,
/// and the writer goes on). close() writes N into the header; until then the header holds the
/// unfinished mark (see the file comment), so a file whose writer was interrupted (a crash, a
/// kill, an exception through the writer) is rejected by every reader.
///
/// @code
/// dsgd::data::ctr_file_writer out("train.ctr", 13, 26, dsgd::data::ctr_file_probabilities);
/// out.write(dense, keys, 1.0f, 0.31f);  // or out.write(batch)
/// out.close();                          // throws on a write error (disk full)
/// @endcode
class ctr_file_writer {
 public:
  /// Creates (or truncates) @p path for examples of @p dense_features floats and @p fields ids,
  /// with @p flags (ctr_file_probabilities or 0).
  /// @throws dsgd::error errc::invalid_argument for fields 0 or an unknown flag; the system
  ///         error (errno) naming @p path when it cannot be created
  ctr_file_writer(std::filesystem::path path, std::uint32_t dense_features, std::uint32_t fields,
                  std::uint32_t flags = 0)
      : path_(std::move(path)), header_{dense_features, fields, flags, 0} {
    if (fields == 0)
      throw error(errc::invalid_argument, path_.string() + ": fields must be at least 1 (categorical ids per example)");
    if ((flags & ~ctr_file_probabilities) != 0)
      throw error(errc::invalid_argument, path_.string() + ": flags " + std::to_string(flags) +
                                              " has bits other than ctr_file_probabilities (1)");
    file_.reset(std::fopen(path_.c_str(), "wb"));
    if (!file_) detail::ctr_io_error("cannot create", path_, errno);
    auto unfinished = header_;
    unfinished.examples = detail::ctr_unfinished;
    // The buffer grows to about flush_bytes as examples come (not reserved: a writer of a few
    // examples allocates a few records).
    buffer_ = detail::encode_ctr_header(unfinished);
  }

  ctr_file_writer(const ctr_file_writer&) = delete;
  ctr_file_writer& operator=(const ctr_file_writer&) = delete;
  ctr_file_writer(ctr_file_writer&&) noexcept = default;
  ctr_file_writer& operator=(ctr_file_writer&&) = delete;

  /// Finishes the file as close() does, but throws nothing (an error leaves it unfinished).
  /// While an exception unwinds through it, it leaves the file unfinished instead: what was
  /// written before the failure is not a data set anyone asked for.
  ~ctr_file_writer() {
    if (!file_) return;
    if (std::uncaught_exceptions() > uncaught_ || failed_) {
      file_.reset();
      return;
    }
    try {
      close();
    } catch (...) {
      // A destructor cannot report it; the header keeps its unfinished mark.
    }
  }

  /// Appends one example: @p dense (D floats, finite), @p keys (F ids), @p label (0 or 1) and,
  /// when the file has probabilities, @p probability (in [0, 1]; without them it is not
  /// written: the column holds 0).
  /// @throws dsgd::error errc::invalid_argument naming the file and the example for a wrong
  ///         size or value (nothing is written), the system error naming the file when a write
  ///         fails, errc::invalid_argument after close()
  void write(std::span<const float> dense, std::span<const std::uint64_t> keys, float label, float probability = 0) {
    check_open();
    check(dense, keys.size(), label, probability, header_.examples);
    append(dense, keys.data(), label, probability);
  }

  /// Appends the @p b.size examples of @p b (its shape must be the file's), checking all of
  /// them before it writes any.
  /// @throws as write(dense, keys, label, probability)
  void write(const ctr_batch& b) {
    check_open();
    if (b.dense_features != header_.dense_features || b.fields != header_.fields)
      throw error(errc::invalid_argument,
                  path_.string() + ": a batch of " + std::to_string(b.dense_features) + " dense features and " +
                      std::to_string(b.fields) + " fields, but the file's examples have " +
                      std::to_string(header_.dense_features) + " and " + std::to_string(header_.fields));
    if (b.dense.size() != b.size * b.dense_features || b.keys.size() != b.size * b.fields ||
        b.labels.size() != b.size || b.probabilities.size() != b.size)
      throw error(errc::invalid_argument, path_.string() + ": a batch of " + std::to_string(b.size) +
                                              " examples whose vectors hold " + std::to_string(b.dense.size()) +
                                              " dense floats, " + std::to_string(b.keys.size()) + " keys, " +
                                              std::to_string(b.labels.size()) + " labels and " +
                                              std::to_string(b.probabilities.size()) + " probabilities");
    for (std::size_t r = 0; r < b.size; ++r)
      check(b.dense_row(r), b.fields, b.labels[r], b.probabilities[r], header_.examples + r);
    for (std::size_t r = 0; r < b.size; ++r)
      append(b.dense_row(r), b.keys.data() + r * b.fields, b.labels[r], b.probabilities[r]);
  }

  /// Writes what is buffered, then N into the header, and closes the file. Does nothing when
  /// it is closed already.
  /// @throws dsgd::error the system error naming the file when a write fails (disk full): the
  ///         file is then left unfinished
  void close() {
    if (!file_) return;
    std::unique_ptr<std::FILE, file_closer> file = std::move(file_);
    if (failed_) throw error(errc::invalid_argument, path_.string() + ": not finished: an earlier write failed");
    flush(file.get());
    const std::string n = [&] {
      std::string out;
      dsgd::detail::put_le(out, header_.examples);
      return out;
    }();
    if (std::fflush(file.get()) != 0) fail_io("cannot write");
    if (std::fseek(file.get(), 24, SEEK_SET) != 0) fail_io("cannot seek in");
    if (std::fwrite(n.data(), 1, n.size(), file.get()) != n.size() || std::fflush(file.get()) != 0)
      fail_io("cannot write");
    if (std::fclose(file.release()) != 0) fail_io("cannot close");
  }

  /// @returns the header as close() will write it: examples is the number written so far.
  const ctr_file_header& header() const noexcept { return header_; }
  /// @returns the number of examples written so far.
  std::uint64_t examples() const noexcept { return header_.examples; }
  /// @returns the path it writes.
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  struct file_closer {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
  };
  static constexpr std::size_t flush_bytes = std::size_t{1} << 20;

  void check_open() const {
    if (!file_) throw error(errc::invalid_argument, path_.string() + ": written after close()");
    if (failed_) throw error(errc::invalid_argument, path_.string() + ": written after a write failed");
  }

  void check(std::span<const float> dense, std::size_t fields, float label, float probability,
             std::uint64_t index) const {
    auto bad = [&](const std::string& what) {
      throw error(errc::invalid_argument, path_.string() + ": example " + std::to_string(index) + ": " + what);
    };
    if (dense.size() != header_.dense_features || fields != header_.fields)
      bad(std::to_string(dense.size()) + " dense features and " + std::to_string(fields) + " keys, expected " +
          std::to_string(header_.dense_features) + " and " + std::to_string(header_.fields));
    if (label != 0.0f && label != 1.0f) bad("label " + detail::ctr_float_text(label) + " is not 0 or 1");
    if (header_.has_probabilities() && !(probability >= 0.0f && probability <= 1.0f))
      bad("probability " + detail::ctr_float_text(probability) + " is not in [0, 1]");
    for (std::size_t j = 0; j < dense.size(); ++j)
      if (!std::isfinite(dense[j]))
        bad("dense feature " + std::to_string(j) + " is " + detail::ctr_float_text(dense[j]));
  }

  void append(std::span<const float> dense, const std::uint64_t* keys, float label, float probability) {
    dsgd::detail::put_le(buffer_, label);
    dsgd::detail::put_le(buffer_, header_.has_probabilities() ? probability : 0.0f);
    dsgd::detail::put_floats(buffer_, dense);
    if (dense.size() % 2 == 1) buffer_.append(4, '\0');  // 8 + 4 D bytes so far
    if constexpr (std::endian::native == std::endian::little) {
      buffer_.append(reinterpret_cast<const char*>(keys), 8 * std::size_t{header_.fields});
    } else {
      for (std::size_t f = 0; f < header_.fields; ++f) dsgd::detail::put_le(buffer_, keys[f]);
    }
    ++header_.examples;
    if (buffer_.size() >= flush_bytes) flush(file_.get());
  }

  void flush(std::FILE* f) {
    if (buffer_.empty()) return;
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), f) != buffer_.size()) fail_io("cannot write");
    buffer_.clear();
  }

  [[noreturn]] void fail_io(const std::string& what) {
    const int err = errno;
    failed_ = true;
    detail::ctr_io_error(what, path_, err);
  }

  std::filesystem::path path_;
  ctr_file_header header_;
  std::unique_ptr<std::FILE, file_closer> file_;
  std::string buffer_;
  bool failed_ = false;
  int uncaught_ = std::uncaught_exceptions();
};

/// Reads one shard of a CTR file in batches, streaming: it holds one batch and a read buffer
/// (options::buffer_bytes) whatever the file's size, and checks every record it reads.
///
/// Shard k of K is the contiguous records [k N / K, (k + 1) N / K): shards are disjoint and
/// together they are the file. next() hands out options::batch records at a time, in file
/// order; the shard's last batch may be short. At the shard's end a reader without
/// options::loop returns empty batches; one with it wraps to the shard's start and counts an
/// epoch (a batch never spans two epochs).
class ctr_file_reader {
 public:
  /// What to read. validate() says which field is wrong; the constructor checks what needs the
  /// file (first, loop).
  struct options {
    std::filesystem::path path;                       ///< the CTR file
    std::size_t batch = 4096;                         ///< examples per next()
    std::size_t shard = 0;                            ///< this reader's shard, < shards
    std::size_t shards = 1;                           ///< number of disjoint shards, at most 2^32
    bool loop = false;                                ///< endless: wrap to the shard's start, counting epochs
    std::uint64_t first = 0;                          ///< examples of the shard to skip (a position() to resume from)
    std::size_t buffer_bytes = std::size_t{4} << 20;  ///< read at a time (whole records, at least one)

    /// @throws dsgd::error (errc::invalid_argument) naming the first bad field.
    void validate() const {
      constexpr std::string_view at = "ctr_file_reader::options";
      if (path.empty()) dsgd::detail::bad_option(at, "path", "must name a file");
      if (batch == 0) dsgd::detail::bad_option(at, "batch", "must be greater than 0");
      if (shards == 0) dsgd::detail::bad_option(at, "shards", "must be greater than 0");
      if (shards > (std::size_t{1} << 32)) dsgd::detail::bad_option(at, "shards", "must be at most 2^32");
      if (shard >= shards)
        dsgd::detail::bad_option(
            at, "shard", "must be less than shards (" + std::to_string(shards) + "), got " + std::to_string(shard));
      if (buffer_bytes == 0) dsgd::detail::bad_option(at, "buffer_bytes", "must be greater than 0");
    }
  };

  /// Opens @p o.path and checks its header (read_ctr_file_header()).
  /// @throws dsgd::error errc::invalid_argument for bad options (options::validate(), a first
  ///         past the end of a shard without loop, loop over an empty shard); as
  ///         read_ctr_file_header() for a missing or bad file
  explicit ctr_file_reader(options o) : options_((o.validate(), std::move(o))), name_(options_.path.string()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(options_.path, ec))
      throw error(errc::dataset_missing, name_ + ": no such CTR example file");
    in_.open(options_.path, std::ios::binary);
    if (!in_) throw error(errc::dataset_missing, name_ + ": cannot be opened");
    std::array<std::byte, detail::ctr_header_bytes> head{};
    in_.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
    const auto got = static_cast<std::size_t>(in_.gcount());
    in_.clear();
    const auto size = std::filesystem::file_size(options_.path, ec);
    if (ec) throw error(errc::dataset_missing, name_ + ": cannot read its size (" + ec.message() + ")");
    header_ = detail::parse_ctr_header(std::span<const std::byte>(head.data(), got), size, name_);
    record_bytes_ = header_.record_bytes();
    at_ = got == head.size() ? 0 : unknown;

    // floor(k N / K) without overflow: k (N mod K) < K^2 <= 2^64.
    const std::uint64_t n = header_.examples, k = options_.shards;
    auto bound = [&](std::uint64_t s) { return s * (n / k) + s * (n % k) / k; };
    begin_ = bound(options_.shard);
    examples_ = bound(options_.shard + 1) - begin_;

    constexpr std::string_view at = "ctr_file_reader::options";
    if (options_.loop && examples_ == 0)
      dsgd::detail::bad_option(at, "loop",
                               "shard " + std::to_string(options_.shard) + " of " + std::to_string(options_.shards) +
                                   " of " + name_ + " (" + std::to_string(n) +
                                   " examples) is empty: nothing to loop over");
    if (options_.loop) {
      epoch_ = options_.first / examples_;
      position_ = options_.first % examples_;
    } else if (options_.first > examples_) {
      dsgd::detail::bad_option(at, "first",
                               std::to_string(options_.first) + " is past the " + std::to_string(examples_) +
                                   " examples of shard " + std::to_string(options_.shard) + " of " + name_);
    } else {
      position_ = options_.first;
    }
    // Whole records, no more than a batch or the shard needs: an empty shard allocates nothing.
    buffer_records_ = std::min<std::uint64_t>(
        {std::max<std::size_t>(options_.buffer_bytes / record_bytes_, 1), options_.batch, examples_});
    buffer_.resize(buffer_records_ * record_bytes_);
    batch_.resize(0, header_.dense_features, header_.fields);
  }

  /// @returns the next batch of the shard, in buffers this object owns and reuses: the
  /// reference stays valid, its contents change on the next call. At the shard's end (without
  /// loop) a batch of size 0.
  /// @throws dsgd::error (errc::dataset_corrupt) naming the file and the record when a record
  ///         is bad or the file ends early (it shrank after it was opened); the next call reads
  ///         the same batch again
  const ctr_batch& next() {
    if (position_ == examples_) {
      if (!options_.loop) {
        batch_.resize(0, header_.dense_features, header_.fields);
        batch_.first = begin_ + examples_;
        return batch_;
      }
      position_ = 0;
      ++epoch_;
    }
    const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(options_.batch, examples_ - position_));
    const std::uint64_t first = begin_ + position_;
    batch_.resize(count, header_.dense_features, header_.fields);
    batch_.first = first;
    const std::size_t d = header_.dense_features, f = header_.fields;
    for (std::size_t done = 0; done < count;) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(count - done, buffer_records_));
      load(first + done, n);
      for (std::size_t r = 0; r < n; ++r) {
        const std::size_t row = done + r;
        detail::decode_ctr_record(buffer_.data() + r * record_bytes_, header_, first + row, name_,
                                  batch_.dense.data() + row * d, batch_.keys.data() + row * f, batch_.labels[row],
                                  batch_.probabilities[row]);
      }
      done += n;
    }
    position_ += count;
    return batch_;
  }

  /// @returns the file's header.
  const ctr_file_header& header() const noexcept { return header_; }
  /// @returns the number of examples of this shard.
  std::uint64_t examples() const noexcept { return examples_; }
  /// @returns the index in the file of this shard's first example.
  std::uint64_t shard_begin() const noexcept { return begin_; }
  /// @returns the pass over the shard the last batch came from: 0 for the first; with loop,
  /// one more each time it wrapped (before any next(), the pass options::first is in).
  std::uint64_t epoch() const noexcept { return epoch_; }
  /// @returns the examples of the shard handed out so far, over every epoch and counting
  /// options::first: a reader made with first = position() goes on where this one is.
  std::uint64_t position() const noexcept { return epoch_ * examples_ + position_; }
  /// @returns the options it was made with.
  const options& config() const noexcept { return options_; }

 private:
  static constexpr std::uint64_t unknown = std::numeric_limits<std::uint64_t>::max();

  // Reads records [record, record + n) into the buffer.
  void load(std::uint64_t record, std::size_t n) {
    const std::size_t bytes = n * record_bytes_;
    if (record != at_) {
      in_.clear();
      in_.seekg(static_cast<std::streamoff>(detail::ctr_header_bytes + record * record_bytes_));
    }
    at_ = unknown;
    in_.read(reinterpret_cast<char*>(buffer_.data()), static_cast<std::streamsize>(bytes));
    if (const auto got = static_cast<std::size_t>(in_.gcount()); got != bytes) {
      in_.clear();
      detail::ctr_corrupt(name_, "record " + std::to_string(record + got / record_bytes_) +
                                     ": the file ends inside it (it changed after it was opened?)");
    }
    at_ = record + n;
  }

  options options_;
  std::string name_;
  std::ifstream in_;
  ctr_file_header header_;
  std::size_t record_bytes_ = 0;
  std::uint64_t begin_ = 0, examples_ = 0, position_ = 0, epoch_ = 0;
  std::uint64_t at_ = unknown;  // the record the stream is at
  std::size_t buffer_records_ = 0;
  std::vector<std::byte> buffer_;
  ctr_batch batch_;
};

}  // namespace dsgd::data
