// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Out-of-line members of tcp_connection: the receive path (headers read ahead, payloads
/// straight into the sink's buffer or out of the shared ring, CRC checks).
// IWYU pragma: private, include <dsgd/transport/asio_tcp.hpp>
#pragma once

#include <dsgd/transport/asio_tcp.hpp>
#include <dsgd/transport/detail/socket_io.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl/error.hpp>

#include <algorithm>
#include <cstring>
#include <span>
#include <string>

namespace dsgd::transport {

inline void tcp_connection::start_receive(receive_op op) {
  if (receiving_) {
    op.done->complete(false, boost::asio::error::already_started, frame_header{});
    return;
  }
  if (closed_ || !authenticated_) {
    op.done->complete(false,
                      closed_ ? io_error(boost::asio::error::not_connected) : make_error_code(errc::handshake_failed),
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
    if (why != boost::asio::error::eof) close_with(why, "read failed: " + why.message());
    else close_with(why, "peer closed the connection", false);
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
    close_with(sink_ec, "receiver rejected frame (type " + std::to_string(rx_header_.type) + ", variable " +
                            std::to_string(rx_header_.variable) + "): " + sink_ec.message());
    return finish_receive(sink_ec, rx_header_, std::move(op));
  }
  if (rx_dest_.size() != rx_header_.payload_length) {
    close_with(errc::invalid_argument, "receive sink supplied " + std::to_string(rx_dest_.size()) +
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
                            [self = shared_from_this(), op = std::move(op)](error_code e, std::size_t) mutable {
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
    const auto actual = crc32c({static_cast<const std::byte*>(rx_dest_.data()), rx_dest_.size()});
    if (actual != rx_header_.payload_crc) {
      close_with(errc::bad_frame, "payload checksum mismatch (type " + std::to_string(rx_header_.type) + ", variable " +
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

}  // namespace dsgd::transport
