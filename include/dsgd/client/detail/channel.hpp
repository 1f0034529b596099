// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// client::detail::client_channel: a worker's connections to the ps tasks and its requests on
/// them: sending a request into its completion slot, running the I/O on the calling thread
/// until an answer is in or its deadline passes, and the receive loop that completes the slots.
/// Every call on a connection of the Transport, and its async_connect, is here.
#pragma once

#include <dsgd/client/detail/compressed_pull.hpp>
#include <dsgd/client/detail/request_table.hpp>
#include <dsgd/client/options.hpp>
#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/error.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/transport/asio_tcp_policy.hpp>
#include <dsgd/transport/concepts.hpp>

#include <boost/asio/buffer.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsgd::client::detail {

/// @returns the bytes of @p s.
inline boost::asio::const_buffer span_buffer(std::span<const float> s) {
  return boost::asio::buffer(s.data(), s.size_bytes());
}
/// @returns the bytes of @p s.
inline boost::asio::mutable_buffer span_buffer(std::span<float> s) {
  return boost::asio::buffer(s.data(), s.size_bytes());
}

/// @returns the header of a request of @p type about shard @p shard of @p variable at @p step.
inline transport::frame_header header(protocol::message type, std::size_t variable, std::uint32_t shard,
                                      std::uint64_t step) {
  transport::frame_header h;
  h.type = static_cast<std::uint16_t>(type);
  h.variable = static_cast<std::uint32_t>(variable);
  h.shard = shard;
  h.step = step;
  return h;
}

/// One request to send: its frame header (the request id is filled in when it is sent), its
/// payload (a sparse push's rows after its keys) and where its reply's payload goes.
struct request {
  std::size_t ps = 0;                      ///< the ps task it goes to
  transport::frame_header h;               ///< its header
  boost::asio::const_buffer payload;       ///< its payload (a sparse request's keys)
  boost::asio::mutable_buffer reply_into;  ///< where a pull_reply's (or counts') payload goes
  boost::asio::const_buffer payload_rows;  ///< a sparse push's rows, after its keys
  compress::value_encoding reply_encoding = compress::value_encoding::none;  ///< a compressed pull's
};

/// A worker's connections to every ps task of @p spec over the Transport @p T, and its
/// requests on them. The I/O runs on the thread that calls it. Not thread-safe.
template <Transport T = transport::asio_tcp>
class client_channel {
 public:
  /// Channels to the @p spec's ps tasks for task @p me, with @p opts (validated by the caller;
  /// its log set), connecting over @p transport; none connected yet.
  client_channel(const cluster::cluster_spec& spec, std::string me, const client_options& opts, T transport = T{})
      : spec_(&spec), me_(std::move(me)), opts_(&opts), transport_(std::move(transport)), work_(ioc_.get_executor()) {
    conns_.resize(spec.has_job("ps") ? spec.num_tasks("ps") : 0);
    closing_.resize(conns_.size(), false);
    table_ = request_table(conns_.size());
  }

  ~client_channel() {
    close_all();
    work_.reset();
    // A transport may still hold work on this context from another thread (inproc completes
    // this channel's operations from the ps's thread): let it end, so that the context
    // outlives it.
    ioc_.restart();
    ioc_.run_for(std::chrono::seconds(1));
  }

  client_channel(const client_channel&) = delete;
  client_channel& operator=(const client_channel&) = delete;

  /// @returns the number of ps tasks.
  std::size_t size() const noexcept { return conns_.size(); }

  /// @returns an operation's empty parts list, its deadline request_timeout from now (or the
  /// bound, if sooner).
  request_parts open_parts() const {
    request_parts f;
    f.deadline = std::min(std::chrono::steady_clock::now() + opts_->requests.request_timeout, bound_);
    f.losses_seen = table_.losses();
    return f;
  }

  /// No request waits past @p until (a recovery's overall deadline); max: none.
  void bound_by(std::chrono::steady_clock::time_point until) { bound_ = until; }
  /// @returns the bound bound_by() set.
  std::chrono::steady_clock::time_point bound() const { return bound_; }

  /// Sends every request of @p batch (pipelined on each connection) and waits for all the
  /// answers. @returns them in batch order. @throws dsgd::error the first failure, once every
  /// answer is in or at once when a connection is lost (collect()); errc::timed_out at once
  /// when one is late (every connection is then closed)
  std::vector<reply> run(std::vector<request>& batch) {
    request_parts f = open_parts();
    for (const auto& r : batch) add(f, r);
    std::vector<reply> out;
    for (auto& p : f.parts) {
      collect(f, p);
      if (!f.first_error) out.push_back(p.result);
    }
    if (f.first_error) throw *f.first_error;
    return out;
  }

  /// Opens @p r's slot and queues @p r on its connection as a part of @p f (pipelined there;
  /// written when the I/O next runs). The reply, or the failure, completes the slot.
  void add(request_parts& f, const request& r) {
    const std::uint64_t id = ++next_id_;
    f.parts.push_back({r.ps, id, static_cast<protocol::message>(r.h.type), r.h.variable, false, {}});
    if (r.h.type == static_cast<std::uint16_t>(protocol::message::finish) ||
        r.h.type == static_cast<std::uint16_t>(protocol::message::shutdown))
      closing_[r.ps] = true;
    table_.open(r.ps, id, r.reply_into, r.reply_encoding);
    if (!is_open(r.ps)) {
      table_.fail(r.ps, id, errc::peer_lost, lost(r.ps));
      f.lost = true;
      return;
    }
    auto h = r.h;
    h.request_id = id;
    send(r.ps, h, std::array<boost::asio::const_buffer, 2>{r.payload, r.payload_rows});
  }

  /// Waits for part @p p's answer, by f's deadline; keeps the first failure in f. A part that
  /// times out abandons every connection (no late reply may be written) and throws at once.
  /// Once f has lost a connection (lost_connection()), it gives up on its parts still pending
  /// (give_up()) and its callers throw the loss: a worker's state spans every ps, so their
  /// answers may never come (a sync step waiting for replicas that wait in turn for the lost ps
  /// to be restored by this very task).
  void collect(request_parts& f, request_parts::part& p) {
    if (p.collected) return;
    if (!run_until([&] { return table_.done(p.ps, p.id) || lost_connection(f); }, f.deadline)) {
      f.abandon(table_);  // nothing of f lands any more
      close_all();
      throw error(errc::timed_out,
                  me_ + ": no answer from ps:" + std::to_string(p.ps) + " to " + to_string(p.type) + " within " +
                      (f.deadline == bound_ ? std::string("the recovery deadline")
                                            : std::to_string(opts_->requests.request_timeout.count()) + " ms"));
    }
    if (!table_.done(p.ps, p.id)) return give_up(f);
    f.settle(p, std::move(*table_.take(p.ps, p.id)));
  }

  /// Collects every answer of @p f; throws its first failure once all are in (or one part's
  /// connection is lost: see collect()).
  void collect_all(request_parts& f) {
    for (auto& p : f.parts) collect(f, p);
    if (f.first_error) fail(f);
  }

  /// A part of @p f failed: collects the rest, so that no reply lands later, then throws it.
  [[noreturn]] void fail(request_parts& f) {
    for (auto& p : f.parts) {
      try {
        collect(f, p);
      } catch (const dsgd::error&) {  // timed out: the connections are closed, nothing lands
        break;
      }
    }
    throw *f.first_error;
  }

  /// @returns whether @p f has lost a connection or its session: a part of it failed with its
  /// connection or was aborted by a restore (the parts still waiting elsewhere may wait for
  /// steps that need the pushes the restore discarded), or one of this worker's connections to
  /// a ps was lost since f was opened, unless it may close (closing_). Looks again only when a
  /// loss has happened since it last looked, so a wait without failures pays one comparison
  /// per event.
  bool lost_connection(request_parts& f) {
    if (f.lost || table_.losses() == f.losses_seen) return f.lost;
    f.losses_seen = table_.losses();
    f.lost = first_closed() != conns_.size() ||
             std::any_of(f.parts.begin(), f.parts.end(), [this](const request_parts::part& p) {
               const auto* s = p.collected ? nullptr : table_.find(p.ps, p.id);
               return s && s->state == slot_state::failed && (s->code == errc::peer_lost || s->code == errc::aborted);
             });
    return f.lost;
  }

  /// @returns the first ps task whose connection was made and is closed now, unless it may
  /// close (a finish or a shutdown sent on it); size() if none.
  std::size_t first_closed() const {
    std::size_t i = 0;
    while (i < conns_.size() && !(conns_[i] && !conns_[i]->is_open() && !closing_[i])) ++i;
    return i;
  }

  /// @p f lost a connection (collect()): settles every part whose answer or failure is in, keeps
  /// the loss as its error if none came before, closes the connections of the other parts and
  /// abandons them, so that none of their replies lands later (their requests fail there;
  /// recovery reconnects).
  void give_up(request_parts& f) {
    for (auto& p : f.parts)
      if (!p.collected && table_.done(p.ps, p.id)) f.settle(p, std::move(*table_.take(p.ps, p.id)));
    if (!f.first_error) {
      const auto down = first_closed();
      f.first_error.emplace(errc::peer_lost,
                            down < conns_.size() ? lost(down) : me_ + ": a connection to a ps was lost");
    }
    for (const auto& p : f.parts)
      if (!p.collected && conns_[p.ps]) conns_[p.ps]->close();
    f.abandon(table_);
  }

  /// Runs the I/O on the calling thread until done() holds. @returns false once @p deadline
  /// has passed without it.
  template <class Done>
  bool run_until(Done done, std::chrono::steady_clock::time_point deadline) {
    while (!done()) {
      if (ioc_.stopped()) ioc_.restart();
      if (ioc_.run_one_until(deadline) == 0 && std::chrono::steady_clock::now() >= deadline) return false;
    }
    return true;
  }

  /// Starts writing every request queued so far without waiting for anything.
  void flush() { ioc_.poll(); }

  // ---- The transport: every call on a connection, and async_connect, is below. ----

  /// One attempt to connect to ps task @p ps (bounded by the handshake timeout); on success
  /// the connection replaces the old one and its receive loop starts. @returns the failure.
  error_code connect(std::size_t ps) {
    struct attempt {
      bool done = false;
      error_code ec;
      connection conn;
    } a;
    auto on_done = [&a](error_code ec, connection c) { a = {true, ec, std::move(c)}; };
    const auto& address = spec_->address("ps", int(ps));
    try {
      transport_.async_connect(ioc_.get_executor(), address, connection_options(), on_done);
    } catch (const dsgd::error& e) {  // an address that can never connect: named with its ps task
      throw error(e.code(), "ps:" + std::to_string(ps) + ": " + e.what());
    }
    run_until([&a] { return a.done; }, std::chrono::steady_clock::time_point::max());
    if (!a.ec) {
      conns_[ps] = std::move(a.conn);
      closing_[ps] = false;
      receive(ps);
    }
    return a.ec;
  }

  /// @returns whether the connection to ps task @p ps is open.
  bool is_open(std::size_t ps) const { return conns_[ps] && conns_[ps]->is_open(); }

  /// @returns the ps tasks without an open connection.
  std::vector<std::size_t> disconnected() const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < conns_.size(); ++i)
      if (!is_open(i)) out.push_back(i);
    return out;
  }

  /// Closes every connection: after a timeout no late reply may be written (its buffers may be
  /// gone); their pending requests fail in the receive loop.
  void close_all() {
    for (auto& c : conns_)
      if (c) c->close();
  }

 private:
  // The connection settings as given, with this task's identity; only ps tasks are accepted
  // as peers, and a reply's payload may take as long as its request (requests.request_timeout).
  using connection = std::shared_ptr<typename T::connection_type>;

  typename T::options_type connection_options() const {
    typename T::options_type t = opts_->connection;
    t.identity = me_;
    t.accept_peer = [](std::string_view who) { return who.starts_with("ps:"); };
    t.frame_timeout = opts_->requests.request_timeout;
    return t;
  }

  // The message of a request that failed because its connection to @p ps is gone.
  std::string lost(std::size_t ps) const {
    auto c = conns_[ps];
    return me_ + ": connection to ps:" + std::to_string(ps) + " lost" +
           (c ? " (" + c->close_reason() + ")" : std::string());
  }

  // Queues a request's frame on @p ps's connection. A send the transport refuses (a cap, a
  // full queue) fails its request at once; a broken connection also fails every pending
  // request through the receive loop.
  void send(std::size_t ps, const transport::frame_header& h, const std::array<boost::asio::const_buffer, 2>& payload) {
    conns_[ps]->async_send(h, payload, [this, ps, id = h.request_id](error_code ec) {
      if (!ec) return;
      table_.fail(ps, id, ec, me_ + ": sending to ps:" + std::to_string(ps) + " failed: " + ec.message());
    });
  }

  // The receive loop of @p ps's connection: each reply completes its request's slot; a reply
  // to nothing this client awaits is a bad frame (which closes the connection).
  void receive(std::size_t ps) {
    auto conn = conns_[ps];
    conn->async_receive(
        [this, ps](const transport::frame_header& h, error_code& ec) -> boost::asio::mutable_buffer {
          auto* slot = table_.pending(ps, h.request_id);
          if (!slot) {
            ec = make_error_code(errc::bad_frame);  // a reply to nothing we asked
            return {};
          }
          auto type = static_cast<protocol::message>(h.type);
          // A pull's values (16-bit ones widened at the last chunk), or the push counts answering
          // register_worker (none for other oks).
          if (type == protocol::message::pull_reply || type == protocol::message::compressed_pull_reply)
            return pull_destination(*slot, type, h, ec);
          // A table_push's answer carries its dropped keys (a u64) the same way.
          if (type == protocol::message::reply_ok ||
              (h.payload_length != 0 &&
               (type == protocol::message::push_applied || type == protocol::message::push_accumulated ||
                type == protocol::message::push_dropped)))
            return transport::chunk_destination(slot->reply_into, h, ec);
          if (type == protocol::message::reply_error) {
            slot->control.resize(h.payload_length);
            return boost::asio::buffer(slot->control);
          }
          if (h.payload_length != 0) ec = make_error_code(errc::bad_frame);
          return {};
        },
        [this, ps, conn](error_code ec, transport::frame_header h) {
          if (ec) {
            table_.fail_connection(ps, errc::peer_lost, lost(ps));
            return;
          }
          if (h.last_chunk()) {
            auto type = static_cast<protocol::message>(h.type);
            if (type != protocol::message::reply_error) {
              if (auto* slot = table_.pending(ps, h.request_id);
                  slot && type == protocol::message::compressed_pull_reply)
                widen_pull_reply(*slot);
              table_.answer(ps, h.request_id, {type, h.step});
            } else if (auto* slot = table_.pending(ps, h.request_id)) {
              auto e = protocol::decode_control<protocol::error_reply>(
                  std::string_view(reinterpret_cast<const char*>(slot->control.data()), slot->control.size()),
                  "reply_error");
              table_.fail(ps, h.request_id, error_code(e.code, dsgd::category()),
                          "ps:" + std::to_string(ps) + ": " + e.message);
            }
          }
          receive(ps);
        });
  }

  const cluster::cluster_spec* spec_;
  std::string me_;
  const client_options* opts_;
  T transport_;
  boost::asio::io_context ioc_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::vector<connection> conns_;
  // Per connection: a finish or a shutdown went on it, so the ps may close it once it answered
  // (the job is ending) and its close is no loss to give up on (collect()).
  std::vector<bool> closing_;
  request_table table_;
  std::uint64_t next_id_ = 0;
  std::chrono::steady_clock::time_point bound_ = std::chrono::steady_clock::time_point::max();
};

}  // namespace dsgd::client::detail
