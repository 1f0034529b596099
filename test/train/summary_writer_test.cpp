// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/train/summary_writer.hpp> and <dsgd/train/progress.hpp>: event files are
// parsed back with a small independent TFRecord and protobuf reader that checks every masked
// CRC. (tensorboard_reads_summaries.py reads them with TensorBoard itself.)
#include <dsgd/train/progress.hpp>
#include <dsgd/train/summary_writer.hpp>

#include <boost/crc.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

BOOST_AUTO_TEST_SUITE(summary_writer_test)

namespace fs = std::filesystem;
using dsgd::train::summary_writer;

namespace {

struct temp_dir {
  fs::path path;
  temp_dir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() /
           ("dsgd_summary_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// An independent CRC-32C (Boost.CRC), so the test does not check the library against itself.
std::uint32_t masked_crc(const std::string& s) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(s.data(), s.size());
  std::uint32_t c = crc.checksum();
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

template <class T>
T little(const std::string& s, std::size_t at) {
  BOOST_REQUIRE(at + sizeof(T) <= s.size());
  T v;
  std::memcpy(&v, s.data() + at, sizeof(T));
  return v;
}

// Splits a TFRecord file into its records, requiring both masked CRCs of each to match.
std::vector<std::string> read_tfrecords(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), {}};
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    auto len = little<std::uint64_t>(bytes, pos);
    BOOST_REQUIRE(little<std::uint32_t>(bytes, pos + 8) == masked_crc(bytes.substr(pos, 8)));
    BOOST_REQUIRE(pos + 12 + len + 4 <= bytes.size());
    auto data = bytes.substr(pos + 12, len);
    BOOST_REQUIRE(little<std::uint32_t>(bytes, pos + 12 + len) == masked_crc(data));
    out.push_back(data);
    pos += 12 + len + 4;
  }
  return out;
}

// The protobuf fields of Event that the writer uses.
struct scalar {
  std::string tag;
  float value = 0;
};
struct event {
  double wall_time = 0;
  std::int64_t step = 0;
  std::string file_version;
  std::vector<scalar> values;
};

struct proto_reader {
  std::string s;
  std::size_t pos = 0;
  bool done() const { return pos >= s.size(); }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      BOOST_REQUIRE(pos < s.size());
      auto b = static_cast<unsigned char>(s[pos++]);
      v |= std::uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    BOOST_FAIL("varint too long");
    return v;
  }
  std::string bytes() {
    auto n = varint();
    BOOST_REQUIRE(pos + n <= s.size());
    auto out = s.substr(pos, n);
    pos += n;
    return out;
  }
  template <class T>
  T fixed() {
    auto v = little<T>(s, pos);
    pos += sizeof(T);
    return v;
  }
};

event parse_event(const std::string& data) {
  event e;
  proto_reader r{data};
  while (!r.done()) {
    auto key = r.varint();
    switch (key) {
      case (1 << 3) | 1: e.wall_time = std::bit_cast<double>(r.fixed<std::uint64_t>()); break;
      case (2 << 3) | 0: e.step = static_cast<std::int64_t>(r.varint()); break;
      case (3 << 3) | 2: e.file_version = r.bytes(); break;
      case (5 << 3) | 2: {
        proto_reader summary{r.bytes()};
        while (!summary.done()) {
          BOOST_REQUIRE(summary.varint() == ((1 << 3) | 2));
          proto_reader value{summary.bytes()};
          scalar sc;
          while (!value.done()) {
            auto k = value.varint();
            if (k == ((1 << 3) | 2)) sc.tag = value.bytes();
            else if (k == ((2 << 3) | 5)) sc.value = std::bit_cast<float>(value.fixed<std::uint32_t>());
            else BOOST_FAIL("unexpected Value field key " << k);
          }
          e.values.push_back(sc);
        }
        break;
      }
      default: BOOST_FAIL("unexpected Event field key " << key);
    }
  }
  return e;
}

std::vector<event> read_events(const fs::path& p) {
  std::vector<event> out;
  for (const auto& r : read_tfrecords(p)) out.push_back(parse_event(r));
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(train_summary_writer)

BOOST_AUTO_TEST_CASE(masked_crc_matches_the_tfrecord_definition) {
  // crc32c("123456789") = 0xE3069283, rotated right by 15 and offset by 0xa282ead8.
  constexpr std::uint32_t crc = 0xE3069283u;
  BOOST_TEST(dsgd::train::detail::mask_crc(crc) == ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
  BOOST_TEST(dsgd::train::detail::mask_crc(0) == 0xa282ead8u);
}

BOOST_AUTO_TEST_CASE(the_file_starts_with_a_version_event_and_holds_each_scalar) {
  temp_dir dir;
  fs::path file;
  double before = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  {
    summary_writer w(dir.path / "run1");
    file = w.path();
    for (int step = 0; step < 50; ++step) w.scalar("loss", 1.0f / static_cast<float>(step + 1), step);
    w.scalar("accuracy", 0.875f, 49);
    w.scalar("big_step", -2.5f, std::int64_t{1} << 40);
    w.scalar("negative_step", 1.5f, -3);
  }  // the destructor flushes
  BOOST_TEST(file.filename().string().rfind("events.out.tfevents.", 0) == 0u);
  BOOST_TEST(file.parent_path() == dir.path / "run1");
  auto events = read_events(file);
  BOOST_REQUIRE(events.size() == 54u);
  BOOST_TEST(events[0].file_version == "brain.Event:2");
  BOOST_TEST(events[0].values.empty());
  for (int step = 0; step < 50; ++step) {
    const auto& e = events[static_cast<std::size_t>(step) + 1];
    BOOST_TEST(e.step == step);
    BOOST_REQUIRE(e.values.size() == 1u);
    BOOST_TEST(e.values[0].tag == "loss");
    BOOST_TEST(e.values[0].value == 1.0f / static_cast<float>(step + 1));
    BOOST_TEST(e.wall_time >= before - 1);
    BOOST_TEST(e.wall_time >= events[static_cast<std::size_t>(step)].wall_time);
  }
  BOOST_TEST(events[51].values[0].tag == "accuracy");
  BOOST_TEST(events[51].values[0].value == 0.875f);
  BOOST_TEST(events[52].step == std::int64_t{1} << 40);
  BOOST_TEST(events[53].step == -3);
}

BOOST_AUTO_TEST_CASE(scalars_of_one_step_share_an_event_and_flush_makes_them_visible) {
  temp_dir dir;
  summary_writer w(dir.path, ".worker0", std::chrono::hours(1));
  BOOST_TEST(w.path().filename().string().ends_with(".worker0"));
  dsgd::train::scalar_value values[] = {{"a", 1.f}, {"b", 2.f}};
  w.scalars(7, values);
  BOOST_TEST(read_events(w.path()).size() == 1u);  // buffered: only the version event so far
  w.flush();
  auto events = read_events(w.path());
  BOOST_REQUIRE(events.size() == 2u);
  BOOST_TEST(events[1].step == 7);
  BOOST_REQUIRE(events[1].values.size() == 2u);
  BOOST_TEST(events[1].values[1].tag == "b");
  BOOST_TEST(events[1].values[1].value == 2.f);
}

BOOST_AUTO_TEST_CASE(two_writers_in_one_directory_get_two_files) {
  temp_dir dir;
  summary_writer a(dir.path), b(dir.path);
  BOOST_TEST(a.path() != b.path());
}

BOOST_AUTO_TEST_CASE(progress_lines_report_mean_loss_and_rates_every_n_steps) {
  temp_dir dir;
  std::ostringstream out;
  summary_writer w(dir.path);
  dsgd::train::progress_logger log(out, /*batch_size=*/64, /*every=*/10, &w);
  auto t0 = dsgd::train::progress_logger::clock::time_point{} + std::chrono::seconds(100);
  std::vector<dsgd::train::progress_line> lines;
  for (std::uint64_t step = 0; step <= 30; ++step) {
    // 50 ms per step, loss = step
    if (auto line = log.step(step, static_cast<double>(step), t0 + std::chrono::milliseconds(50 * step)))
      lines.push_back(*line);
  }
  BOOST_REQUIRE(lines.size() == 3u);
  BOOST_TEST(lines[0].step == 10u);
  BOOST_TEST(lines[0].loss == 5.5);  // mean of steps 1..10
  BOOST_TEST(lines[0].steps_per_second == 20.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(lines[0].examples_per_second == 1280.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(lines[2].loss == 25.5);  // mean of steps 21..30
  BOOST_TEST(out.str() ==
             "step 10 loss 5.500000 steps/s 20.00 examples/s 1280.00\n"
             "step 20 loss 15.500000 steps/s 20.00 examples/s 1280.00\n"
             "step 30 loss 25.500000 steps/s 20.00 examples/s 1280.00\n");
  w.flush();
  auto events = read_events(w.path());
  BOOST_REQUIRE(events.size() == 4u);
  BOOST_TEST(events[3].step == 30);
  BOOST_REQUIRE(events[3].values.size() == 3u);
  BOOST_TEST(events[3].values[0].tag == "loss");
  BOOST_TEST(events[3].values[0].value == 25.5f);
  BOOST_TEST(events[3].values[1].tag == "global_step/sec");
}

BOOST_AUTO_TEST_CASE(an_unwritable_log_directory_is_an_error_naming_it) {
  temp_dir dir;
  fs::create_directories(dir.path);
  std::ofstream(dir.path / "file") << "x";
  BOOST_CHECK_THROW(summary_writer(dir.path / "file" / "logs"), std::exception);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
