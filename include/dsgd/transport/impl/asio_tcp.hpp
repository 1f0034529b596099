// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Out-of-line members of tcp_connection (declared in asio_tcp.hpp): construction, socket
/// options, close and deadlines, and the send path. The connect and handshake are in
/// detail/handshake_op.hpp, the receive path in tcp_receive.hpp.
// IWYU pragma: private, include <dsgd/transport/asio_tcp.hpp>
#pragma once

#include <dsgd/transport/asio_tcp.hpp>
#include <dsgd/transport/detail/socket_io.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/verify_context.hpp>
#include <boost/asio/write.hpp>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <span>
#include <string>

#if defined(__linux__)
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#endif

namespace dsgd::transport {

inline tcp_connection::tcp_connection(private_tag, socket_type socket, tcp_options options)
    : socket_(std::move(socket)),
      options_(std::move(options)),
      write_timer_(socket_.get_executor()),
      read_timer_(socket_.get_executor()) {
  if (options_.tls) {
    tls_context_ = shared_tls_context(*options_.tls);
    tls_.emplace(socket_, *tls_context_);
    // Keeps the first certificate the peer's chain fails on, to name it in the log.
    tls_->set_verify_callback([this](bool preverified, boost::asio::ssl::verify_context& vc) {
      if (!preverified && tls_verify_failure_.empty()) {
        X509_STORE_CTX* sc = vc.native_handle();
        tls_verify_failure_ = std::string(X509_verify_cert_error_string(X509_STORE_CTX_get_error(sc))) +
                              " (certificate at depth " + std::to_string(X509_STORE_CTX_get_error_depth(sc)) +
                              ", subject " + detail::subject_line(X509_STORE_CTX_get_current_cert(sc)) + ")";
      }
      return preverified;
    });
  }
  if (socket_.is_open()) {
    error_code ec;
    remote_ = socket_.remote_endpoint(ec);
    apply_socket_options();
  }
}

inline tcp_connection::endpoint_type tcp_connection::local_endpoint() const {
  error_code ec;
  auto ep = socket_.local_endpoint(ec);
  return ec ? endpoint_type{} : ep;
}

inline void tcp_connection::apply_socket_options() {
  error_code ignored;  // a socket option the system refuses costs speed, not correctness
  socket_.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
  if (options_.socket_buffer_bytes > 0) {
    socket_.set_option(boost::asio::socket_base::send_buffer_size(options_.socket_buffer_bytes), ignored);
    socket_.set_option(boost::asio::socket_base::receive_buffer_size(options_.socket_buffer_bytes), ignored);
  }
  const auto dead = static_cast<int>(options_.dead_peer_timeout.count());
  if (dead > 0) {
    socket_.set_option(boost::asio::socket_base::keep_alive(true), ignored);
#if defined(__linux__)
    // Idle for half the time, then three probes a sixth of it apart: a silent peer is dropped
    // after about the whole of it; unacknowledged data gets no longer than that either.
    const int idle = std::max(1, dead / 2), interval = std::max(1, dead / 6), probes = 3;
    const unsigned user_timeout_ms = static_cast<unsigned>(dead) * 1000u;
    const int fd = socket_.native_handle();
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
    ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
#endif
  }
}

inline void tcp_connection::log(std::string_view what) const {
  std::string line = "dsgd transport: peer " + detail::to_string(remote_);
  if (!peer_identity_.empty()) line += " (" + peer_identity_ + ")";
  line += ": ";
  line += what;
  if (options_.log) options_.log(line);
  else std::fprintf(stderr, "%s\n", line.c_str());
}

inline void tcp_connection::close_with(error_code ec, std::string reason, bool log_it) {
  if (closed_) return;
  closed_ = true;
  close_ec_ = ec;
  close_reason_ = std::move(reason);
  if (log_it) log(close_reason_);
  error_code ignored;
  socket_.shutdown(socket_type::shutdown_both, ignored);
  socket_.close(ignored);
  disarm(write_timer_, write_seq_);
  disarm(read_timer_, read_seq_);
}

inline error_code tcp_connection::io_error(error_code ec) const {
  // An operation aborted because we closed the socket reports why we closed it.
  return closed_ && close_ec_ ? close_ec_ : ec;
}

inline void tcp_connection::arm(boost::asio::steady_timer& timer, std::uint64_t& seq, std::chrono::milliseconds after,
                                std::string what) {
  const auto my_seq = ++seq;
  if (after.count() <= 0) return;
  timer.expires_after(after);
  // The sequence number tells a stale expiry (its operation already finished) from a live one.
  timer.async_wait([self = shared_from_this(), &seq, my_seq, what = std::move(what)](error_code ec) {
    if (ec || seq != my_seq) return;
    self->close_with(errc::timed_out, what);
  });
}

inline void tcp_connection::disarm(boost::asio::steady_timer& timer, std::uint64_t& seq) {
  ++seq;
  timer.cancel();
}

// --- sending ---------------------------------------------------------------------------------

inline void tcp_connection::enqueue(frame_header header, std::vector<boost::asio::const_buffer> payload,
                                    done_type done) {
  std::uint64_t total = 0;
  for (const auto& b : payload) total += b.size();
  std::string why;
  error_code ec;
  if (closed_ || !authenticated_) {
    ec = closed_ ? io_error(boost::asio::error::not_connected) : make_error_code(errc::handshake_failed);
  } else if (detail::send_queue_full(queue_.size(), queued_bytes_, total, options_)) {
    ec = boost::asio::error::no_buffer_space;  // backpressure: the caller retries or waits
  } else {
    // A message the peer would reject is refused here, with the same reason.
    ec = detail::prepare_first_frame(header, total, options_, why);
    if (!ec && checksums_payloads()) header.flags |= frame_flags::payload_crc;
  }
  if (ec) {
    if (!why.empty()) log("send refused: " + why);
    done->complete(false, ec);
    return;
  }
  queued_bytes_ += total;
  queue_.push_back(send_entry{header, std::move(payload), total, 0, std::move(done)});
  if (writing_) return;
  // The write starts on the executor's next turn, not here: messages queued meanwhile (a push of
  // several variables, replies to frames read together) then go out in the same system call.
  writing_ = true;
  boost::asio::post(get_executor(), [guard = write_guard(shared_from_this())]() mutable {
    auto self = std::move(guard.self);
    self->write_next();
  });
}

// Builds one gather write of as many queued frames as fit: at most max_frames_per_write, and
// payload bytes on the socket at most one chunk beyond the first frame's (a frame whose payload
// went through the shared ring adds its header only).
inline void tcp_connection::write_next() {
  if (queue_.empty() || closed_) {
    writing_ = false;
    return;
  }
  writing_ = true;
  tx_gather_.clear();
  tx_frames_.clear();
  std::uint64_t inline_bytes = 0;
  for (std::size_t i = 0; i < queue_.size() && tx_frames_.size() < tx_headers_.size(); ++i) {
    const send_entry& e = queue_[i];
    for (std::uint64_t at = e.sent; tx_frames_.size() < tx_headers_.size();) {
      frame_header h = e.header;
      h.chunk_offset = at;
      h.payload_length =
          (h.flags & frame_flags::control) != 0 ? e.total : std::min<std::uint64_t>(e.total - at, options_.chunk_bytes);
      // The slice [at, at + length) of the caller's buffers, as views: no tensor byte is copied.
      const std::size_t first_slice = tx_gather_.size() + 1;
      tx_gather_.emplace_back();  // the header, filled in below
      std::uint64_t skip = at, want = h.payload_length;
      std::uint32_t crc = 0;
      for (const auto& b : e.payload) {
        if (want == 0) break;
        if (skip >= b.size()) {
          skip -= b.size();
          continue;
        }
        const auto n = std::min<std::uint64_t>(b.size() - skip, want);
        auto slice = boost::asio::buffer(static_cast<const char*>(b.data()) + skip, static_cast<std::size_t>(n));
        if ((h.flags & frame_flags::payload_crc) != 0)
          crc = crc32c_extend(crc, {static_cast<const std::byte*>(slice.data()), slice.size()});
        tx_gather_.push_back(slice);
        want -= n;
        skip = 0;
      }
      h.payload_crc = crc;
      const auto slices = std::span(tx_gather_).subspan(first_slice);
      // To a peer on this host the payload goes through the shared ring when it has room, and
      // only the header through the socket.
      if (tx_ring_ && (h.flags & frame_flags::control) == 0 &&
          tx_ring_->try_write(slices, static_cast<std::size_t>(h.payload_length))) {
        h.flags |= frame_flags::shared_memory;
        tx_gather_.resize(first_slice);
      } else if (!tx_frames_.empty() && inline_bytes + h.payload_length > options_.chunk_bytes) {
        tx_gather_.resize(first_slice - 1);  // next write
        i = queue_.size();
        break;
      } else {
        inline_bytes += h.payload_length;
      }
      auto& bytes = tx_headers_[tx_frames_.size()];
      bytes = encode(h);
      tx_gather_[first_slice - 1] = boost::asio::buffer(bytes);
      tx_frames_.push_back(h.payload_length);
      at += h.payload_length;
      if (at >= e.total) break;
    }
  }
  arm(write_timer_, write_seq_, options_.write_timeout,
      "write stalled for " + std::to_string(options_.write_timeout.count()) + " ms (peer not reading)");
  with_stream([&](auto& s) {
    boost::asio::async_write(s, tx_gather_, detail::transfer_whole{},
                             [guard = write_guard(shared_from_this())](error_code ec, std::size_t) mutable {
                               auto self = std::move(guard.self);
                               self->on_written(ec);
                             });
  });
}

inline void tcp_connection::on_written(error_code ec) {
  disarm(write_timer_, write_seq_);
  if (ec || closed_) {
    const auto why = io_error(ec ? ec : boost::asio::error::operation_aborted);
    if (!closed_) close_with(why, "write failed: " + why.message());
    auto failed = std::move(queue_);
    queue_.clear();
    queued_bytes_ = 0;
    writing_ = false;
    for (auto& entry : failed) entry.done->complete(true, why);
    return;
  }
  // The frames written belong to the queue's first messages, in order.
  std::vector<done_type> finished;
  for (const auto length : tx_frames_) {
    send_entry& e = queue_.front();
    e.sent += length;
    if (e.sent >= e.total) {
      finished.push_back(std::move(e.done));
      queued_bytes_ -= e.total;
      queue_.pop_front();
    }
  }
  write_next();
  for (auto& done : finished) done->complete(true, {});
}

}  // namespace dsgd::transport
