// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Fashion-MNIST from the IDX files of Debian's `dataset-fashion-mnist` package, checked byte
/// for byte: magic numbers, dimensions, counts, label range, size and SHA-256 of the
/// decompressed content.
///
/// @code
/// auto train = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::train);
/// // train.images: 60000 x 784 floats in [0, 1]; train.labels: 60000 values in 0..9
/// @endcode
#pragma once

#include <dsgd/error.hpp>

#include <openssl/evp.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::data::fashion_mnist {

/// Image height and width in pixels.
inline constexpr std::size_t image_rows = 28, image_cols = 28;
/// Number of classes; labels are 0..classes-1.
inline constexpr std::size_t classes = 10;
/// IDX magic numbers (big-endian in the files).
inline constexpr std::uint32_t images_magic = 2051, labels_magic = 2049;

/// Which half of the dataset to load.
enum class split { train, test };

/// One IDX file of the published dataset: its name without ".gz", example count, decompressed
/// size and the SHA-256 of the decompressed bytes.
struct file_info {
  std::string_view name;
  std::size_t count;
  std::size_t bytes;
  std::string_view sha256;
};

/// The four files of the dataset (digests of the decompressed content, which do not depend on
/// how a distribution recompressed them).
inline constexpr file_info train_images{"train-images-idx3-ubyte", 60000, 47040016,
                                        "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888"};
inline constexpr file_info train_labels{"train-labels-idx1-ubyte", 60000, 60008,
                                        "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9"};
inline constexpr file_info test_images{"t10k-images-idx3-ubyte", 10000, 7840016,
                                       "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b"};
inline constexpr file_info test_labels{"t10k-labels-idx1-ubyte", 10000, 10008,
                                       "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34"};

/// Images and labels of one split, in memory on the host.
struct dataset {
  /// size() x features() pixels, row-major, scaled to [0, 1].
  std::vector<float> images;
  /// size() labels in 0..classes-1.
  std::vector<std::int32_t> labels;
  std::size_t rows = image_rows, cols = image_cols;

  /// @returns the number of examples.
  std::size_t size() const noexcept { return labels.size(); }
  /// @returns the number of pixels per image (rows * cols).
  std::size_t features() const noexcept { return rows * cols; }
};

/// What to check about one file given to load_files().
struct file_spec {
  std::filesystem::path path;  ///< gzip'd or plain IDX file (both are read)
  std::size_t count = 0;       ///< expected number of examples; 0 accepts any
  std::string sha256;          ///< expected digest of the decompressed bytes; empty skips it
};

/// @returns the directory to read from: `DSGD_FASHION_MNIST_DIR` when set and not empty, else
/// Debian's `/usr/share/datasets/fashion-mnist`.
inline std::filesystem::path default_dir() {
  if (const char* env = std::getenv("DSGD_FASHION_MNIST_DIR"); env && *env) return env;
  return "/usr/share/datasets/fashion-mnist";
}

namespace detail {

inline const char* install_hint() noexcept {
  return "install Debian's dataset-fashion-mnist or set DSGD_FASHION_MNIST_DIR";
}

inline std::string to_hex(const unsigned char* p, std::size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    s[2 * i] = digits[p[i] >> 4];
    s[2 * i + 1] = digits[p[i] & 15];
  }
  return s;
}

/// A gzip (or plain) file read in order while its bytes are hashed with SHA-256.
class hashed_reader {
 public:
  explicit hashed_reader(const std::filesystem::path& path) : path_(path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      throw error(errc::dataset_missing, path.string() + ": no such file (" + install_hint() + ")");
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) throw error(errc::dataset_missing, path.string() + ": cannot be opened");
    gzbuffer(file_, 1 << 18);
    md_.reset(EVP_MD_CTX_new());
    if (!md_ || EVP_DigestInit_ex(md_.get(), EVP_sha256(), nullptr) != 1)
      throw error(errc::invalid_argument, path.string() + ": cannot initialise SHA-256");
  }
  hashed_reader(const hashed_reader&) = delete;
  hashed_reader& operator=(const hashed_reader&) = delete;
  ~hashed_reader() { gzclose(file_); }

  /// Reads up to @p n bytes into @p out; @returns how many were read (fewer only at the end).
  std::size_t read(unsigned char* out, std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
      unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, 1u << 30));
      int got = gzread(file_, out + done, chunk);
      if (got < 0) {
        int code = 0;
        const char* msg = gzerror(file_, &code);
        throw error(errc::dataset_corrupt, path_.string() + ": decompression failed after " +
                                               std::to_string(offset_ + done) + " bytes (" +
                                               (msg ? msg : "zlib error") + ")");
      }
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    if (done > 0 && EVP_DigestUpdate(md_.get(), out, done) != 1)
      throw error(errc::invalid_argument, path_.string() + ": SHA-256 update failed");
    offset_ += done;
    return done;
  }

  /// Reads exactly @p n bytes or throws naming the expected and actual sizes.
  void read_exact(unsigned char* out, std::size_t n, std::size_t expected_total) {
    std::size_t got = read(out, n);
    if (got != n)
      throw error(errc::dataset_corrupt, path_.string() + ": truncated: expected " + std::to_string(expected_total) +
                                             " bytes, got " + std::to_string(offset_));
  }

  /// Checks that nothing follows the expected end of the content.
  void expect_end(std::size_t expected_total) {
    unsigned char extra[4096];
    std::size_t total = offset_;
    for (std::size_t got; (got = read(extra, sizeof extra)) > 0;) total += got;
    if (total != expected_total)
      throw error(errc::dataset_corrupt, path_.string() + ": expected " + std::to_string(expected_total) +
                                             " bytes, got " + std::to_string(total) + " (trailing data)");
  }

  /// @returns the hex SHA-256 of everything read so far (call once, at the end).
  std::string digest() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (EVP_DigestFinal_ex(md_.get(), md, &len) != 1)
      throw error(errc::invalid_argument, path_.string() + ": SHA-256 final failed");
    return to_hex(md, len);
  }

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  struct md_deleter {
    void operator()(EVP_MD_CTX* p) const noexcept { EVP_MD_CTX_free(p); }
  };
  std::filesystem::path path_;
  gzFile file_ = nullptr;
  std::unique_ptr<EVP_MD_CTX, md_deleter> md_;
  std::size_t offset_ = 0;
};

/// More examples than any IDX file of this dataset could sensibly hold.
inline constexpr std::size_t max_examples = std::size_t{1} << 24;

inline std::uint32_t big_endian(const unsigned char* p) noexcept {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

inline void check_header_field(const std::filesystem::path& path, std::string_view field, std::size_t expected,
                               std::size_t actual) {
  if (expected != actual)
    throw error(errc::dataset_corrupt, path.string() + ": wrong " + std::string(field) + ": expected " +
                                           std::to_string(expected) + ", got " + std::to_string(actual));
}

inline void check_digest(hashed_reader& in, const std::string& expected) {
  std::string actual = in.digest();
  if (!expected.empty() && actual != expected)
    throw error(errc::dataset_corrupt, in.path().string() +
                                           ": wrong SHA-256 of the decompressed "
                                           "content: expected " +
                                           expected + ", actual " + actual);
}

/// Reads the header of an IDX file with @p dims dimensions; @returns the extents.
inline std::array<std::size_t, 3> read_header(hashed_reader& in, std::uint32_t magic, std::size_t dims,
                                              const file_spec& spec) {
  unsigned char header[16];
  const std::size_t header_bytes = 4 + 4 * dims;
  std::size_t got = in.read(header, header_bytes);
  if (got != header_bytes)
    throw error(errc::dataset_corrupt, in.path().string() + ": truncated: expected at least " +
                                           std::to_string(header_bytes) + " bytes, got " + std::to_string(got));
  check_header_field(in.path(), "magic number", magic, big_endian(header));
  std::array<std::size_t, 3> extents{1, 1, 1};
  for (std::size_t d = 0; d < dims; ++d) extents[d] = big_endian(header + 4 + 4 * d);
  if (spec.count != 0) check_header_field(in.path(), "example count", spec.count, extents[0]);
  // A corrupt count must not turn into a huge allocation.
  if (extents[0] > max_examples)
    throw error(errc::dataset_corrupt, in.path().string() + ": example count " + std::to_string(extents[0]) +
                                           " exceeds the limit of " + std::to_string(max_examples));
  return extents;
}

inline std::vector<float> read_images(const file_spec& spec) {
  hashed_reader in(spec.path);
  auto [count, rows, cols] = read_header(in, images_magic, 3, spec);
  check_header_field(spec.path, "number of rows", image_rows, rows);
  check_header_field(spec.path, "number of columns", image_cols, cols);
  const std::size_t pixels = count * rows * cols, total = 16 + pixels;
  std::vector<float> images(pixels);
  std::vector<unsigned char> chunk(std::size_t{1} << 16);
  for (std::size_t at = 0; at < pixels; at += chunk.size()) {
    const std::size_t n = std::min(chunk.size(), pixels - at);
    in.read_exact(chunk.data(), n, total);
    for (std::size_t i = 0; i < n; ++i) images[at + i] = static_cast<float>(chunk[i]) / 255.f;
  }
  in.expect_end(total);
  check_digest(in, spec.sha256);
  return images;
}

inline std::vector<std::int32_t> read_labels(const file_spec& spec) {
  hashed_reader in(spec.path);
  const std::size_t count = read_header(in, labels_magic, 1, spec)[0], total = 8 + count;
  std::vector<unsigned char> raw(count);
  in.read_exact(raw.data(), count, total);
  in.expect_end(total);
  check_digest(in, spec.sha256);
  std::vector<std::int32_t> labels(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (raw[i] >= classes)
      throw error(errc::dataset_corrupt, spec.path.string() + ": label out of range at index " + std::to_string(i) +
                                             ": " + std::to_string(raw[i]) + " is not in 0.." +
                                             std::to_string(classes - 1));
    labels[i] = raw[i];
  }
  return labels;
}

/// @returns dir/name.gz when it exists, else dir/name (an uncompressed copy), else dir/name.gz
/// so that the error names the file the package installs.
inline std::filesystem::path locate(const std::filesystem::path& dir, std::string_view name) {
  std::error_code ec;
  auto gz = dir / (std::string(name) + ".gz");
  if (std::filesystem::exists(gz, ec)) return gz;
  auto plain = dir / std::string(name);
  if (std::filesystem::exists(plain, ec)) return plain;
  return gz;
}

}  // namespace detail

/// Loads an images file and a labels file given by path, checking what @p images and @p labels
/// ask for (counts and digests may be left unchecked) plus everything the format fixes: magic
/// numbers, 28 x 28 images, exact sizes, labels in 0..9 and equal counts.
///
/// @throws dsgd::error errc::dataset_missing if a file is not there, errc::dataset_corrupt with
///         the file name and the problem otherwise.
inline dataset load_files(const file_spec& images, const file_spec& labels) {
  dataset d;
  d.images = detail::read_images(images);
  d.labels = detail::read_labels(labels);
  if (d.images.size() != d.labels.size() * d.features())
    throw error(errc::dataset_corrupt,
                images.path.string() + " holds " + std::to_string(d.images.size() / d.features()) + " images but " +
                    labels.path.string() + " holds " + std::to_string(d.labels.size()) + " labels");
  return d;
}

/// Loads one split of Fashion-MNIST from @p dir (gzip'd files as Debian installs them, or
/// uncompressed copies), verifying sizes, counts and, unless @p verify_digest is false, the
/// SHA-256 of every file.
///
/// @throws dsgd::error errc::dataset_missing if @p dir or a file is missing (the message says
///         which package to install), errc::dataset_corrupt if a file fails a check.
inline dataset load(split s, const std::filesystem::path& dir = default_dir(), bool verify_digest = true) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw error(errc::dataset_missing,
                "Fashion-MNIST directory " + dir.string() + " does not exist (" + detail::install_hint() + ")");
  const file_info& img = s == split::train ? train_images : test_images;
  const file_info& lab = s == split::train ? train_labels : test_labels;
  auto spec = [&](const file_info& f) {
    return file_spec{detail::locate(dir, f.name), f.count, verify_digest ? std::string(f.sha256) : std::string()};
  };
  return load_files(spec(img), spec(lab));
}

}  // namespace dsgd::data::fashion_mnist
