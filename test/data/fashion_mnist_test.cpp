// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/data/fashion_mnist.hpp>: the real dataset from Debian's dataset-fashion-mnist,
// and crafted IDX files for every way a file can be wrong.
#include <dsgd/data/fashion_mnist.hpp>

#include <boost/test/unit_test.hpp>

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(fashion_mnist_test)

namespace fm = dsgd::data::fashion_mnist;
namespace fs = std::filesystem;

namespace {

using bytes = std::vector<unsigned char>;

void put_u32(bytes& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<unsigned char>(v >> shift));
}

/// An IDX3 images file: @p count images of rows x cols, pixel i of the file = (i * 7) % 256.
bytes images_file(std::uint32_t count, std::uint32_t rows = 28, std::uint32_t cols = 28, std::uint32_t magic = 2051) {
  bytes out;
  put_u32(out, magic);
  put_u32(out, count);
  put_u32(out, rows);
  put_u32(out, cols);
  for (std::size_t i = 0; i < std::size_t{count} * rows * cols; ++i)
    out.push_back(static_cast<unsigned char>((i * 7) % 256));
  return out;
}

/// An IDX1 labels file holding @p labels.
bytes labels_file(const std::vector<unsigned char>& labels, std::uint32_t magic = 2049) {
  bytes out;
  put_u32(out, magic);
  put_u32(out, static_cast<std::uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

/// A fresh directory under the system temp directory, removed with everything in it.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("dsgd_fashion_mnist_test_" + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }

  fs::path write_plain(const std::string& name, const bytes& content) const {
    std::ofstream(path / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(content.data()), static_cast<std::streamsize>(content.size()));
    return path / name;
  }

  fs::path write_gzip(const std::string& name, const bytes& content) const {
    gzFile f = gzopen((path / name).c_str(), "wb");
    BOOST_REQUIRE(f != nullptr);
    BOOST_REQUIRE(gzwrite(f, content.data(), static_cast<unsigned>(content.size())) ==
                  static_cast<int>(content.size()));
    gzclose(f);
    return path / name;
  }
};

/// Runs @p f, which must throw dsgd::error with @p code and a message holding every @p part.
template <class F>
void expect_error(F&& f, dsgd::errc code, std::initializer_list<std::string> parts) {
  try {
    f();
    BOOST_ERROR("no dsgd::error was thrown");
  } catch (const dsgd::error& e) {
    BOOST_TEST(e.code() == dsgd::make_error_code(code));
    const std::string what = e.what();
    for (const auto& p : parts) BOOST_TEST(what.find(p) != std::string::npos, "looking for '" << p << "' in: " << what);
  }
}

const std::vector<unsigned char> three_labels{3, 0, 9};

fm::file_spec spec(fs::path path, std::size_t count = 0, std::string sha256 = {}) {
  return {.path = std::move(path), .count = count, .sha256 = std::move(sha256)};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fashion_mnist)

BOOST_AUTO_TEST_CASE(the_published_sizes_are_header_plus_payload) {
  for (const auto& f : {fm::train_images, fm::test_images})
    BOOST_TEST(f.bytes == 16 + f.count * fm::image_rows * fm::image_cols);
  for (const auto& f : {fm::train_labels, fm::test_labels}) BOOST_TEST(f.bytes == 8 + f.count);
}

BOOST_AUTO_TEST_CASE(the_real_training_split_has_60000_balanced_examples_in_unit_range) {
  auto d = fm::load(fm::split::train);
  BOOST_TEST(d.size() == 60000u);
  BOOST_TEST(d.features() == 784u);
  BOOST_TEST(d.images.size() == 60000u * 784u);
  auto [lo, hi] = std::minmax_element(d.images.begin(), d.images.end());
  BOOST_TEST(*lo == 0.f);
  BOOST_TEST(*hi == 1.f);
  std::array<int, 10> histogram{};
  for (auto l : d.labels) ++histogram.at(static_cast<std::size_t>(l));
  for (int h : histogram) BOOST_TEST(h == 6000);
}

BOOST_AUTO_TEST_CASE(the_real_test_split_has_10000_balanced_examples) {
  auto d = fm::load(fm::split::test);
  BOOST_TEST(d.size() == 10000u);
  BOOST_TEST(d.images.size() == 10000u * 784u);
  std::array<int, 10> histogram{};
  for (auto l : d.labels) ++histogram.at(static_cast<std::size_t>(l));
  for (int h : histogram) BOOST_TEST(h == 1000);
}

BOOST_AUTO_TEST_CASE(gzip_and_plain_files_both_load_with_pixels_scaled_to_unit_range) {
  temp_dir dir;
  const auto img = images_file(3);
  for (bool gzip : {true, false}) {
    auto images = gzip ? dir.write_gzip("i.gz", img) : dir.write_plain("i", img);
    auto labels =
        gzip ? dir.write_gzip("l.gz", labels_file(three_labels)) : dir.write_plain("l", labels_file(three_labels));
    auto d = fm::load_files(spec(images, 3, ""), spec(labels, 3, ""));
    BOOST_TEST(d.size() == 3u);
    BOOST_TEST(d.labels == (std::vector<std::int32_t>{3, 0, 9}), boost::test_tools::per_element());
    BOOST_REQUIRE(d.images.size() == 3u * 784u);
    for (std::size_t i : {0u, 1u, 100u, 2351u}) BOOST_TEST(d.images[i] == img[16 + i] / 255.f);
  }
}

BOOST_AUTO_TEST_CASE(the_directory_comes_from_the_environment_variable) {
  temp_dir dir;
  ::setenv("DSGD_FASHION_MNIST_DIR", dir.path.c_str(), 1);
  BOOST_TEST(fm::default_dir() == dir.path);
  ::unsetenv("DSGD_FASHION_MNIST_DIR");
  BOOST_TEST(fm::default_dir() == fs::path("/usr/share/datasets/fashion-mnist"));
}

BOOST_AUTO_TEST_CASE(a_missing_directory_says_which_package_to_install) {
  temp_dir dir;
  expect_error([&] { fm::load(fm::split::test, dir.path / "absent"); }, dsgd::errc::dataset_missing,
               {"absent", "dataset-fashion-mnist"});
}

BOOST_AUTO_TEST_CASE(a_missing_file_is_named) {
  temp_dir dir;
  expect_error([&] { fm::load(fm::split::test, dir.path); }, dsgd::errc::dataset_missing,
               {"t10k-images-idx3-ubyte.gz", "dataset-fashion-mnist"});
  auto labels = dir.write_plain("l", labels_file(three_labels));
  expect_error([&] { fm::load_files(spec(dir.path / "nothing-here"), spec(labels)); }, dsgd::errc::dataset_missing,
               {"nothing-here"});
}

BOOST_AUTO_TEST_CASE(a_truncated_file_reports_expected_and_actual_sizes) {
  temp_dir dir;
  auto img = images_file(2);
  img.resize(img.size() - 10);
  auto images = dir.write_gzip("short-images.gz", img);
  auto labels = dir.write_gzip("l.gz", labels_file({1, 2}));
  expect_error([&] { fm::load_files(spec(images), spec(labels)); }, dsgd::errc::dataset_corrupt,
               {"short-images.gz", "truncated", "expected 1584 bytes, got 1574"});
  auto header_only = dir.write_plain("tiny-labels", bytes{0, 0, 8});
  expect_error([&] { fm::load_files(spec(dir.write_plain("i", images_file(2))), spec(header_only)); },
               dsgd::errc::dataset_corrupt, {"tiny-labels", "truncated", "got 3"});
}

BOOST_AUTO_TEST_CASE(a_cut_gzip_stream_is_reported) {
  temp_dir dir;
  auto whole = dir.write_gzip("whole.gz", images_file(3));
  std::ifstream in(whole, std::ios::binary);
  bytes gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  gz.resize(gz.size() / 2);
  auto cut = dir.write_plain("cut.gz", gz);
  auto labels = dir.write_plain("l", labels_file(three_labels));
  expect_error([&] { fm::load_files(spec(cut), spec(labels)); }, dsgd::errc::dataset_corrupt, {"cut.gz"});
}

BOOST_AUTO_TEST_CASE(trailing_bytes_are_reported) {
  temp_dir dir;
  auto lab = labels_file(three_labels);
  lab.push_back(1);
  auto labels = dir.write_plain("long-labels", lab);
  expect_error([&] { fm::load_files(spec(dir.write_plain("i", images_file(3))), spec(labels)); },
               dsgd::errc::dataset_corrupt, {"long-labels", "expected 11 bytes, got 12"});
}

BOOST_AUTO_TEST_CASE(a_wrong_magic_number_is_reported) {
  temp_dir dir;
  auto labels = dir.write_gzip("l.gz", labels_file(three_labels));
  auto swapped = dir.write_gzip("swapped.gz", images_file(3, 28, 28, 2049));
  expect_error([&] { fm::load_files(spec(swapped), spec(labels)); }, dsgd::errc::dataset_corrupt,
               {"swapped.gz", "magic", "expected 2051, got 2049"});
  auto images = dir.write_gzip("i.gz", images_file(3));
  auto bad_labels = dir.write_gzip("bad-labels.gz", labels_file(three_labels, 7));
  expect_error([&] { fm::load_files(spec(images), spec(bad_labels)); }, dsgd::errc::dataset_corrupt,
               {"bad-labels.gz", "expected 2049, got 7"});
}

BOOST_AUTO_TEST_CASE(wrong_dimensions_and_counts_are_reported) {
  temp_dir dir;
  auto labels = dir.write_gzip("l.gz", labels_file(three_labels));
  auto narrow = dir.write_gzip("narrow.gz", images_file(3, 28, 27));
  expect_error([&] { fm::load_files(spec(narrow), spec(labels)); }, dsgd::errc::dataset_corrupt,
               {"narrow.gz", "number of columns", "expected 28, got 27"});
  auto images = dir.write_gzip("i.gz", images_file(3));
  expect_error([&] { fm::load_files(spec(images, 60000), spec(labels)); }, dsgd::errc::dataset_corrupt,
               {"i.gz", "example count", "expected 60000, got 3"});
  auto four = dir.write_gzip("four.gz", images_file(4));
  expect_error([&] { fm::load_files(spec(four), spec(labels)); }, dsgd::errc::dataset_corrupt,
               {"four.gz", "4 images", "3 labels"});
  // The published names with the wrong counts: load() checks the split's count.
  dir.write_gzip("t10k-images-idx3-ubyte.gz", images_file(3));
  dir.write_gzip("t10k-labels-idx1-ubyte.gz", labels_file(three_labels));
  expect_error([&] { fm::load(fm::split::test, dir.path, false); }, dsgd::errc::dataset_corrupt,
               {"t10k-images-idx3-ubyte.gz", "expected 10000, got 3"});
}

BOOST_AUTO_TEST_CASE(a_label_out_of_range_is_reported_with_its_index) {
  temp_dir dir;
  auto images = dir.write_gzip("i.gz", images_file(3));
  auto labels = dir.write_gzip("ten.gz", labels_file({1, 2, 10}));
  expect_error([&] { fm::load_files(spec(images), spec(labels)); }, dsgd::errc::dataset_corrupt,
               {"ten.gz", "label out of range at index 2"});
}

BOOST_AUTO_TEST_CASE(a_wrong_digest_reports_expected_and_actual) {
  temp_dir dir;
  auto images = dir.write_gzip("i.gz", images_file(3));
  auto labels = dir.write_gzip("l.gz", labels_file(three_labels));
  const std::string wrong(fm::test_images.sha256);
  expect_error([&] { fm::load_files(spec(images, 3, wrong), spec(labels)); }, dsgd::errc::dataset_corrupt,
               {"i.gz", "SHA-256", "expected " + wrong, "actual "});
  // The same content hashes the same whether it is compressed or not.
  auto plain = dir.write_plain("i", images_file(3));
  std::string gz_what, plain_what;
  try {
    fm::load_files(spec(images, 3, wrong), spec(labels));
  } catch (const dsgd::error& e) {
    gz_what = e.what();
  }
  try {
    fm::load_files(spec(plain, 3, wrong), spec(labels));
  } catch (const dsgd::error& e) {
    plain_what = e.what();
  }
  auto actual = [](const std::string& s) { return s.substr(s.find("actual ")); };
  BOOST_TEST(actual(gz_what) == actual(plain_what));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
