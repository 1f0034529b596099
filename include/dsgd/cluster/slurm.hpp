// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Slurm's compressed lists, expanded as `scontrol show hostnames` does: host lists such as
/// SLURM_JOB_NODELIST (`node[01-04,07],gpu3`) and task counts such as SLURM_TASKS_PER_NODE
/// (`2(x3),1`), and the host of each rank of a step under Slurm's default block distribution.
#pragma once

#include <dsgd/error.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::cluster {

/// Most hosts one list may expand to (Slurm refuses ranges of more than 64 Ki hosts too).
inline constexpr std::size_t max_hostlist_hosts = std::size_t{1} << 16;

namespace detail {

[[noreturn]] inline void bad_list(std::string_view what, std::string_view list, std::size_t at, std::string_view why) {
  throw error(errc::bad_cluster_spec, std::string(what) + " \"" + std::string(list) + "\": " + std::string(why) +
                                          " at column " + std::to_string(at + 1));
}

inline bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// "07" -> 7; the caller checked all_digits. Values past 9 digits are refused as too many hosts.
inline std::size_t small_number(std::string_view s, std::string_view list, std::size_t at) {
  std::size_t v = 0;
  for (char c : s) {
    v = v * 10 + static_cast<std::size_t>(c - '0');
    if (v > 999'999'999) bad_list("host list", list, at, "number \"" + std::string(s) + "\" is too large");
  }
  return v;
}

// The suffixes of one bracket's ranges ("01-04,07" -> 01 02 03 04 07), each as wide as the lower
// bound is written (Slurm's padding rule: "01-3" gives 01 02 03, "9-011" gives 9 10 11).
inline std::vector<std::string> expand_ranges(std::string_view ranges, std::string_view list, std::size_t at) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= ranges.size()) {
    const std::size_t comma = std::min(ranges.find(',', start), ranges.size());
    const std::string_view item = ranges.substr(start, comma - start);
    const std::size_t dash = item.find('-');
    const std::string_view lo = item.substr(0, dash);
    const std::string_view hi = dash == std::string_view::npos ? lo : item.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi))
      bad_list("host list", list, at + start, "range \"" + std::string(item) + "\" is not N or N-M with digits");
    const std::size_t a = small_number(lo, list, at + start), b = small_number(hi, list, at + start);
    if (a > b) bad_list("host list", list, at + start, "range \"" + std::string(item) + "\" runs backwards");
    if (b - a >= max_hostlist_hosts || out.size() + (b - a + 1) > max_hostlist_hosts)
      bad_list("host list", list, at + start, "range \"" + std::string(item) + "\" has too many hosts");
    for (std::size_t v = a; v <= b; ++v) {
      std::string digits = std::to_string(v);
      if (digits.size() < lo.size()) digits.insert(0, lo.size() - digits.size(), '0');
      out.push_back(std::move(digits));
    }
    start = comma + 1;
  }
  return out;
}

// One comma-free item: text and bracketed ranges, expanded as a product, first bracket outermost.
// Text may stand before and between brackets, not after the last one (as Slurm 22.05 has it).
inline void expand_item(std::string_view item, std::size_t at, std::string_view list, std::vector<std::string>& out) {
  std::vector<std::string> names{""};
  std::size_t i = 0;
  bool ends_in_bracket = false;
  while (i < item.size()) {
    const std::size_t open = item.find('[', i);
    const std::string_view text = item.substr(i, open == std::string_view::npos ? std::string_view::npos : open - i);
    if (item.find(']', i) < open) bad_list("host list", list, at + item.find(']', i), "']' without '['");
    if (open == std::string_view::npos) {
      if (ends_in_bracket) bad_list("host list", list, at + i, "text after the last ']'");
      for (auto& n : names) n += text;
      break;
    }
    const std::size_t close = item.find(']', open);
    if (close == std::string_view::npos) bad_list("host list", list, at + open, "'[' without ']'");
    const auto suffixes = expand_ranges(item.substr(open + 1, close - open - 1), list, at + open + 1);
    if (names.size() * suffixes.size() > max_hostlist_hosts) bad_list("host list", list, at, "too many hosts");
    std::vector<std::string> next;
    for (const auto& n : names)
      for (const auto& s : suffixes) next.push_back(n + std::string(text) + s);
    names = std::move(next);
    i = close + 1;
    ends_in_bracket = true;
  }
  for (auto& n : names) {
    if (n.find_first_of(" \t\n") != std::string::npos) bad_list("host list", list, at, "a host name has white space");
    out.push_back(std::move(n));
  }
}

}  // namespace detail

/// Expands a Slurm host list: `node[01-04,07],gpu3` -> node01 node02 node03 node04 node07 gpu3,
/// `rack[1-2]-n[01-02]` -> rack1-n01 rack1-n02 rack2-n01 rack2-n02. Commas inside brackets
/// separate ranges, outside them hosts; empty items are skipped; order and repeats are kept.
/// @throws dsgd::error(errc::bad_cluster_spec) naming the list, the column and what is wrong
///         (unbalanced brackets, a range that is not digits or runs backwards, text after the
///         last bracket, more than max_hostlist_hosts hosts)
inline std::vector<std::string> expand_hostlist(std::string_view list) {
  std::vector<std::string> out;
  std::size_t start = 0, depth = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']' && depth > 0) --depth;
    if (c == ',' && (depth == 0 || i == list.size())) {
      if (i > start) detail::expand_item(list.substr(start, i - start), start, list, out);
      if (out.size() > max_hostlist_hosts) detail::bad_list("host list", list, start, "too many hosts");
      start = i + 1;
      depth = 0;
    }
  }
  return out;
}

/// Expands a Slurm task count list: `2(x3),1` -> 2 2 2 1 (SLURM_TASKS_PER_NODE, the tasks of the
/// step on each node in node-list order).
/// @throws dsgd::error(errc::bad_cluster_spec) naming the list and the column of a bad entry
inline std::vector<int> expand_task_counts(std::string_view list) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start < list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view item = list.substr(start, comma - start);
    const std::size_t paren = item.find("(x");
    const std::string_view count = item.substr(0, paren);
    std::string_view repeat = "1";
    if (paren != std::string_view::npos) {
      if (item.back() != ')') detail::bad_list("task counts", list, start + paren, "\"(x\" without ')'");
      repeat = item.substr(paren + 2, item.size() - paren - 3);
    }
    if (!detail::all_digits(count) || !detail::all_digits(repeat) || count.size() > 6 || repeat.size() > 6)
      detail::bad_list("task counts", list, start, "\"" + std::string(item) + "\" is not N or N(xM)");
    const int n = std::stoi(std::string(count)), times = std::stoi(std::string(repeat));
    if (out.size() + static_cast<std::size_t>(times) > max_hostlist_hosts)
      detail::bad_list("task counts", list, start, "too many nodes");
    out.insert(out.end(), static_cast<std::size_t>(times), n);
    start = comma + 1;
  }
  return out;
}

/// The host of every rank of a step whose nodes are @p nodes (SLURM_JOB_NODELIST or
/// SLURM_STEP_NODELIST) with @p tasks_per_node tasks each (SLURM_TASKS_PER_NODE), under Slurm's
/// default block distribution: the first node's tasks are ranks 0.., then the next node's.
/// @throws dsgd::error(errc::bad_cluster_spec) when either list is malformed or they disagree
inline std::vector<std::string> hosts_of_ranks(std::string_view nodes, std::string_view tasks_per_node) {
  const auto hosts = expand_hostlist(nodes);
  const auto counts = expand_task_counts(tasks_per_node);
  if (hosts.size() != counts.size())
    throw error(errc::bad_cluster_spec, "Slurm node list \"" + std::string(nodes) + "\" names " +
                                            std::to_string(hosts.size()) + " nodes but the task counts \"" +
                                            std::string(tasks_per_node) + "\" give " + std::to_string(counts.size()));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < hosts.size(); ++i) out.insert(out.end(), static_cast<std::size_t>(counts[i]), hosts[i]);
  return out;
}

}  // namespace dsgd::cluster
