// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// server::detail::parked_requests: the requests a ps task cannot answer yet (a pull before
/// its step completes, wait_ready before a session, shutdown before every replica finished),
/// in arrival order, until something lets them through or their deadline passes.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/reply_sink.hpp>
#include <dsgd/transport/frame.hpp>
#include <dsgd/update/concepts.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <list>
#include <utility>
#include <vector>

namespace dsgd::server::detail {

/// A request the rule makes wait, until a push, a finish or its deadline.
struct parked_request {
  peer_id from;
  protocol::message kind;
  transport::frame_header request;
  update::clock_type::time_point deadline;
  std::vector<std::uint64_t> rows;  ///< a sparse_pull's rows, local to the shard
};

/// The parked requests of one ps task, oldest first.
class parked_requests {
 public:
  /// Parks @p r.
  void park(parked_request r) { parked_.push_back(std::move(r)); }
  /// @returns how many requests are parked.
  std::size_t size() const noexcept { return parked_.size(); }
  /// Forgets every request @p pred(request) selects (it answers them if they need an answer).
  template <class Pred>
  void erase_if(Pred pred) {
    std::erase_if(parked_, pred);
  }
  /// Forgets the requests of peer @p p (its connection is gone).
  void forget(peer_id p) {
    erase_if([&](const parked_request& r) { return r.from == p; });
  }
  /// Offers every request, oldest first, to @p answer(request), which returns true when it
  /// answered it (then it is forgotten).
  template <class Answer>
  void retry(Answer answer) {
    for (auto it = parked_.begin(); it != parked_.end();) it = answer(*it) ? parked_.erase(it) : std::next(it);
  }
  /// Hands every request whose deadline is before @p now to @p expire(request), oldest first,
  /// forgetting each; stops after one for which it returns true. @returns whether it stopped.
  template <class Expire>
  bool sweep(update::clock_type::time_point now, Expire expire) {
    for (auto it = parked_.begin(); it != parked_.end();) {
      if (it->deadline > now) {
        ++it;
        continue;
      }
      auto r = std::move(*it);
      it = parked_.erase(it);
      if (expire(r)) return true;
    }
    return false;
  }

 private:
  std::list<parked_request> parked_;
};

}  // namespace dsgd::server::detail
