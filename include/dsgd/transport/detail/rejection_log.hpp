// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// A listener's log of rejected connections, rate-limited: in each interval the first few
/// rejections are logged in full and the rest counted per reason, then reported in one line, so
/// that a flood of strangers (a port scan, half-open connections) cannot flood the log.
// IWYU pragma: private, include <dsgd/transport/asio_tcp.hpp>
#pragma once

#include <dsgd/detail/log.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace dsgd::transport::detail {

class rejection_log {
 public:
  using clock_type = std::chrono::steady_clock;

  /// Lines that are not about a failed handshake pass through to @p out unchanged.
  explicit rejection_log(log_function out, std::size_t in_full = 5,
                         std::chrono::milliseconds interval = std::chrono::seconds(10))
      : out_(dsgd::detail::or_stderr(std::move(out))), in_full_(in_full), interval_(interval) {}

  rejection_log(const rejection_log&) = delete;
  rejection_log& operator=(const rejection_log&) = delete;
  ~rejection_log() { flush(); }

  /// One line of a connection's log, at @p now.
  void operator()(std::string_view line, clock_type::time_point now = clock_type::now()) {
    if (line.find("handshake failed") == std::string_view::npos) return out_(line);
    std::string summary;
    bool in_full = false;
    {
      std::lock_guard lock(mutex_);
      if (!window_) window_ = now;
      if (now - *window_ >= interval_) summary = take_summary_locked(now);
      in_full = logged_ < in_full_;
      if (in_full) {
        ++logged_;
      } else {
        ++counts_[std::string(reason_of(line))];
      }
    }
    if (!summary.empty()) out_(summary);
    if (in_full) out_(line);
  }

  /// Reports what is counted but not yet said (the listener calls it when it closes).
  void flush() {
    std::string summary;
    {
      std::lock_guard lock(mutex_);
      summary = take_summary_locked(clock_type::now());
    }
    if (!summary.empty()) out_(summary);
  }

  /// The reason a rejection is counted under: what kind of peer it was.
  static std::string_view reason_of(std::string_view line) {
    if (line.find("before its hello") != std::string_view::npos) return "closed before its hello";
    if (line.find("not a dsgd peer") != std::string_view::npos) return "not a dsgd peer";
    if (line.find("wrong cluster token") != std::string_view::npos ||
        line.find("rejected our token") != std::string_view::npos)
      return "wrong token";
    if (line.find("protocol version") != std::string_view::npos) return "wrong version";
    if (line.find("unknown peer identity") != std::string_view::npos) return "unknown peer";
    if (line.find("timed out") != std::string_view::npos) return "timed out";
    if (line.find("TLS") != std::string_view::npos) return "TLS";
    return "other";
  }

 private:
  std::string take_summary_locked(clock_type::time_point now) {
    std::size_t total = 0;
    std::string parts;
    for (const auto& [reason, n] : counts_) {
      total += n;
      parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + reason;
    }
    std::string out;
    if (total > 0) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - window_.value_or(now)).count();
      out = "dsgd transport: " + std::to_string(total) + " more rejected connection" + (total == 1 ? "" : "s") +
            " in the last " + std::to_string(ms) + " ms, not logged one by one: " + parts;
    }
    counts_.clear();
    logged_ = 0;
    window_ = now;
    return out;
  }

  log_function out_;
  std::size_t in_full_;
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::size_t logged_ = 0;  // in full, this interval
  std::map<std::string, std::size_t, std::less<>> counts_;
  std::optional<clock_type::time_point> window_;
};

}  // namespace dsgd::transport::detail
