// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Sessions (protocol.hpp, "Sessions"), both sides: the chief's fresh stamp, a ps task's
/// session (its generation, its last restore, the stamp the chief opened), and a worker's wait
/// until every ps task answers the same stamp.
// IWYU pragma: private
#pragma once

#include <dsgd/detail/retry.hpp>
#include <dsgd/error.hpp>
#include <dsgd/server/detail/request_table.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace dsgd::server::detail {

/// @returns a fresh session stamp: random, never 0 (0 means no session is open).
inline std::uint64_t new_session_stamp() {
  std::random_device entropy;
  std::uint64_t stamp = 0;
  while (stamp == 0) stamp = (std::uint64_t{entropy()} << 32) ^ entropy();
  return stamp;
}

/// A ps task's session: how many restores re-created it over existing shards (its generation;
/// requests of workers registered in an older one are aborted), the checkpoint of the last, and
/// the stamp of the session the chief opened since (0: none yet, or closed by a restore).
class ps_session {
 public:
  std::uint64_t generation() const noexcept { return generation_; }
  std::uint64_t stamp() const noexcept { return stamp_; }
  bool is_open() const noexcept { return stamp_ != 0; }
  /// The chief's open_session: every ps task holds what it initialised or restored.
  void open(std::uint64_t stamp) noexcept { stamp_ = stamp; }
  /// A restore of checkpoint @p step closes the session; over existing shards (@p recreated) it
  /// starts a new generation.
  void restored(std::uint64_t step, bool recreated) noexcept {
    stamp_ = 0;
    if (!recreated) return;
    ++generation_;
    restored_step_ = step;
  }
  /// @returns the error for a request of @p identity, registered in an older generation, on @p self.
  dsgd::error aborted(const std::string& self, const std::string& identity) const {
    return error(errc::aborted, self + " restored checkpoint " + std::to_string(restored_step_) + " after " + identity +
                                    " registered: register again and read the variables anew");
  }
  /// @returns why a wait_ready on @p self, every shard of which exists, is still parked.
  std::string not_opened(const std::string& self) const {
    return self + ": every shard exists, but no chief opened a session before the deadline" +
           (restored_step_ ? " since the restore of checkpoint " + std::to_string(restored_step_) : std::string()) +
           " (did the chief fail while restoring the other ps tasks?)";
  }

 private:
  std::uint64_t generation_ = 0;
  std::uint64_t restored_step_ = 0;
  std::uint64_t stamp_ = 0;
};

/// Worker: calls @p ask (every ps task's wait_ready answer, in ps order; step: its stamp) until
/// all stamps agree, with backoff (dsgd::detail::retry_until).
/// @throws dsgd::error errc::timed_out once they still differ at @p deadline, naming each ps
///         task (@p name(i)) with its stamp; what @p ask throws
template <class Ask, class Name>
void await_one_session(Ask ask, Name name, const std::string& me, std::chrono::steady_clock::time_point deadline,
                       std::chrono::milliseconds backoff, std::chrono::milliseconds max_backoff) {
  std::vector<reply> replies;
  const bool agreed = dsgd::detail::retry_until(deadline, backoff, max_backoff, [&] {
    replies = ask();
    return std::all_of(replies.begin(), replies.end(), [&](const reply& r) { return r.step == replies.front().step; });
  });
  if (agreed) return;
  std::string stamps;
  for (std::size_t i = 0; i < replies.size(); ++i)
    stamps += (i ? ", " : "") + name(i) + " " + std::to_string(replies[i].step);
  throw error(errc::timed_out, me + ": the ps tasks still hold different sessions at the deadline (" + stamps +
                                   "): a chief's restore or initialisation reached only some of them");
}

}  // namespace dsgd::server::detail
