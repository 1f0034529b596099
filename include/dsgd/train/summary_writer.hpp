// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// summary_writer: scalar and histogram summaries in TensorBoard's event file format, with no
/// protobuf or TensorFlow dependency. `tensorboard --logdir <dir>` plots what it writes.
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/train/detail/event_encoding.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace dsgd::train {

/// One named scalar of a summary_writer::scalars() call.
struct scalar_value {
  std::string_view tag;
  float value;
};

/// Appends scalar and histogram summaries to "events.out.tfevents.<unix time>.<hostname><suffix>" in a log
/// directory. Records are buffered and written on flush(), when flush_interval has passed since
/// the last write, and on destruction. Thread-safe.
///
/// @code
///   dsgd::train::summary_writer summaries{"logs/run1"};
///   summaries.scalar("loss", 0.42f, step);
///   summaries.histogram("dense1/w", weights, step);  // any contiguous floats
/// @endcode
class summary_writer {
 public:
  using clock = std::chrono::steady_clock;

  /// Creates @p logdir if needed and a new event file in it.
  /// @param filename_suffix appended to the file name (e.g. ".worker0")
  /// @param flush_interval how long records may wait in memory
  /// @throws dsgd::error with the system error if the file cannot be created.
  explicit summary_writer(const std::filesystem::path& logdir, std::string filename_suffix = "",
                          clock::duration flush_interval = std::chrono::seconds(10))
      : flush_interval_(flush_interval), last_flush_(clock::now()) {
    std::filesystem::create_directories(logdir);
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') std::strcpy(host, "localhost");
    auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    auto base = "events.out.tfevents." + std::to_string(seconds) + "." + host + filename_suffix;
    // Two writers started in the same second in one directory must not share a file.
    for (int attempt = 0; fd_ < 0; ++attempt) {
      path_ = logdir / (attempt == 0 ? base : base + "." + std::to_string(attempt));
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      int err = errno;
      if (fd_ < 0 && (err != EEXIST || attempt > 1000))
        throw error(error_code(err, boost::system::system_category()),
                    "summary_writer: cannot create " + path_.string() + ": " + std::strerror(err));
    }
    detail::append_tfrecord(buffer_, detail::encode_file_version_event(wall_time()));
    flush();
  }
  summary_writer(const summary_writer&) = delete;
  summary_writer& operator=(const summary_writer&) = delete;
  /// Flushes what is buffered; a failure here is dropped (a destructor must not throw).
  ~summary_writer() {
    try {
      flush();
    } catch (...) {
    }
    ::close(fd_);
  }

  /// @returns the event file being written.
  const std::filesystem::path& path() const noexcept { return path_; }

  /// Records scalar @p value under @p tag at @p step.
  void scalar(std::string_view tag, float value, std::int64_t step) {
    scalar_value v{tag, value};
    scalars(step, std::span<const scalar_value>(&v, 1));
  }

  /// Records several scalars of one step as a single event.
  void scalars(std::int64_t step, std::span<const scalar_value> values) {
    std::string encoded;
    for (const auto& v : values)
      detail::put_bytes_field(encoded, detail::summary_value, detail::encode_scalar_value(v.tag, v.value));
    auto event = detail::encode_summary_event(wall_time(), step, encoded);
    std::lock_guard lock(mutex_);
    detail::append_tfrecord(buffer_, event);
    if (clock::now() - last_flush_ >= flush_interval_) flush_locked();
  }

  /// Records the distribution of @p values under @p tag at @p step as a TensorBoard
  /// HistogramProto: min, max, count, sum, sum of squares and @p buckets equal-width buckets
  /// from min to max (tf.summary.histogram's default is 30; one bucket when all values are
  /// equal, none when there are no values).
  /// @throws dsgd::error errc::invalid_argument naming the tag and the element when a value is
  ///         NaN or infinite (a histogram of it has no range), or when @p buckets is 0
  void histogram(std::string_view tag, std::span<const float> values, std::int64_t step, std::size_t buckets = 30) {
    std::string encoded;
    detail::put_bytes_field(encoded, detail::summary_value,
                            detail::encode_histogram_value(tag, figures(tag, values, buckets)));
    auto event = detail::encode_summary_event(wall_time(), step, encoded);
    std::lock_guard lock(mutex_);
    detail::append_tfrecord(buffer_, event);
    if (clock::now() - last_flush_ >= flush_interval_) flush_locked();
  }

  /// Writes every buffered record to the file.
  /// @throws dsgd::error with the system error if the write fails.
  void flush() {
    std::lock_guard lock(mutex_);
    flush_locked();
  }

 private:
  static detail::histogram_figures figures(std::string_view tag, std::span<const float> values, std::size_t buckets) {
    if (buckets == 0)
      throw error(errc::invalid_argument, "summary_writer::histogram " + std::string(tag) + ": buckets must be >= 1");
    detail::histogram_figures h;
    if (values.empty()) return h;
    h.min = h.max = values[0];
    for (std::size_t i = 0; i < values.size(); ++i) {
      const double x = values[i];
      if (!std::isfinite(x))
        throw error(errc::invalid_argument, "summary_writer::histogram " + std::string(tag) + ": element " +
                                                std::to_string(i) + " is " + std::to_string(values[i]) +
                                                ", expected a finite value");
      h.min = std::min(h.min, x);
      h.max = std::max(h.max, x);
      h.sum += x;
      h.sum_squares += x * x;
    }
    h.num = static_cast<double>(values.size());
    if (h.min == h.max) buckets = 1;
    const double width = (h.max - h.min) / static_cast<double>(buckets);
    h.bucket.assign(buckets, 0.0);
    for (std::size_t b = 0; b < buckets; ++b) h.bucket_limit.push_back(h.min + width * static_cast<double>(b + 1));
    h.bucket_limit.back() = h.max;  // no rounding may leave the largest value outside
    for (float v : values) {
      // A value on a limit belongs to the bucket that limit closes, as in (left, right].
      auto b = width > 0 ? static_cast<std::size_t>(std::ceil((v - h.min) / width)) : 1;
      b = std::clamp<std::size_t>(b, 1, buckets) - 1;
      if (b > 0 && v <= h.bucket_limit[b - 1]) --b;
      else if (v > h.bucket_limit[b]) ++b;
      h.bucket[b] += 1;
    }
    return h;
  }

  static double wall_time() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }

  void flush_locked() {
    std::size_t done = 0;
    while (done < buffer_.size()) {
      auto n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int err = errno;
        buffer_.erase(0, done);
        throw error(error_code(err, boost::system::system_category()),
                    "summary_writer: cannot write " + path_.string() + ": " + std::strerror(err));
      }
      done += static_cast<std::size_t>(n);
    }
    buffer_.clear();
    last_flush_ = clock::now();
  }

  std::filesystem::path path_;
  int fd_ = -1;
  std::string buffer_;
  clock::duration flush_interval_;
  clock::time_point last_flush_;
  std::mutex mutex_;
};

}  // namespace dsgd::train
