// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// dsgd-ctr-data: writes examples of the synthetic click stream (data::click_stream) to a CTR
// example file (data/ctr_file.hpp), the file every system of the CTR benchmark reads, with the
// teacher's click probabilities (flags bit 0); or checks such a file and says what it holds.
//
//   dsgd-ctr-data --out train.ctr --examples 10000000 [--seed 7] [--part train|test] [--start S]
//                 [--scale X] [--batch B]
//   dsgd-ctr-data --info train.ctr
//
// It streams: B examples in memory at a time, whatever N. --info reads every record (each is
// checked) and prints the header, the click rate and the teacher's AUC (which holds the
// labels and probabilities in memory: 8 bytes an example).
// Exit status: 0 done, 1 a bad file or an I/O error (the message names the file), 2 usage.

#include <dsgd/data/auc.hpp>
#include <dsgd/data/click_stream.hpp>
#include <dsgd/data/ctr_batch.hpp>
#include <dsgd/data/ctr_file.hpp>
#include <dsgd/error.hpp>

#include <boost/program_options.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace po = boost::program_options;
namespace data = dsgd::data;

namespace {

constexpr const char* usage =
    "usage: dsgd-ctr-data --out PATH --examples N [--seed S] [--part train|test] [--start S] [--scale X]\n"
    "                     [--batch B]\n"
    "       dsgd-ctr-data --info PATH\n"
    "\n"
    "Writes examples start .. start + N - 1 of the synthetic click stream (13 dense features, 26\n"
    "hashed categorical ids, a 0/1 click and the teacher's click probability) to the CTR example\n"
    "file PATH (\"DSGDCTR1\", version 1; include/dsgd/data/ctr_file.hpp has the layout), B at a\n"
    "time; or, with --info, checks every record of PATH and prints its header, click rate and\n"
    "teacher AUC.\n"
    "\n";

constexpr const char* exit_status = "\nExit status: 0 done, 1 a bad file or an I/O error, 2 usage.\n";

/// A bad command line: the message, exit status 2.
struct usage_error {
  std::string what;
};

/// @returns @p text as a whole number in [@p low, @p high], or throws usage_error naming @p option.
std::uint64_t whole(const std::string& option, const std::string& text, std::uint64_t low,
                    std::uint64_t high = UINT64_MAX) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  const std::string range = "from " + std::to_string(low) + (high == UINT64_MAX ? "" : " to " + std::to_string(high));
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || v < low || v > high)
    throw usage_error{"--" + option + " " + text + ": expected a whole number " + range};
  return v;
}

/// @returns @p text as a finite number > 0, or throws usage_error naming @p option.
double positive(const std::string& option, const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || !(v > 0) || !std::isfinite(v))
    throw usage_error{"--" + option + " " + text + ": expected a finite number above 0"};
  return v;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int write_stream(const po::variables_map& vm) {
  auto text = [&](const char* name) { return vm[name].as<std::string>(); };
  if (!vm.count("examples")) throw usage_error{"--out needs --examples N"};
  const std::filesystem::path out = text("out");
  const std::uint64_t n = whole("examples", text("examples"), 1);
  data::click_stream::options o;
  o.seed = whole("seed", text("seed"), 0);
  const auto part = text("part");
  if (part != "train" && part != "test") throw usage_error{"--part " + part + ": expected train or test"};
  o.part = part == "train" ? data::click_stream::split::train : data::click_stream::split::test;
  o.start = vm.count("start") ? whole("start", text("start"), 0) : 0;
  o.cardinality_scale = vm.count("scale") ? positive("scale", text("scale")) : 1.0;
  o.batch = static_cast<std::size_t>(whole("batch", text("batch"), 1, std::uint64_t{1} << 24));
  if (o.start > UINT64_MAX - n)
    throw usage_error{"--start " + std::to_string(o.start) + " --examples " + std::to_string(n) +
                      ": the last example's index does not fit in 64 bits"};
  std::optional<data::click_stream> stream;
  try {
    stream.emplace(o);
  } catch (const dsgd::error& e) {
    throw usage_error{e.what()};  // the options the command line gave
  }

  const auto start = std::chrono::steady_clock::now();
  try {
    data::ctr_file_writer writer(out, data::click_stream::dense_features, data::click_stream::categorical_features,
                                 data::ctr_file_probabilities);
    data::ctr_batch b;
    for (std::uint64_t done = 0; done < n;) {
      const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(o.batch, n - done));
      stream->fill(done, count, b);
      writer.write(b);
      done += count;
    }
    writer.close();
  } catch (...) {
    // The writer left it unfinished (no reader accepts it): take it away, if it is a file we
    // made (never a device such as /dev/full).
    std::error_code ignored;
    if (std::filesystem::is_regular_file(std::filesystem::symlink_status(out, ignored)))
      std::filesystem::remove(out, ignored);
    throw;
  }
  const auto h = data::read_ctr_file_header(out);
  std::printf(
      "dsgd-ctr-data: wrote examples %llu .. %llu of the %s stream of seed %llu (scale %g) to %s: %llu bytes "
      "(%u dense features, %u fields, %zu-byte records, teacher probabilities) in %.1f s\n",
      static_cast<unsigned long long>(o.start), static_cast<unsigned long long>(o.start + n - 1), part.c_str(),
      static_cast<unsigned long long>(o.seed), o.cardinality_scale, out.string().c_str(),
      static_cast<unsigned long long>(h.file_bytes()), h.dense_features, h.fields, h.record_bytes(),
      seconds_since(start));
  return 0;
}

int info(const std::filesystem::path& path) {
  const auto start = std::chrono::steady_clock::now();
  data::ctr_file_reader reader({.path = path, .batch = 65536});
  const auto& h = reader.header();
  std::printf(
      "file: %s\nversion: 1\ndense_features: %u\nfields: %u\nflags: 0x%08x%s\nexamples: %llu\n"
      "record_bytes: %zu\nbytes: %llu\n",
      path.string().c_str(), h.dense_features, h.fields, h.flags,
      h.has_probabilities() ? " (teacher probabilities)" : "", static_cast<unsigned long long>(h.examples),
      h.record_bytes(), static_cast<unsigned long long>(h.file_bytes()));
  std::vector<float> labels, probabilities;
  if (h.has_probabilities()) {
    labels.reserve(h.examples);
    probabilities.reserve(h.examples);
  }
  std::uint64_t clicks = 0;
  for (const data::ctr_batch* b = &reader.next(); b->size > 0; b = &reader.next()) {
    for (std::size_t r = 0; r < b->size; ++r) clicks += b->labels[r] == 1.0f;
    if (h.has_probabilities()) {
      labels.insert(labels.end(), b->labels.begin(), b->labels.begin() + static_cast<std::ptrdiff_t>(b->size));
      probabilities.insert(probabilities.end(), b->probabilities.begin(),
                           b->probabilities.begin() + static_cast<std::ptrdiff_t>(b->size));
    }
  }
  std::printf("clicks: %llu (rate %.4f)\n", static_cast<unsigned long long>(clicks),
              h.examples ? static_cast<double>(clicks) / static_cast<double>(h.examples) : 0.0);
  if (h.has_probabilities() && clicks > 0 && clicks < h.examples)
    std::printf("teacher_auc: %.4f\n", data::auc(probabilities, labels));
  std::printf("records: all %llu checked in %.1f s\n", static_cast<unsigned long long>(h.examples),
              seconds_since(start));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description desc("options");
  desc.add_options()("help,h", "this text")("out", po::value<std::string>()->value_name("PATH"),
                                            "the CTR example file to write (replaced if it exists)")(
      "examples", po::value<std::string>()->value_name("N"), "how many examples to write (from 1)")(
      "seed", po::value<std::string>()->value_name("S")->default_value("7"), "the click stream's seed: its world")(
      "part", po::value<std::string>()->value_name("train|test")->default_value("train"),
      "the stream's train or test draws")("start", po::value<std::string>()->value_name("S"),
                                          "index (time) of the first example [0]")(
      "scale", po::value<std::string>()->value_name("X"), "cardinality scale: multiplies every vocabulary [1]")(
      "batch", po::value<std::string>()->value_name("B")->default_value("65536"),
      "examples generated and written at a time")("info", po::value<std::string>()->value_name("PATH"),
                                                  "check the file PATH and print what it holds");
  try {
    po::variables_map vm;
    try {
      // No positional arguments: a stray word is an error, not ignored.
      const po::positional_options_description none;
      po::store(po::command_line_parser(argc, argv).options(desc).positional(none).run(), vm);
      po::notify(vm);
    } catch (const po::error& e) {
      throw usage_error{e.what()};
    }
    if (vm.count("help")) {
      std::cout << usage << desc << exit_status;
      return 0;
    }
    if (vm.count("info")) {
      if (vm.count("out") || vm.count("examples")) throw usage_error{"--info reads a file: no --out or --examples"};
      return info(vm["info"].as<std::string>());
    }
    if (!vm.count("out")) throw usage_error{"--out PATH or --info PATH is required"};
    return write_stream(vm);
  } catch (const usage_error& e) {
    std::cerr << "dsgd-ctr-data: " << e.what << "\n\n" << usage << desc << exit_status;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "dsgd-ctr-data: " << e.what() << "\n";
    return 1;
  }
}
