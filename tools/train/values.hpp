// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// dsgd-train's option values read from their text, each checked against its range; a bad one
// throws a usage_error that names the option and says what was expected.
#pragma once

#include <dsgd/compress/registry.hpp>
#include <dsgd/compress/selection.hpp>
#include <dsgd/error.hpp>

#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dsgd_train {

/// A bad command line: main() prints it with a pointer to --help and exits 2.
struct usage_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

inline constexpr std::uint64_t no_max = std::numeric_limits<std::uint64_t>::max();
inline constexpr double infinity = std::numeric_limits<double>::max();

/// "--epochs 12": a whole number from @p min to @p max, nothing after it.
inline std::uint64_t read_whole(const std::string& option, const std::string& v, std::uint64_t min = 0,
                                std::uint64_t max = no_max) {
  std::size_t used = 0;
  unsigned long long n = 0;
  try {
    // std::stoull reads "-1" as a huge number and "+1" as 1: neither is what the user meant.
    if (!v.empty() && v[0] != '-' && v[0] != '+') n = std::stoull(v, &used);
  } catch (const std::logic_error&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || n < min || n > max)
    throw usage_error(option + " " + v + ": expected a whole number from " + std::to_string(min) +
                      (max == no_max ? " up" : " to " + std::to_string(max)));
  return n;
}

/// "--hidden 1024,1024": whole numbers of at least 1, separated by commas.
inline std::vector<std::size_t> read_widths(const std::string& option, const std::string& v) {
  std::vector<std::size_t> widths;
  std::size_t at = 0;
  while (true) {
    const auto comma = v.find(',', at);
    widths.push_back(read_whole(option, v.substr(at, comma == std::string::npos ? comma : comma - at), 1, 1 << 20));
    if (comma == std::string::npos) return widths;
    at = comma + 1;
  }
}

/// DSGD_HOSTS=node1,node2,...: the rank layout's hosts, one for every rank or one for all, in
/// rank order; no entry empty. cluster_spec checks the names themselves.
inline std::vector<std::string> read_hosts(const std::string& variable, const std::string& v) {
  std::vector<std::string> hosts;
  std::size_t at = 0;
  while (true) {
    const auto comma = v.find(',', at);
    std::string host = v.substr(at, comma == std::string::npos ? comma : comma - at);
    if (host.empty() || host.find_first_of(" \t") != std::string::npos)
      throw usage_error(variable + "=" + v + ": " +
                        (host.empty() ? "empty host" : "host \"" + host + "\" has a blank") + " at position " +
                        std::to_string(hosts.size() + 1) + "; expected H0,H1,... (one host per rank, or one for all)");
    hosts.push_back(std::move(host));
    if (comma == std::string::npos) return hosts;
    at = comma + 1;
  }
}

// 0.05 as "0.05", 1e9 as "1e+09".
inline std::string shortest(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

/// "--lr 0.05": a number in [lo, hi], the ends open when @p open_low / @p open_high.
inline double read_real(const std::string& option, const std::string& v, double lo, double hi, bool open_low = false,
                        bool open_high = false) {
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::logic_error&) {
    used = 0;
  }
  // NaN is inside no interval, so "--lr nan" is refused here too.
  const bool inside = (open_low ? x > lo : x >= lo) && (open_high ? x < hi : x <= hi);
  if (used == 0 || used != v.size() || !inside)
    throw usage_error(option + " " + v + ": expected a number in " + (open_low ? "(" : "[") + shortest(lo) + ", " +
                      (hi == infinity ? "inf" : shortest(hi)) + (open_high ? ")" : "]"));
  return x;
}

/// "--compress top_k(0.01)": a codec as its describe() writes it. A pull sends values,
/// which keep no residual, so @p pull refuses the codecs with error feedback.
inline dsgd::compress::codec read_codec(const std::string& option, const std::string& v, bool pull) {
  dsgd::compress::codec c;
  try {
    c = dsgd::compress::parse(v);
  } catch (const dsgd::error& e) {
    throw usage_error(option + ": " + e.what());
  }
  if (pull && !dsgd::compress::values_as(c))
    throw usage_error(option + " " + v + ": a pull sends values, which keep no residual: expected none, fp16 or bf16");
  return c;
}

/// "--slowdown worker:2=3": a task and the factor (>= 1) its steps are slowed by.
struct slowdown {
  std::string text;  // as given ("" for none), for the CSV
  std::string task;  // "worker:2"
  double factor = 1;
};

inline slowdown read_slowdown(const std::string& option, const std::string& v) {
  const auto eq = v.find('=');
  const auto colon = v.find(':');
  if (eq == std::string::npos || colon == std::string::npos || colon > eq || colon == 0 || eq + 1 == v.size())
    throw usage_error(option + " " + v + ": expected TASK=FACTOR, e.g. worker:2=3");
  std::size_t used = 0;
  double f = 0;
  try {
    f = std::stod(v.substr(eq + 1), &used);
  } catch (const std::logic_error&) {
    used = 0;
  }
  if (used != v.size() - eq - 1 || !(f >= 1))
    throw usage_error(option + " " + v + ": factor at column " + std::to_string(eq + 2) + " must be a number >= 1");
  return {v, v.substr(0, eq), f};
}

}  // namespace dsgd_train
