// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The shared state of one in-process connection (transport::inproc): both ends' send queues,
/// pending receives and close state under one mutex, and the io_context service that drops an
/// end's pending completions when its context is destroyed.
// IWYU pragma: private, include <dsgd/transport/inproc.hpp>
#pragma once

#include <utility>  // Boost 1.74's Asio headers use std::exchange without including <utility>

#include <dsgd/error.hpp>
#include <dsgd/transport/detail/completion.hpp>
#include <dsgd/transport/detail/outgoing.hpp>
#include <dsgd/transport/frame.hpp>
#include <dsgd/transport/tcp_options.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution/context_as.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dsgd::transport::detail {

using send_done = std::unique_ptr<erased_completion<error_code>>;
using receive_done = std::unique_ptr<erased_completion<error_code, frame_header>>;

// A message queued by one end: views of the sender's buffers, read by the receiving end.
struct inproc_send {
  frame_header header;
  std::vector<boost::asio::const_buffer> payload;
  std::uint64_t total = 0, sent = 0;
  send_done done;
  std::shared_ptr<void> keep;  // the sending connection, alive while its send is pending
};

struct inproc_receive {
  std::unique_ptr<erased_sink> sink;
  receive_done done;
  std::shared_ptr<void> keep;  // the receiving connection, alive while its receive is pending
};

// One end. executor, options and peer_identity never change after the link is made, so they
// are read without the lock; everything else is guarded by inproc_link::mutex_.
struct inproc_side {
  boost::asio::any_io_executor executor;
  tcp_options options;
  std::string peer_identity;
  bool closed = false;
  error_code close_ec;
  std::string close_reason;
  std::deque<inproc_send> outbound;  // sent by this end, not yet received whole by the other
  std::uint64_t queued_bytes = 0;
  std::optional<inproc_receive> receive;  // waiting for a frame
  bool receiving = false;                 // a receive is waiting or being delivered
  bool wake_posted = false;               // a deliver() is queued on executor
};

inline boost::asio::execution_context& context_of(const boost::asio::any_io_executor& ex) {
  return boost::asio::query(ex, boost::asio::execution::context_as_t<boost::asio::execution_context&>{});
}

// Completions collected under the lock and delivered after it is released.
struct inproc_calls {
  std::vector<std::pair<send_done, error_code>> sends;
  std::vector<std::pair<receive_done, error_code>> receives;
  std::vector<std::shared_ptr<void>> keeps;  // released last: may destroy a connection
  void run(bool continuation) {
    for (auto& [d, ec] : sends) d->complete(continuation, ec);
    for (auto& [d, ec] : receives) d->complete(continuation, ec, frame_header{});
    sends.clear();
    receives.clear();
    keeps.clear();
  }
};

class inproc_link : public std::enable_shared_from_this<inproc_link> {
 public:
  // Side 0 connected out, side 1 was accepted.
  inproc_link(std::array<inproc_side, 2>&& sides) : sides_(std::move(sides)) {}

  const inproc_side& side(int s) const noexcept { return sides_[s]; }

  bool is_open(int s) const {
    std::lock_guard lock(mutex_);
    return !sides_[s].closed;
  }
  std::string close_reason(int s) const {
    std::lock_guard lock(mutex_);
    return sides_[s].close_reason;
  }
  std::size_t queued_sends(int s) const {
    std::lock_guard lock(mutex_);
    return sides_[s].outbound.size();
  }

  // Same checks and header fields as tcp_connection::enqueue.
  void send(int s, frame_header header, std::vector<boost::asio::const_buffer> payload, send_done done,
            std::shared_ptr<void> keep) {
    std::uint64_t total = 0;
    for (const auto& b : payload) total += b.size();
    std::string why;
    error_code ec;
    {
      std::lock_guard lock(mutex_);
      auto& me = sides_[s];
      if (me.closed) {
        ec = me.close_ec;
      } else if (send_queue_full(me.outbound.size(), me.queued_bytes, total, me.options)) {
        ec = boost::asio::error::no_buffer_space;
      } else {
        // Bytes that never leave this process gain nothing from a CRC; no ring either.
        ec = prepare_first_frame(header, total, me.options, why);
      }
      if (!ec) {
        me.queued_bytes += total;
        me.outbound.push_back(inproc_send{header, std::move(payload), total, 0, std::move(done), std::move(keep)});
        schedule_locked(1 - s);
        return;
      }
    }
    if (!why.empty()) log(s, "send refused: " + why);
    done->complete(false, ec);
  }

  void receive(int r, inproc_receive op) {
    error_code ec;
    {
      std::lock_guard lock(mutex_);
      auto& me = sides_[r];
      if (me.receiving) {
        ec = boost::asio::error::already_started;
      } else if (me.closed) {
        ec = me.close_ec;
      } else {
        me.receiving = true;
        me.receive = std::move(op);
        schedule_locked(r);
        return;
      }
    }
    op.done->complete(false, ec, frame_header{});
  }

  // Closes end @p s with @p ec (the error its pending operations get) and @p reason; the other
  // end is closed too, its pending operations ending with eof.
  void close(int s, error_code ec, std::string reason, bool log_it) {
    inproc_calls calls;
    bool closed_now = false;
    {
      std::lock_guard lock(mutex_);
      closed_now = close_locked(s, ec, reason, calls);
      if (closed_now) close_locked(1 - s, boost::asio::error::eof, "peer closed the connection", calls);
    }
    if (closed_now && log_it) log(s, reason);
    calls.run(false);
  }

  // The io_context of end @p s is being destroyed: its pending completions are destroyed, never
  // called (Asio's rule); the other end sees the connection close, unless it runs on the same
  // context, which drops its completions likewise.
  void abandon(int s, boost::asio::execution_context& dying) {
    inproc_calls calls, dropped;
    {
      std::lock_guard lock(mutex_);
      const bool both = &context_of(sides_[1 - s].executor) == &dying;
      if (close_locked(s, boost::asio::error::operation_aborted, "its io_context was destroyed", dropped))
        close_locked(1 - s, boost::asio::error::eof, "peer closed the connection", both ? dropped : calls);
    }
    calls.run(false);
    dropped.sends.clear();
    dropped.receives.clear();
    dropped.keeps.clear();
  }

 private:
  bool close_locked(int s, error_code ec, const std::string& reason, inproc_calls& calls) {
    auto& me = sides_[s];
    if (me.closed) return false;
    me.closed = true;
    me.close_ec = ec;
    me.close_reason = reason;
    if (me.receive) {
      calls.receives.emplace_back(std::move(me.receive->done), ec);
      calls.keeps.push_back(std::move(me.receive->keep));
      me.receive.reset();
      me.receiving = false;
    }
    for (auto& e : me.outbound) {
      calls.sends.emplace_back(std::move(e.done), ec);
      calls.keeps.push_back(std::move(e.keep));
    }
    me.outbound.clear();
    me.queued_bytes = 0;
    return true;
  }

  // Queues a deliver() on end @p r's executor when it waits and a frame is there for it.
  void schedule_locked(int r) {
    auto& me = sides_[r];
    if (!me.receive || me.wake_posted || sides_[1 - r].outbound.empty()) return;
    me.wake_posted = true;
    boost::asio::post(me.executor, [self = shared_from_this(), r] { self->deliver(r); });
  }

  // On end @p r's executor: hands the next frame to its sink and copies the payload once,
  // straight from the sender's buffers to where the sink said.
  void deliver(int r) {
    auto& me = sides_[r];
    auto& peer = sides_[1 - r];
    frame_header h;
    inproc_receive op;
    {
      std::lock_guard lock(mutex_);
      me.wake_posted = false;
      if (!me.receive || peer.outbound.empty()) return;
      const auto& e = peer.outbound.front();
      h = e.header;
      h.chunk_offset = e.sent;
      h.payload_length = (h.flags & frame_flags::control) != 0
                             ? e.total
                             : std::min<std::uint64_t>(e.total - e.sent, peer.options.chunk_bytes);
      op = std::move(*me.receive);
      me.receive.reset();
    }
    std::string reason;
    if (auto e = check_frame_header(h, me.options.caps, reason))
      return fail(r, e, "malformed frame header: " + reason, frame_header{}, std::move(op));
    error_code sink_ec;
    const auto dest = op.sink->destination(h, sink_ec);
    if (sink_ec)
      return fail(r, sink_ec,
                  "receiver rejected frame (type " + std::to_string(h.type) + ", variable " +
                      std::to_string(h.variable) + "): " + sink_ec.message(),
                  h, std::move(op));
    if (dest.size() != h.payload_length)
      return fail(r, make_error_code(errc::invalid_argument),
                  "receive sink supplied " + std::to_string(dest.size()) + " bytes for a payload of " +
                      std::to_string(h.payload_length),
                  h, std::move(op));
    send_done finished;
    std::shared_ptr<void> sender;
    error_code result;
    {
      // The copy runs under the lock so that a sender closing meanwhile cannot complete (and
      // let its caller free) the buffers being read.
      std::lock_guard lock(mutex_);
      if (me.closed) {
        result = me.close_ec;  // closed by the sink, or the peer closed after the header
      } else {
        auto& e = peer.outbound.front();
        copy(e.payload, e.sent, dest);
        e.sent += h.payload_length;
        if (e.sent >= e.total) {
          finished = std::move(e.done);
          sender = std::move(e.keep);
          peer.queued_bytes -= e.total;
          peer.outbound.pop_front();
        }
      }
      me.receiving = false;
    }
    if (finished) finished->complete(true, {});
    op.sink.reset();
    op.done->complete(true, result, h);
  }

  void fail(int r, error_code ec, std::string reason, const frame_header& h, inproc_receive op) {
    close(r, ec, std::move(reason), true);
    {
      std::lock_guard lock(mutex_);
      sides_[r].receiving = false;
    }
    op.sink.reset();
    op.done->complete(true, ec, h);
  }

  // Copies bytes [at, at + dest.size()) of the gather list @p src into @p dest.
  static void copy(const std::vector<boost::asio::const_buffer>& src, std::uint64_t at,
                   boost::asio::mutable_buffer dest) {
    auto* out = static_cast<char*>(dest.data());
    std::size_t want = dest.size();
    for (const auto& b : src) {
      if (want == 0) break;
      if (at >= b.size()) {
        at -= b.size();
        continue;
      }
      const auto n = std::min<std::size_t>(b.size() - static_cast<std::size_t>(at), want);
      std::memcpy(out, static_cast<const char*>(b.data()) + at, n);
      out += n;
      want -= n;
      at = 0;
    }
  }

  void log(int s, std::string_view what) const {
    std::string line = "dsgd transport: inproc peer " + sides_[s].peer_identity + ": ";
    line += what;
    if (sides_[s].options.log) sides_[s].options.log(line);
    else std::fprintf(stderr, "%s\n", line.c_str());
  }

  mutable std::mutex mutex_;
  std::array<inproc_side, 2> sides_;
};

// Registered with every execution context an inproc end runs on: when the context is destroyed,
// its ends' pending completions go with it, as an Asio I/O object's pending operations do.
class inproc_service final : public boost::asio::execution_context::service {
 public:
  using key_type = inproc_service;
  static inline boost::asio::execution_context::id id;

  explicit inproc_service(boost::asio::execution_context& ctx) : boost::asio::execution_context::service(ctx) {}

  // Registers end @p side of @p link, which runs on @p ex's context.
  static void enroll(const std::shared_ptr<inproc_link>& link, int side) {
    auto& ctx = context_of(link->side(side).executor);
    auto& self = boost::asio::use_service<inproc_service>(ctx);
    std::lock_guard lock(self.mutex_);
    std::erase_if(self.ends_, [](const auto& e) { return e.first.expired(); });
    self.ends_.emplace_back(link, side);
  }

  void shutdown() override {
    std::vector<std::pair<std::weak_ptr<inproc_link>, int>> ends;
    {
      std::lock_guard lock(mutex_);
      ends.swap(ends_);
    }
    for (auto& [weak, side] : ends)
      if (auto link = weak.lock()) link->abandon(side, context());
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<std::weak_ptr<inproc_link>, int>> ends_;
};

}  // namespace dsgd::transport::detail
