// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Sessions (protocol/messages.hpp, "Sessions"), a ps task's side: its generation, its last
/// restore, the stamp the chief opened (the workers' side is client/detail/session.hpp).
// IWYU pragma: private
#pragma once

#include <dsgd/error.hpp>

#include <cstdint>
#include <string>

namespace dsgd::server::detail {

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

}  // namespace dsgd::server::detail
