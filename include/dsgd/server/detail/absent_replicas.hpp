// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// What a ps task knows of the replicas that are not there: one refused at authentication (a
/// wrong cluster token) or one that departed (its connection closed before it finished), each
/// until it registers again, so that a step waiting for it names why.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace dsgd::server::detail {

/// Per replica, why it is absent, if the ps knows.
class absent_replicas {
 public:
  using clock_type = std::chrono::steady_clock;

  explicit absent_replicas(std::size_t replicas) : notes_(replicas) {}

  /// Replica @p r (task @p task) failed the handshake: @p reason. @returns true when this is
  /// news (it was not known as refused already).
  bool refused(std::size_t r, std::string task, std::string reason, clock_type::time_point now = clock_type::now()) {
    if (r >= notes_.size()) return false;
    const bool news = notes_[r].what != absence::refused;
    notes_[r] = {absence::refused, std::move(task), std::move(reason), now};
    return news;
  }
  /// Replica @p r (task @p task) departed: its last connection closed before it finished.
  void departed(std::size_t r, std::string task, clock_type::time_point now = clock_type::now()) {
    if (r < notes_.size()) notes_[r] = {absence::departed, std::move(task), {}, now};
  }
  /// Replica @p r registered: it is there.
  void registered(std::size_t r) {
    if (r < notes_.size()) notes_[r] = {};
  }
  /// @returns how many replicas are known as refused at authentication now.
  std::size_t refused_count() const {
    std::size_t n = 0;
    for (const auto& note : notes_) n += note.what == absence::refused;
    return n;
  }
  /// @returns whether no sync step of @p replicas replicas aggregating @p aggregated (0: all)
  /// can complete: more of them refused at authentication than there are backups.
  bool stall_sync(std::size_t aggregated, std::size_t replicas) const {
    aggregated = std::min(aggregated, replicas);
    return refused_count() > (aggregated == 0 ? 0 : replicas - aggregated);
  }
  /// @returns the error of a step @p step of ps @p self that cannot complete while they are absent.
  std::string cannot_complete(const std::string& self, std::uint64_t step) const {
    return self + ": step " + std::to_string(step) + " cannot complete without every replica" + describe();
  }
  /// @returns "; worker:1 (replica 1) was refused at authentication 0.4 s ago: peer 'worker:1'
  /// failed the challenge (wrong cluster token)", one such part per absent replica ("" if none).
  std::string describe(clock_type::time_point now = clock_type::now()) const {
    std::string out;
    for (std::size_t r = 0; r < notes_.size(); ++r) {
      const auto& n = notes_[r];
      if (n.what == absence::none) continue;
      char ago[32];
      std::snprintf(ago, sizeof ago, "%.1f s ago", std::chrono::duration<double>(now - n.since).count());
      out += "; " + n.task + " (replica " + std::to_string(r) + ") ";
      out += n.what == absence::refused ? "was refused at authentication " + std::string(ago) + ": " + n.why
                                        : "departed " + std::string(ago) + ": its connection closed before it finished";
    }
    return out;
  }

 private:
  enum class absence { none, refused, departed };
  struct note {
    absence what = absence::none;
    std::string task, why;
    clock_type::time_point since{};
  };
  std::vector<note> notes_;
};

}  // namespace dsgd::server::detail
