// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Boost.Asio TCP connections speaking the dsgd wire protocol: an authenticated handshake,
/// zero-copy gather sends of header + raw tensor bytes, chunking of large messages, receives
/// straight into a buffer the caller names per frame, a bounded send queue and deadlines;
/// optionally over TLS with mutual certificate verification (tcp_options::tls).
/// Out-of-line definitions are in impl/ (asio_tcp.hpp, tcp_receive.hpp, tcp_listener.hpp) and
/// detail/handshake_op.hpp; the protocol is in docs/transport.md.
#pragma once

#include <utility>  // Boost 1.74's Asio headers use std::exchange without including <utility>

#include <dsgd/error.hpp>
#include <dsgd/transport/concepts.hpp>
#include <dsgd/transport/detail/completion.hpp>
#include <dsgd/transport/detail/outgoing.hpp>
#include <dsgd/transport/detail/rejection_log.hpp>
#include <dsgd/transport/detail/shared_ring.hpp>
#include <dsgd/transport/detail/socket_io.hpp>
#include <dsgd/transport/frame.hpp>
#include <dsgd/transport/handshake.hpp>
#include <dsgd/transport/tcp_options.hpp>
#include <dsgd/transport/tls.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::transport {

namespace detail {
class handshake_op;
}  // namespace detail

/// One authenticated TCP connection to a peer task. Create it with tcp_listener or
/// async_connect(); it is shared-owned because its pending operations keep it alive.
/// Not thread-safe: use it from its executor (a strand when several threads run the context).
/// Any protocol violation, deadline or I/O error closes the connection with a logged reason;
/// pending and later operations then fail.
class tcp_connection : public std::enable_shared_from_this<tcp_connection> {
  struct private_tag {};

 public:
  using executor_type = boost::asio::any_io_executor;    ///< the socket's executor
  using socket_type = boost::asio::ip::tcp::socket;      ///< the underlying socket
  using endpoint_type = boost::asio::ip::tcp::endpoint;  ///< a peer address

  /// Use create(); public only for std::make_shared.
  tcp_connection(private_tag, socket_type socket, tcp_options options);

  /// Wraps a socket (connected, or about to be) that has not yet done the handshake.
  static std::shared_ptr<tcp_connection> create(socket_type socket, tcp_options options) {
    return std::make_shared<tcp_connection>(private_tag{}, std::move(socket), std::move(options));
  }

  /// @returns the socket's executor; completions of this connection's own I/O run there.
  executor_type get_executor() noexcept { return socket_.get_executor(); }
  /// @returns the identity the peer proved in the handshake (empty before).
  const std::string& peer_identity() const noexcept { return peer_identity_; }
  /// @returns the peer's address as it was when the connection was made.
  const endpoint_type& remote_endpoint() const noexcept { return remote_; }
  /// @returns the local address of the socket (port 0 when closed).
  endpoint_type local_endpoint() const;
  /// @returns true until the connection has been closed for any reason.
  bool is_open() const noexcept { return !closed_; }
  /// @returns true once the handshake has succeeded.
  bool authenticated() const noexcept { return authenticated_; }
  /// @returns true when the connection runs over TLS (options().tls is set): every byte after
  /// the TCP connect, the token handshake included, is encrypted and authenticated.
  bool encrypted() const noexcept { return tls_.has_value(); }
  /// @returns why the connection was closed (empty while open).
  const std::string& close_reason() const noexcept { return close_reason_; }
  /// @returns messages waiting in the send queue, the one being written included.
  std::size_t queued_sends() const noexcept { return queue_.size(); }
  /// @returns payload bytes waiting in the send queue.
  std::uint64_t queued_bytes() const noexcept { return queued_bytes_; }
  /// @returns the options the connection was made with.
  const tcp_options& options() const noexcept { return options_; }
  /// @returns true when this connection sends payload CRCs (options().checksum_payloads
  /// applied to the peer's address and to encrypted()).
  /// @returns true when payloads to the peer go through shared memory (tcp_options::
  /// shared_memory, negotiated in the handshake).
  bool sends_through_shared_memory() const noexcept { return tx_ring_.has_value(); }
  /// @returns true when the peer's payloads may come through shared memory.
  bool receives_through_shared_memory() const noexcept { return rx_ring_.has_value(); }
  bool checksums_payloads() const noexcept {
    return options_.checksum_payloads == payload_checksums::always ||
           (options_.checksum_payloads == payload_checksums::remote && !encrypted() &&
            !remote_.address().is_loopback());
  }

  /// Runs the handshake as @p side under options().handshake_timeout: with options().tls, first
  /// the TLS handshake (the initiator is the TLS client), then the token handshake inside it.
  /// Completion signature: void(error_code); errc::handshake_failed for a wrong token, version
  /// or identity, or a TLS failure (certificate not verified or missing, no common protocol),
  /// errc::timed_out for a silent peer. Failure closes the connection with a logged reason.
  /// @code
  ///   conn->async_handshake(handshake::role::acceptor, [conn](error_code ec) { ... });
  /// @endcode
  template <boost::asio::completion_token_for<void(error_code)> Token>
  auto async_handshake(handshake::role side, Token&& token) {
    return boost::asio::async_initiate<Token, void(error_code)>(
        [self = shared_from_this(), side](auto handler) {
          self->start_handshake(side, detail::make_completion<error_code>(std::move(handler), self->get_executor()));
        },
        token);
  }

  /// Queues one message: the header (whose length, offset, total and CRC fields are filled in
  /// here) followed by the raw bytes of @p payload, with no copy: frames go out as gather
  /// writes of views of the caller's buffers, several queued frames per write (started on the
  /// executor's next turn), or, to a peer on this host, the payload through the shared ring
  /// (tcp_options::shared_memory). A message larger than options().chunk_bytes goes as several
  /// frames with increasing chunk_offset (control messages are never chunked). Messages go out
  /// in order.
  /// @param payload a ConstBufferSequence that must stay valid until completion
  /// Completion signature: void(error_code); boost::asio::error::no_buffer_space when the
  /// send queue is full (nothing was queued; the connection stays open).
  /// @code
  ///   conn->async_send(frame_header{.type = 3, .variable = 7, .step = s},
  ///                    boost::asio::buffer(grad.data(), grad.size() * sizeof(float)),
  ///                    [](error_code ec) { ... });
  /// @endcode
  template <class ConstBufferSequence, boost::asio::completion_token_for<void(error_code)> Token>
  requires boost::asio::is_const_buffer_sequence<ConstBufferSequence>::value auto async_send(
      const frame_header& header, const ConstBufferSequence& payload, Token&& token) {
    return detail::initiate_send(get_executor(), payload, std::forward<Token>(token),
                                 [self = shared_from_this(), header](auto bufs, auto done) {
                                   self->enqueue(header, std::move(bufs), std::move(done));
                                 });
  }

  /// Receives the next frame: reads and validates its header, asks @p sink where the payload
  /// goes, reads the payload straight there and checks its CRC when flagged. One receive at a
  /// time. A bad header never reaches the sink and closes the connection.
  /// Completion signature: void(error_code, frame_header); boost::asio::error::eof when the
  /// peer closed cleanly between frames, errc::bad_frame for a malformed frame.
  /// @code
  ///   conn->async_receive(
  ///       [&](const frame_header& h, error_code& ec) { return chunk_destination(dest, h, ec); },
  ///       [](error_code ec, frame_header h) { ... });
  /// @endcode
  template <ReceiveSink Sink, boost::asio::completion_token_for<void(error_code, frame_header)> Token>
  auto async_receive(Sink sink, Token&& token) {
    return boost::asio::async_initiate<Token, void(error_code, frame_header)>(
        [self = shared_from_this()](auto handler, Sink s) {
          self->start_receive(
              receive_op{std::make_unique<sink_for<Sink>>(std::move(s)),
                         detail::make_completion<error_code, frame_header>(std::move(handler), self->get_executor())});
        },
        token, std::move(sink));
  }

  /// Closes the connection; pending operations complete with operation_aborted.
  void close() { close_with(boost::asio::error::operation_aborted, "closed locally", false); }

 private:
  friend class tcp_listener;
  friend class detail::handshake_op;
  template <class Token>
  friend auto async_connect(boost::asio::any_io_executor, const boost::asio::ip::tcp::endpoint&, tcp_options, Token&&);

  using done_type = std::unique_ptr<detail::erased_completion<error_code>>;
  using receive_done_type = std::unique_ptr<detail::erased_completion<error_code, frame_header>>;

  using erased_sink = detail::erased_sink;
  template <class Sink>
  using sink_for = detail::sink_for<Sink>;

  struct send_entry {
    frame_header header;
    std::vector<boost::asio::const_buffer> payload;
    std::uint64_t total = 0;
    std::uint64_t sent = 0;
    done_type done;
  };

  // A receive in flight: its sink and completion travel with the I/O operation rather than
  // living in the connection, so that a handler holding the connection makes no cycle.
  struct receive_op {
    std::unique_ptr<erased_sink> sink;
    receive_done_type done;
  };

  // Held by the in-flight write. If the io_context is destroyed with the write pending, the
  // write is destroyed without running and this drops the queued handlers, which may hold
  // the connection (Asio's own rule: destroyed, never called).
  struct write_guard {
    std::shared_ptr<tcp_connection> self;
    explicit write_guard(std::shared_ptr<tcp_connection> s) noexcept : self(std::move(s)) {}
    write_guard(write_guard&& other) noexcept : self(std::move(other.self)) {}
    write_guard& operator=(write_guard&&) = delete;
    ~write_guard() {
      if (self) self->queue_.clear();
    }
  };

  void start_connect(const endpoint_type& to, done_type done);
  void start_handshake(handshake::role side, done_type done);  // detail/handshake_op.hpp
  // Calls f(stream) on the TLS stream when there is one, else on the socket, so that each
  // read and write is written once for both.
  template <class F>
  void with_stream(F&& f) {
    if (tls_) f(*tls_);
    else f(socket_);
  }
  void enqueue(frame_header header, std::vector<boost::asio::const_buffer> payload, done_type done);
  void write_next();
  void on_written(error_code ec);
  void start_receive(receive_op op);
  void on_header(error_code ec, receive_op op);
  void on_payload(error_code ec, receive_op op);
  void finish_receive(error_code ec, const frame_header& h, receive_op op);
  void arm(boost::asio::steady_timer& timer, std::uint64_t& seq, std::chrono::milliseconds after, std::string what);
  static void disarm(boost::asio::steady_timer& timer, std::uint64_t& seq);
  error_code io_error(error_code ec) const;
  void close_with(error_code ec, std::string reason, bool log_it = true);
  void log(std::string_view what) const;
  void apply_socket_options();

  socket_type socket_;
  tcp_options options_;
  endpoint_type remote_;
  std::string peer_identity_;
  bool authenticated_ = false;
  bool closed_ = false;
  error_code close_ec_;
  std::string close_reason_;

  // TLS (options_.tls): the shared context and the stream layered on socket_.
  std::shared_ptr<boost::asio::ssl::context> tls_context_;
  std::optional<boost::asio::ssl::stream<socket_type&>> tls_;
  std::string tls_verify_failure_;  // the first certificate the peer's chain failed on, and why

  bool handshaking_ = false;                    // a detail::handshake_op is running
  std::optional<detail::shared_ring> tx_ring_;  // payloads to the peer (this side made it)
  std::optional<detail::shared_ring> rx_ring_;  // payloads from the peer (the peer made it)

  std::deque<send_entry> queue_;
  std::uint64_t queued_bytes_ = 0;
  bool writing_ = false;
  // The write in flight: the headers of its frames, each frame's payload length, and the
  // gather list of headers and payload views.
  static constexpr std::size_t max_frames_per_write = 64;
  std::array<frame_header_bytes, max_frames_per_write> tx_headers_{};
  std::vector<std::uint64_t> tx_frames_;
  std::vector<boost::asio::const_buffer> tx_gather_;
  boost::asio::steady_timer write_timer_;
  std::uint64_t write_seq_ = 0;

  // Bytes read from the socket and not yet used: [rx_begin_, rx_end_) of rx_buffer_, which is
  // allocated at the first receive.
  static constexpr std::size_t read_ahead_bytes = 16 << 10;
  std::vector<std::byte> rx_buffer_;
  std::size_t rx_begin_ = 0, rx_end_ = 0;
  frame_header rx_header_;
  boost::asio::mutable_buffer rx_dest_;
  bool receiving_ = false;
  boost::asio::steady_timer read_timer_;  // also the handshake deadline
  std::uint64_t read_seq_ = 0;
};

/// Opens a connection to @p to and runs the handshake as initiator, all within
/// options.handshake_timeout. Retrying an unreachable peer is the caller's policy.
/// Completion signature: void(error_code, std::shared_ptr<tcp_connection>); the pointer is
/// null on failure.
/// @throws dsgd::error from shared_tls_context() when options.tls names a file that cannot be
///         loaded (before anything starts)
template <class Token>
auto async_connect(boost::asio::any_io_executor ex, const boost::asio::ip::tcp::endpoint& to, tcp_options options,
                   Token&& token) {
  using signature = void(error_code, std::shared_ptr<tcp_connection>);
  if (options.tls) shared_tls_context(*options.tls);  // throws naming a bad file, here

  return boost::asio::async_initiate<Token, signature>(
      [ex, to](auto handler, tcp_options opts) {
        auto conn = tcp_connection::create(tcp_connection::socket_type(ex), std::move(opts));
        auto outer = detail::make_completion<error_code, std::shared_ptr<tcp_connection>>(std::move(handler), ex);
        auto inner = detail::make_completion<error_code>(
            [conn, outer = std::move(outer)](error_code ec) mutable { outer->complete(true, ec, ec ? nullptr : conn); },
            ex);
        conn->start_connect(to, std::move(inner));
      },
      token, std::move(options));
}

/// Accepts connections on exactly the given address, runs the handshake on each (several at
/// once, each under its deadline) and hands over the authenticated ones. A peer that fails the
/// handshake is logged and dropped; the listener keeps serving.
class tcp_listener : public std::enable_shared_from_this<tcp_listener> {
  struct private_tag {};

 public:
  using executor_type = boost::asio::any_io_executor;    ///< the acceptor's executor
  using endpoint_type = boost::asio::ip::tcp::endpoint;  ///< a local address
  /// Called with each authenticated connection, on the listener's executor (on the
  /// connection's own strand with tcp_options::strand_per_connection).
  using on_connection_type = std::function<void(std::shared_ptr<tcp_connection>)>;

  /// Use create(); public only for std::make_shared.
  tcp_listener(private_tag, executor_type ex, const endpoint_type& bind_to, tcp_options options);

  /// Binds and listens on @p bind_to (port 0 picks a free port; see local_endpoint()).
  /// @throws dsgd::error with the system's code when the address cannot be bound, or from
  ///         shared_tls_context() when options.tls names a file that cannot be loaded
  static std::shared_ptr<tcp_listener> create(executor_type ex, const endpoint_type& bind_to, tcp_options options) {
    return std::make_shared<tcp_listener>(private_tag{}, std::move(ex), bind_to, std::move(options));
  }

  /// @returns the bound address, with the real port.
  endpoint_type local_endpoint() const { return acceptor_.local_endpoint(); }
  /// @returns how many accepted peers failed the handshake so far.
  std::size_t rejected() const noexcept { return rejected_.load(); }
  /// Starts accepting; @p on_connection receives every authenticated connection.
  void start(on_connection_type on_connection);
  /// Stops accepting, and reports the rejections counted but not yet logged. Connections
  /// already handed over are unaffected.
  void close();

 private:
  void accept_next();

  executor_type connections_;  // where accepted connections run (each on a strand of it, or not)
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_timer_;
  tcp_options options_;
  // Rejected handshakes are logged through it: the first few of an interval in full, the rest
  // counted per reason (detail/rejection_log.hpp); accepted connections log through it too.
  std::shared_ptr<detail::rejection_log> rejections_;
  on_connection_type on_connection_;
  std::atomic<std::size_t> rejected_{0};  // counted on the connections' strands
  bool closed_ = false;                   // on the acceptor's executor
};

}  // namespace dsgd::transport

#include <dsgd/transport/detail/handshake_op.hpp>
#include <dsgd/transport/impl/asio_tcp.hpp>
#include <dsgd/transport/impl/tcp_listener.hpp>
#include <dsgd/transport/impl/tcp_receive.hpp>
