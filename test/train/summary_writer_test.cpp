// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/train/summary_writer.hpp> and <dsgd/train/progress.hpp>: event files are
// parsed back with a small independent TFRecord and protobuf reader that checks every masked
// CRC. (tensorboard_reads_summaries.py reads them with TensorBoard itself.)
#include <dsgd/tensor/init.hpp>
#include <dsgd/train/monitored_session.hpp>
#include <dsgd/train/progress.hpp>
#include <dsgd/train/summary_writer.hpp>

#include <support/temp_dir.hpp>

#include <boost/crc.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

BOOST_AUTO_TEST_SUITE(summary_writer_test)

namespace fs = std::filesystem;
using dsgd::train::summary_writer;

namespace {

struct temp_dir : dsgd::test::temp_dir {
  temp_dir() : dsgd::test::temp_dir("dsgd_summary_test_", false) {}
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

// The protobuf fields of Event that the writer uses: a Value holds a simple_value or a histo.
struct histo {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit, bucket;
};
struct scalar {
  std::string tag;
  float value = 0;
  std::optional<histo> histogram;
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
  double float64() { return std::bit_cast<double>(fixed<std::uint64_t>()); }
  std::vector<double> packed_doubles() {
    proto_reader packed{bytes()};
    BOOST_REQUIRE(packed.s.size() % 8 == 0);
    std::vector<double> out;
    while (!packed.done()) out.push_back(packed.float64());
    return out;
  }
};

// HistogramProto: min 1, max 2, num 3, sum 4, sum_squares 5 (double), bucket_limit 6, bucket 7
// (packed repeated double).
histo parse_histo(const std::string& data) {
  histo h;
  proto_reader r{data};
  while (!r.done()) {
    auto key = r.varint();
    switch (key) {
      case (1 << 3) | 1:
        h.min = r.float64();
        break;
      case (2 << 3) | 1:
        h.max = r.float64();
        break;
      case (3 << 3) | 1:
        h.num = r.float64();
        break;
      case (4 << 3) | 1:
        h.sum = r.float64();
        break;
      case (5 << 3) | 1:
        h.sum_squares = r.float64();
        break;
      case (6 << 3) | 2:
        h.bucket_limit = r.packed_doubles();
        break;
      case (7 << 3) | 2:
        h.bucket = r.packed_doubles();
        break;
      default:
        BOOST_FAIL("unexpected HistogramProto field key " << key);
    }
  }
  return h;
}

event parse_event(const std::string& data) {
  event e;
  proto_reader r{data};
  while (!r.done()) {
    auto key = r.varint();
    switch (key) {
      case (1 << 3) | 1:
        e.wall_time = std::bit_cast<double>(r.fixed<std::uint64_t>());
        break;
      case (2 << 3) | 0:
        e.step = static_cast<std::int64_t>(r.varint());
        break;
      case (3 << 3) | 2:
        e.file_version = r.bytes();
        break;
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
            else if (k == ((5 << 3) | 2)) sc.histogram = parse_histo(value.bytes());
            else BOOST_FAIL("unexpected Value field key " << k);
          }
          e.values.push_back(sc);
        }
        break;
      }
      default:
        BOOST_FAIL("unexpected Event field key " << key);
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

BOOST_AUTO_TEST_CASE(a_histogram_holds_its_range_moments_and_equal_width_buckets) {
  temp_dir dir;
  summary_writer w(dir.path);
  // Range [-1, 3] in 4 buckets: limits 0, 1, 2, 3, each bucket (left, right] and the first
  // from the minimum, so 0 and 1 fall in the buckets they close.
  const std::vector<float> values{-1.f, 0.f, 0.5f, 1.f, 3.f};
  w.histogram("layer/w", values, 12, 4);
  const std::vector<float> same(7, 2.5f);
  w.histogram("same", same, 13);
  w.histogram("empty", std::span<const float>(), 14);
  w.flush();
  auto events = read_events(w.path());
  BOOST_REQUIRE(events.size() == 4u);
  BOOST_TEST(events[1].step == 12);
  BOOST_REQUIRE(events[1].values.size() == 1u);
  BOOST_TEST(events[1].values[0].tag == "layer/w");
  BOOST_REQUIRE(events[1].values[0].histogram.has_value());
  const auto& h = *events[1].values[0].histogram;
  BOOST_TEST(h.min == -1.0);
  BOOST_TEST(h.max == 3.0);
  BOOST_TEST(h.num == 5.0);
  BOOST_TEST(h.sum == 3.5);
  BOOST_TEST(h.sum_squares == 11.25);
  BOOST_TEST(h.bucket_limit == (std::vector<double>{0, 1, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(h.bucket == (std::vector<double>{2, 2, 0, 1}), boost::test_tools::per_element());
  // All values equal: one bucket that holds them all.
  const auto& one = events[2].values.at(0).histogram.value();
  BOOST_TEST(one.bucket_limit == (std::vector<double>{2.5}), boost::test_tools::per_element());
  BOOST_TEST(one.bucket == (std::vector<double>{7}), boost::test_tools::per_element());
  const auto& none = events[3].values.at(0).histogram.value();
  BOOST_TEST(none.num == 0.0);
  BOOST_TEST(none.bucket.empty());
}

BOOST_AUTO_TEST_CASE(a_histogram_of_a_nan_names_the_tag_and_the_element) {
  temp_dir dir;
  summary_writer w(dir.path);
  const std::vector<float> values{1.f, 2.f, std::numeric_limits<float>::quiet_NaN()};
  BOOST_CHECK_EXCEPTION(w.histogram("dense/b", values, 3), dsgd::error, [](const dsgd::error& e) {
    const std::string what = e.what();
    return e.code() == dsgd::errc::invalid_argument &&
           what.find("histogram dense/b: element 2 is nan") != std::string::npos;
  });
  BOOST_CHECK_THROW(w.histogram("dense/b", std::span<const float>(values.data(), 2), 3, 0), dsgd::error);
  w.flush();
  BOOST_TEST(read_events(w.path()).size() == 1u);  // nothing but the version event
}

// train::summary_hook (monitored_session.hpp) driven as a session drives it.
BOOST_AUTO_TEST_CASE(the_summary_hook_writes_scalars_and_a_histogram_per_variable_on_the_chief) {
  using cpu = dsgd::device::cpu;
  temp_dir dir;
  std::vector<dsgd::tensor<cpu>> vars;
  vars.emplace_back(cpu{}, dsgd::shape{2, 2}, dsgd::init::constant{0.f});
  vars.emplace_back(cpu{}, dsgd::shape{3}, dsgd::init::constant{-1.f});
  vars[0].assign(std::vector<float>{1, 2, 3, 4});
  const std::vector<std::string> names{"dense0/kernel", "dense0/bias"};
  summary_writer w(dir.path, "", std::chrono::hours(1));
  dsgd::train::summary_hook<cpu> hook(w, 10, 64, [](std::uint64_t step) {
    return std::vector<std::pair<std::string, float>>{{"learning_rate", 0.5f / static_cast<float>(1 + step)}};
  });
  hook.begin(0, true);
  dsgd::train::run_values<cpu> v{0, 0, &vars, &vars, &names};
  for (std::uint64_t step = 1; step <= 25; ++step) {
    v.step = step;
    v.loss = static_cast<float>(step);
    BOOST_TEST(!hook.after_run(v));
  }
  hook.end(v);  // the steps since the last summary, then a flush
  auto events = read_events(w.path());
  BOOST_REQUIRE(events.size() == 1u + 3 * 3);  // steps 10, 20 and 25: scalars, then two histograms
  const std::int64_t steps[] = {10, 20, 25};
  const double losses[] = {5.5, 15.5, 23};  // means of 1..10, 11..20, 21..25
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& scalars = events[1 + 3 * i];
    BOOST_TEST(scalars.step == steps[i]);
    BOOST_REQUIRE(scalars.values.size() == 4u);
    BOOST_TEST(scalars.values[0].tag == "loss");
    BOOST_TEST(scalars.values[0].value == static_cast<float>(losses[i]));
    BOOST_TEST(scalars.values[1].tag == "global_step/sec");
    BOOST_TEST(scalars.values[2].tag == "examples/sec");
    BOOST_TEST(scalars.values[2].value == scalars.values[1].value * 64, boost::test_tools::tolerance(1e-5f));
    BOOST_TEST(scalars.values[3].tag == "learning_rate");
    BOOST_TEST(scalars.values[3].value == 0.5f / static_cast<float>(1 + steps[i]));
    const auto& kernel = events[2 + 3 * i].values.at(0);
    BOOST_TEST(kernel.tag == "dense0/kernel");
    BOOST_TEST(kernel.histogram.value().num == 4.0);
    BOOST_TEST(kernel.histogram.value().min == 1.0);
    BOOST_TEST(kernel.histogram.value().sum == 10.0);
    const auto& bias = events[3 + 3 * i].values.at(0);
    BOOST_TEST(bias.tag == "dense0/bias");
    BOOST_TEST(bias.histogram.value().bucket == (std::vector<double>{3}), boost::test_tools::per_element());
  }

  // Any other task writes nothing.
  summary_writer other(dir.path / "other", "", std::chrono::hours(1));
  dsgd::train::summary_hook<cpu> not_chief(other, 1, 64);
  not_chief.begin(0, false);
  for (std::uint64_t step = 1; step <= 5; ++step) {
    v.step = step;
    not_chief.after_run(v);
  }
  not_chief.end(v);
  BOOST_TEST(read_events(other.path()).size() == 1u);
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
