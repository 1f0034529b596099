// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// client::detail::request_table: a worker's requests awaiting their answers, one plain
/// completion slot per request id and connection (no promise, no heap shared state), and the
/// parts list an operation keeps of the requests it sent.
#pragma once

#include <dsgd/compress/selection.hpp>
#include <dsgd/error.hpp>
#include <dsgd/protocol/messages.hpp>

#include <boost/asio/buffer.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dsgd::client {

/// The answer to one request.
struct reply {
  protocol::message type = protocol::message::reply_ok;
  std::uint64_t step = 0;
};

namespace detail {

/// Where a request stands.
enum class slot_state : std::uint8_t {
  pending,   ///< sent, no answer yet
  answered,  ///< its reply arrived: see request_slot::answer
  failed,    ///< it failed (an error reply, a refused send, a lost connection)
};

/// One request's completion slot: its state, its answer or failure as plain data (made into a
/// dsgd::error by the call that takes it), and where its reply's payload goes.
struct request_slot {
  slot_state state = slot_state::pending;
  reply answer;                            ///< once answered
  error_code code;                         ///< once failed
  std::string what;                        ///< once failed: the message of its dsgd::error
  boost::asio::mutable_buffer reply_into;  ///< where a pull_reply's (or counts') payload goes
  /// A compressed pull's encoding (fp16, bf16; none for every other request): its reply's
  /// 16-bit values land in reply_into's back half and are widened there (compressed_pull_client.hpp).
  compress::value_encoding reply_encoding = compress::value_encoding::none;
  std::vector<std::byte> control;  ///< an error reply's body, while it arrives
  bool orphaned = false;           ///< freed once complete: see request_table::orphan
};

/// The requests of a client awaiting their answers, keyed by request id on each connection.
/// A slot is completed at most once (the first answer or failure wins; later ones find it
/// no longer pending) and freed when its answer is taken. Single-threaded, like the client.
class request_table {
 public:
  /// A table for @p connections connections, numbered from 0.
  explicit request_table(std::size_t connections = 0) : slots_(connections) {}

  /// @returns the number of connections.
  std::size_t connections() const noexcept { return slots_.size(); }

  /// Opens the slot of request @p id on connection @p conn; its reply's payload goes to
  /// @p reply_into. @throws dsgd::error(errc::invalid_argument) when the id is in use there.
  request_slot& open(std::size_t conn, std::uint64_t id, boost::asio::mutable_buffer reply_into = {},
                     compress::value_encoding reply_encoding = compress::value_encoding::none) {
    auto [it, fresh] = slots_.at(conn).try_emplace(id);
    if (!fresh)
      throw error(errc::invalid_argument, "request_table: request " + std::to_string(id) + " on connection " +
                                              std::to_string(conn) + " is open already");
    it->second.reply_into = reply_into;
    it->second.reply_encoding = reply_encoding;
    return it->second;
  }

  /// @returns the slot of request @p id on @p conn while it awaits its answer; nullptr for an
  /// id never opened there, answered or failed already, taken, or orphaned (a late or unknown
  /// reply, whose payload has nowhere to go).
  request_slot* pending(std::size_t conn, std::uint64_t id) noexcept {
    auto& m = slots_[conn];
    auto it = m.find(id);
    return it == m.end() || it->second.state != slot_state::pending || it->second.orphaned ? nullptr : &it->second;
  }

  /// @returns the slot of request @p id on @p conn in whatever state; nullptr when none.
  const request_slot* find(std::size_t conn, std::uint64_t id) const noexcept {
    const auto& m = slots_[conn];
    auto it = m.find(id);
    return it == m.end() ? nullptr : &it->second;
  }

  /// Request @p id on @p conn was answered. @returns false (and changes nothing) when it is not
  /// pending: a reply to nothing this client awaits.
  bool answer(std::size_t conn, std::uint64_t id, reply r) {
    auto it = pending_at(conn, id);
    if (it == slots_[conn].end()) return false;
    it->second.answer = r;
    complete(conn, it, slot_state::answered);
    return true;
  }

  /// Request @p id on @p conn failed with @p code and @p what. @returns false (and changes
  /// nothing) when it is not pending. errc::aborted (a restore re-created the session) counts
  /// as a loss (losses()): the session this worker's other requests belong to is gone too.
  bool fail(std::size_t conn, std::uint64_t id, error_code code, std::string what) {
    auto it = pending_at(conn, id);
    if (it == slots_[conn].end()) return false;
    if (code == errc::aborted) ++losses_;
    it->second.code = code;
    it->second.what = std::move(what);
    complete(conn, it, slot_state::failed);
    return true;
  }

  /// Connection @p conn failed: every request still pending on it fails with @p code and
  /// @p what; other connections' requests, and answers already in, stay as they are.
  /// @returns how many requests it failed.
  std::size_t fail_connection(std::size_t conn, error_code code, const std::string& what) {
    ++losses_;
    std::size_t n = 0;
    auto& m = slots_[conn];
    for (auto it = m.begin(); it != m.end();) {
      auto next = std::next(it);
      if (it->second.state == slot_state::pending) {
        it->second.code = code;
        it->second.what = what;
        complete(conn, it, slot_state::failed);
        ++n;
      }
      it = next;
    }
    return n;
  }

  /// @returns whether request @p id on @p conn has its answer or failure (or was never open).
  bool done(std::size_t conn, std::uint64_t id) const noexcept {
    const auto* s = find(conn, id);
    return !s || s->state != slot_state::pending;
  }

  /// Takes the answer or failure of request @p id on @p conn, freeing its slot; std::nullopt
  /// while it is pending (the slot stays). An id not open fails with errc::invalid_argument.
  std::optional<request_slot> take(std::size_t conn, std::uint64_t id) {
    auto& m = slots_[conn];
    auto it = m.find(id);
    if (it == m.end()) {
      request_slot s;
      s.state = slot_state::failed;
      s.code = make_error_code(errc::invalid_argument);
      s.what =
          "request_table: request " + std::to_string(id) + " on connection " + std::to_string(conn) + " is not open";
      return s;
    }
    if (it->second.state == slot_state::pending) return std::nullopt;
    request_slot s = std::move(it->second);
    m.erase(it);
    return s;
  }

  /// Nobody will take the answer of request @p id on @p conn: its slot is freed now if it is
  /// complete, else as soon as it completes (not before: a reply may be arriving into it).
  void orphan(std::size_t conn, std::uint64_t id) noexcept {
    auto& m = slots_[conn];
    auto it = m.find(id);
    if (it == m.end()) return;
    if (it->second.state != slot_state::pending) m.erase(it);
    else it->second.orphaned = true;
  }

  /// @returns how many slots connection @p conn holds (pending or not yet taken).
  std::size_t size(std::size_t conn) const noexcept { return slots_[conn].size(); }

  /// @returns how many connections failed (fail_connection()) and requests were aborted by a
  /// restore (fail()): a wait notes it to learn cheaply whether either happened meanwhile.
  std::size_t losses() const noexcept { return losses_; }

 private:
  using map = std::unordered_map<std::uint64_t, request_slot>;
  map::iterator pending_at(std::size_t conn, std::uint64_t id) {
    auto& m = slots_[conn];
    auto it = m.find(id);
    return it != m.end() && it->second.state == slot_state::pending ? it : m.end();
  }
  void complete(std::size_t conn, map::iterator it, slot_state state) {
    if (it->second.orphaned) {
      slots_[conn].erase(it);
      return;
    }
    it->second.state = state;
    it->second.control = {};
  }

  std::vector<map> slots_;
  std::size_t losses_ = 0;
};

/// The requests one operation (a pull, a push, a control broadcast) sent, in the order sent,
/// with what it collected of their answers: the first failure, the lowest step answered and
/// how many shards dropped a push.
struct request_parts {
  /// One request sent.
  struct part {
    std::size_t ps = 0;        ///< its connection
    std::uint64_t id = 0;      ///< its request id there
    protocol::message type{};  ///< what it asked
    std::size_t variable = 0;  ///< the variable it is about
    bool collected = false;    ///< its answer or failure was taken
    reply result;              ///< its answer, once collected
  };
  std::vector<part> parts;
  std::chrono::steady_clock::time_point deadline;  ///< every answer is due by then
  std::optional<dsgd::error> first_error;          ///< the first failure collected
  std::uint64_t lowest_step = ~std::uint64_t{0};   ///< the lowest step answered
  std::size_t dropped = 0;                         ///< answers that were push_dropped
  bool lost = false;                               ///< it lost a connection or its session (client_channel::collect)
  std::size_t losses_seen = 0;                     ///< request_table::losses() when last looked

  /// @returns whether some answer is still to be collected.
  bool pending() const noexcept {
    return std::any_of(parts.begin(), parts.end(), [](const part& p) { return !p.collected; });
  }

  /// Records the slot @p s taken for part @p p: its answer, or its failure if it is the first.
  void settle(part& p, request_slot&& s) {
    p.collected = true;
    if (s.state == slot_state::failed) {
      lost = lost || s.code == errc::peer_lost || s.code == errc::aborted;
      if (!first_error) first_error.emplace(s.code, std::move(s.what));
      return;
    }
    p.result = s.answer;
    lowest_step = std::min(lowest_step, s.answer.step);
    if (s.answer.type == protocol::message::push_dropped) ++dropped;
  }

  /// Gives up on every part not collected, orphaning their slots in @p table (the caller
  /// closes the connections, so that no late reply lands in their buffers).
  void abandon(request_table& table) noexcept {
    for (auto& p : parts)
      if (!p.collected) {
        table.orphan(p.ps, p.id);
        p.collected = true;
      }
  }
};

}  // namespace detail
}  // namespace dsgd::client
