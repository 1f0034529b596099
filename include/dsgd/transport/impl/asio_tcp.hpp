// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Out-of-line members of tcp_connection and tcp_listener (declared in asio_tcp.hpp).
// IWYU pragma: private, include <dsgd/transport/asio_tcp.hpp>
#pragma once

#include <dsgd/transport/asio_tcp.hpp>

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

namespace detail {

// The completion condition of every frame read and write. Asio's transfer_all() moves at most
// 64 KiB per system call, so a 1 MiB chunk took sixteen sends and, on the receiving side,
// sixteen reads with a wait in epoll between them; this asks for all that is left each time,
// and the socket moves as much as its buffers hold (docs/transport.md, "Chunking").
struct transfer_whole {
  std::size_t operator()(const error_code& ec, std::size_t) const noexcept {
    return ec ? 0 : std::numeric_limits<std::size_t>::max();
  }
};

inline std::string to_string(const boost::asio::ip::tcp::endpoint& ep) {
  error_code ec;
  auto address = ep.address().to_string(ec);
  if (ep.address().is_v6()) address = "[" + address + "]";
  return address + ":" + std::to_string(ep.port());
}

}  // namespace detail

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
    socket_.set_option(boost::asio::socket_base::send_buffer_size(options_.socket_buffer_bytes),
                       ignored);
    socket_.set_option(
        boost::asio::socket_base::receive_buffer_size(options_.socket_buffer_bytes), ignored);
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
  if (options_.log)
    options_.log(line);
  else
    std::fprintf(stderr, "%s\n", line.c_str());
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

inline void tcp_connection::arm(boost::asio::steady_timer& timer, std::uint64_t& seq,
                                std::chrono::milliseconds after, std::string what) {
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

// --- connect and handshake -------------------------------------------------------------------

inline void tcp_connection::start_connect(const endpoint_type& to, done_type done) {
  remote_ = to;
  arm(read_timer_, read_seq_, options_.handshake_timeout,
      "connect timed out after " + std::to_string(options_.handshake_timeout.count()) + " ms");
  socket_.async_connect(to, [self = shared_from_this(), done = std::move(done)](
                                error_code ec) mutable {
    if (ec) {
      const auto why = self->io_error(ec);
      self->close_with(why, "connect failed: " + why.message(), false);
      done->complete(true, why);
      return;
    }
    self->apply_socket_options();
    self->start_handshake(handshake::role::initiator, std::move(done));  // re-arms the deadline
  });
}

inline void tcp_connection::start_handshake(handshake::role side, done_type done) {
  if (closed_ || authenticated_ || handshake_) {
    const auto ec = closed_ ? io_error(boost::asio::error::not_connected)
                            : make_error_code(errc::invalid_argument);
    done->complete(false, ec);
    return;
  }
  try {
    handshake_.emplace(side, options_.identity, options_.token);
  } catch (const error& e) {
    finish_handshake(e.code(), e.what(), std::move(done));
    return;
  }
  arm(read_timer_, read_seq_, options_.handshake_timeout,
      "handshake timed out after " + std::to_string(options_.handshake_timeout.count()) + " ms");
  if (!tls_) return handshake_step(0, {}, std::move(done));
  tls_->async_handshake(side == handshake::role::initiator ? boost::asio::ssl::stream_base::client
                                                           : boost::asio::ssl::stream_base::server,
                        [self = shared_from_this(), done = std::move(done)](error_code ec) mutable {
                          self->on_tls_handshake(ec, std::move(done));
                        });
}

inline void tcp_connection::on_tls_handshake(error_code ec, done_type done) {
  if (!ec) return handshake_step(0, {}, std::move(done));  // the token handshake, inside TLS
  if (closed_) {
    const auto why = io_error(ec);
    return finish_handshake(why, "TLS handshake aborted: " + why.message(), std::move(done));
  }
  finish_handshake(errc::handshake_failed, "TLS handshake failed: " + tls_failure(ec), std::move(done));
}

inline std::string tcp_connection::tls_failure(error_code ec) {
  std::string what;
  if (ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset ||
      ec == boost::asio::ssl::error::stream_truncated)
    what = "the peer closed the connection (it does not speak TLS, or rejected our certificate)";
  else
    what = ec.message();  // OpenSSL's reason: "certificate verify failed", "tlsv1 alert unknown ca"
  if (!tls_verify_failure_.empty()) {
    what += ": " + tls_verify_failure_;
  } else if (tls_) {
    const long result = SSL_get_verify_result(tls_->native_handle());
    if (result != X509_V_OK) what += std::string(": ") + X509_verify_cert_error_string(result);
  }
  return what;
}

inline bool tcp_connection::tls_names_match(std::string& reason) {
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
  detail::x509_ptr peer(SSL_get1_peer_certificate(tls_->native_handle()));
#else
  detail::x509_ptr peer(SSL_get_peer_certificate(tls_->native_handle()));
#endif
  const auto names = detail::certificate_names(peer.get());
  const auto& identity = handshake_->peer_identity();
  if (std::find(names.begin(), names.end(), identity) != names.end()) return true;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  reason = "the peer proved identity '" + identity + "' but its TLS certificate names only [" + list +
           "] (tls_options::peer_names is task_identity)";
  return false;
}

// Steps: 0 send hello, 1 read peer hello, 2 check it and send proof, 3 read peer proof,
// 4 check it and send our shared-memory offer, 5 read the peer's, 6 map its ring (when it
// offered one) and answer, 7 read its answer to ours, 8 done. Both sides write before they
// read, and every message fits any socket buffer, so the symmetric exchange cannot deadlock.
// A ring is made only once the peer has proved the token: an unauthenticated peer can make
// this side reserve no memory.
inline void tcp_connection::handshake_step(int step, error_code ec, done_type done) {
  if (ec) {
    if (!closed_ && tls_ && ec.category() == boost::asio::error::get_ssl_category())
      return finish_handshake(errc::handshake_failed,
                              "TLS error during the token handshake: " + tls_failure(ec),
                              std::move(done));
    if (ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset ||
        ec == boost::asio::ssl::error::stream_truncated)
      return finish_handshake(errc::handshake_failed,
                              "peer closed the connection during the handshake (it rejected "
                              "our token, version or identity" +
                                  std::string(tls_ ? ", or our TLS certificate" : "") + "?)",
                              std::move(done));
    const auto why = io_error(ec);
    return finish_handshake(why, "handshake I/O error: " + why.message(), std::move(done));
  }
  // The completion travels inside the pending operation (see receive_op for why).
  auto next = [&] {
    return [self = shared_from_this(), step, done = std::move(done)](error_code e,
                                                                     std::size_t) mutable {
      self->handshake_step(step + 1, e, std::move(done));
    };
  };
  auto write = [&](auto const& bytes) {
    with_stream([&](auto& s) { boost::asio::async_write(s, boost::asio::buffer(bytes), next()); });
  };
  auto read = [&](auto& bytes) {
    with_stream([&](auto& s) { boost::asio::async_read(s, boost::asio::buffer(bytes), next()); });
  };
  std::string reason;
  switch (step) {
    case 0: return write(handshake_->hello());
    case 1: return read(peer_hello_);
    case 2:
      if (auto e = handshake_->receive_hello(peer_hello_, reason))
        return finish_handshake(e, reason, std::move(done));
      if (options_.accept_peer && !options_.accept_peer(handshake_->peer_identity()))
        return finish_handshake(errc::handshake_failed,
                                "unknown peer identity '" + handshake_->peer_identity() + "'",
                                std::move(done));
      if (tls_ && options_.tls->peer_names == peer_name_check::task_identity &&
          !tls_names_match(reason))
        return finish_handshake(errc::handshake_failed, reason, std::move(done));
      own_proof_ = handshake_->proof();
      return write(own_proof_);
    case 3: return read(peer_proof_);
    case 4: {
      if (auto e = handshake_->verify_proof(peer_proof_, reason))
        return finish_handshake(e, reason, std::move(done));
      peer_identity_ = handshake_->peer_identity();
      // A ring the system cannot make (no /dev/shm, full) only means payloads go inline.
      std::string ignored;
      if (shared_memory_eligible()) tx_ring_ = detail::shared_ring::create(options_.shared_memory.ring_bytes, ignored);
      own_offer_ = tx_ring_ ? tx_ring_->offer().encode() : detail::ring_offer{}.encode();
      return write(own_offer_);
    }
    case 5: return read(peer_offer_);
    case 6: {
      auto offer = detail::ring_offer::decode(peer_offer_, reason);
      if (!offer) return finish_handshake(errc::handshake_failed, reason, std::move(done));
      // Mapped only when this side would have offered too (same host, allowed, no TLS), and no
      // larger than the largest payload this side accepts.
      std::string ignored;
      if (offer->bytes > 0 && shared_memory_eligible())
        rx_ring_ = detail::shared_ring::open(*offer, options_.caps.max_payload_bytes, ignored);
      own_answer_ = detail::ring_answer::encode(rx_ring_.has_value());
      return write(own_answer_);
    }
    case 7: return read(peer_answer_);
    default: {
      auto mapped = detail::ring_answer::decode(peer_answer_, reason);
      if (!mapped) return finish_handshake(errc::handshake_failed, reason, std::move(done));
      if (tx_ring_) {
        tx_ring_->unlink();  // mapped by the peer, or declined: either way nobody opens it again
        if (!*mapped) tx_ring_.reset();
      }
      authenticated_ = true;
      return finish_handshake({}, {}, std::move(done));
    }
  }
}

inline bool tcp_connection::shared_memory_eligible() const {
  if (!options_.shared_memory.enabled || options_.shared_memory.ring_bytes == 0 || tls_) return false;
  const auto local = local_endpoint().address();
  return remote_.address().is_loopback() || (!local.is_unspecified() && local == remote_.address());
}

inline void tcp_connection::finish_handshake(error_code ec, const std::string& reason,
                                             done_type done) {
  disarm(read_timer_, read_seq_);
  handshake_.reset();  // drops the token copy and the nonces
  if (ec) {
    close_with(ec, "handshake failed: " + reason);
    tx_ring_.reset();  // removes its name if the peer never got to map it
    rx_ring_.reset();
  }
  done->complete(true, ec);
}

// --- sending ---------------------------------------------------------------------------------

inline void tcp_connection::enqueue(frame_header header,
                                    std::vector<boost::asio::const_buffer> payload,
                                    done_type done) {
  std::uint64_t total = 0;
  for (const auto& b : payload) total += b.size();
  std::string why;
  error_code ec;
  if (closed_ || !authenticated_) {
    ec = closed_ ? io_error(boost::asio::error::not_connected)
                 : make_error_code(errc::handshake_failed);
  } else if (!queue_.empty() && (queue_.size() >= options_.max_queued_sends ||
                                 queued_bytes_ + total > options_.max_queued_bytes)) {
    ec = boost::asio::error::no_buffer_space;  // backpressure: the caller retries or waits
  } else {
    header.version = protocol_version;
    header.total_length = total;
    header.chunk_offset = 0;
    header.payload_length = (header.flags & frame_flags::control) != 0
                                ? total
                                : std::min<std::uint64_t>(total, options_.chunk_bytes);
    header.flags &= ~(frame_flags::payload_crc | frame_flags::shared_memory);
    if (checksums_payloads()) header.flags |= frame_flags::payload_crc;
    // A message the peer would reject is refused here, with the same reason.
    if (options_.chunk_bytes == 0)
      ec = make_error_code(errc::invalid_argument), why = "chunk_bytes is 0";
    else
      ec = check_frame_header(header, options_.caps, why);
    if (ec) ec = make_error_code(errc::invalid_argument);
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
      h.payload_length = (h.flags & frame_flags::control) != 0
                             ? e.total
                             : std::min<std::uint64_t>(e.total - at, options_.chunk_bytes);
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
      "write stalled for " + std::to_string(options_.write_timeout.count()) +
          " ms (peer not reading)");
  with_stream([&](auto& s) {
    boost::asio::async_write(s, tx_gather_, detail::transfer_whole{},
                             [guard = write_guard(shared_from_this())](error_code ec,
                                                                       std::size_t) mutable {
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

// --- receiving -------------------------------------------------------------------------------

inline void tcp_connection::start_receive(receive_op op) {
  if (receiving_) {
    op.done->complete(false, boost::asio::error::already_started, frame_header{});
    return;
  }
  if (closed_ || !authenticated_) {
    op.done->complete(false,
                      closed_ ? io_error(boost::asio::error::not_connected)
                              : make_error_code(errc::handshake_failed),
                      frame_header{});
    return;
  }
  receiving_ = true;
  if (rx_end_ - rx_begin_ >= frame_header_size) {
    // Read ahead with an earlier frame: completes on its own turn of the executor, never inside
    // the caller's handler.
    boost::asio::post(get_executor(), [self = shared_from_this(), op = std::move(op)]() mutable {
      self->on_header({}, std::move(op));
    });
    return;
  }
  // What is left of a header goes to the front, then one read takes whatever has arrived: every
  // header (and small payload) that came together is parsed from this one system call.
  if (rx_buffer_.empty()) rx_buffer_.resize(read_ahead_bytes);
  std::memmove(rx_buffer_.data(), rx_buffer_.data() + rx_begin_, rx_end_ - rx_begin_);
  rx_end_ -= rx_begin_;
  rx_begin_ = 0;
  with_stream([&](auto& s) {
    boost::asio::async_read(s, boost::asio::buffer(rx_buffer_.data() + rx_end_, rx_buffer_.size() - rx_end_),
                            boost::asio::transfer_at_least(frame_header_size - rx_end_),
                            [self = shared_from_this(), op = std::move(op)](error_code ec, std::size_t n) mutable {
                              self->rx_end_ += n;
                              self->on_header(ec, std::move(op));
                            });
  });
}

inline void tcp_connection::on_header(error_code ec, receive_op op) {
  // A TLS peer that closes TCP without close_notify between frames ends as cleanly as a plain
  // one: frames carry their lengths, so nothing can have been cut off.
  if (ec == boost::asio::ssl::error::stream_truncated) ec = boost::asio::error::eof;
  if (ec) {
    const auto why = io_error(ec);
    if (why != boost::asio::error::eof)
      close_with(why, "read failed: " + why.message());
    else
      close_with(why, "peer closed the connection", false);
    return finish_receive(why, {}, std::move(op));
  }
  std::string reason;
  const std::span<const std::byte, frame_header_size> bytes(rx_buffer_.data() + rx_begin_, frame_header_size);
  rx_begin_ += frame_header_size;
  if (auto e = decode(bytes, options_.caps, rx_header_, reason)) {
    close_with(e, "malformed frame header: " + reason);
    return finish_receive(e, {}, std::move(op));
  }
  error_code sink_ec;
  rx_dest_ = op.sink->destination(rx_header_, sink_ec);
  if (sink_ec) {
    close_with(sink_ec, "receiver rejected frame (type " + std::to_string(rx_header_.type) +
                            ", variable " + std::to_string(rx_header_.variable) +
                            "): " + sink_ec.message());
    return finish_receive(sink_ec, rx_header_, std::move(op));
  }
  if (rx_dest_.size() != rx_header_.payload_length) {
    close_with(errc::invalid_argument,
               "receive sink supplied " + std::to_string(rx_dest_.size()) +
                   " bytes for a payload of " + std::to_string(rx_header_.payload_length));
    return finish_receive(errc::invalid_argument, rx_header_, std::move(op));
  }
  if ((rx_header_.flags & frame_flags::shared_memory) != 0) {
    if (!rx_ring_ || !rx_ring_->read(rx_dest_, reason)) {
      if (!rx_ring_) reason = "payload in shared memory, but none was set up with this peer";
      close_with(errc::bad_frame, "malformed frame: " + reason);
      return finish_receive(errc::bad_frame, rx_header_, std::move(op));
    }
    return on_payload({}, std::move(op));
  }
  // The part of the payload read ahead with the header, then the rest straight into place.
  const std::size_t ahead = std::min<std::size_t>(rx_end_ - rx_begin_, rx_dest_.size());
  if (ahead > 0) std::memcpy(rx_dest_.data(), rx_buffer_.data() + rx_begin_, ahead);
  rx_begin_ += ahead;
  if (ahead == rx_dest_.size()) return on_payload({}, std::move(op));
  arm(read_timer_, read_seq_, options_.frame_timeout,
      "frame payload incomplete after " + std::to_string(options_.frame_timeout.count()) + " ms");
  with_stream([&](auto& s) {
    boost::asio::async_read(s, rx_dest_ + ahead, detail::transfer_whole{},
                            [self = shared_from_this(), op = std::move(op)](
                                error_code e, std::size_t) mutable {
                              self->on_payload(e, std::move(op));
                            });
  });
}

inline void tcp_connection::on_payload(error_code ec, receive_op op) {
  disarm(read_timer_, read_seq_);
  if (ec) {
    const auto why = io_error(ec);
    close_with(why, "read failed inside a frame payload: " + why.message());
    return finish_receive(why, rx_header_, std::move(op));
  }
  if ((rx_header_.flags & frame_flags::payload_crc) != 0) {
    const auto actual =
        crc32c({static_cast<const std::byte*>(rx_dest_.data()), rx_dest_.size()});
    if (actual != rx_header_.payload_crc) {
      close_with(errc::bad_frame, "payload checksum mismatch (type " +
                                      std::to_string(rx_header_.type) + ", variable " +
                                      std::to_string(rx_header_.variable) + ")");
      return finish_receive(errc::bad_frame, rx_header_, std::move(op));
    }
  }
  finish_receive({}, rx_header_, std::move(op));
}

inline void tcp_connection::finish_receive(error_code ec, const frame_header& h, receive_op op) {
  receiving_ = false;
  op.sink.reset();
  op.done->complete(true, ec, h);
}

// --- listener --------------------------------------------------------------------------------

inline tcp_listener::tcp_listener(private_tag, executor_type ex, const endpoint_type& bind_to,
                                  tcp_options options)
    : acceptor_(ex), retry_timer_(ex), options_(std::move(options)) {
  if (options_.tls) shared_tls_context(*options_.tls);  // throws naming a bad file, before binding
  error_code ec;
  auto fail = [&](const char* what) {
    throw error(ec, std::string("tcp_listener: cannot ") + what + " " +
                        detail::to_string(bind_to) + ": " + ec.message());
  };
  if (acceptor_.open(bind_to.protocol(), ec)) fail("open a socket for");
  if (acceptor_.set_option(boost::asio::socket_base::reuse_address(true), ec))
    fail("set SO_REUSEADDR on");
  if (acceptor_.bind(bind_to, ec)) fail("bind");
  if (acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec)) fail("listen on");
}

inline void tcp_listener::start(on_connection_type on_connection) {
  on_connection_ = std::move(on_connection);
  accept_next();
}

inline void tcp_listener::close() {
  closed_ = true;
  error_code ignored;
  acceptor_.close(ignored);
  retry_timer_.cancel();
}

inline void tcp_listener::accept_next() {
  if (closed_) return;
  acceptor_.async_accept([self = shared_from_this()](error_code ec,
                                                     tcp_connection::socket_type socket) {
    if (self->closed_) return;
    if (ec) {
      // Out of descriptors and the like: log, pause briefly, keep serving.
      std::string line = "dsgd transport: accept failed: " + ec.message();
      if (self->options_.log) self->options_.log(line);
      else std::fprintf(stderr, "%s\n", line.c_str());
      self->retry_timer_.expires_after(std::chrono::milliseconds(100));
      self->retry_timer_.async_wait([self](error_code e) {
        if (!e) self->accept_next();
      });
      return;
    }
    auto conn = tcp_connection::create(std::move(socket), self->options_);
    conn->async_handshake(handshake::role::acceptor, [self, conn](error_code e) {
      if (e) {
        ++self->rejected_;  // the connection logged why and closed itself
        return;
      }
      if (self->on_connection_) self->on_connection_(conn);
    });
    self->accept_next();
  });
}

}  // namespace dsgd::transport
