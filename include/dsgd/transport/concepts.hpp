// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The Transport concept (and ReceiveSink, the receive-side callback every model takes): what
/// the parameter server and its client need of a transport, so that
/// both can be written once over a policy type T. Models: transport::asio_tcp
/// (asio_tcp_policy.hpp, sockets) and transport::inproc (inproc.hpp, threads of one process).
/// Operations take Asio completion tokens; every completion runs on the executor of the
/// connection (or connect call) it belongs to.
#pragma once

#include <utility>  // Boost 1.74's Asio headers use std::exchange without including <utility>

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/error.hpp>
#include <dsgd/transport/frame.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/buffer.hpp>

#include <array>
#include <concepts>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace dsgd {
namespace transport::detail {

// Archetypes the concepts call the operations with: the narrowest argument each operation must
// accept (a model may accept more).
struct sink_archetype {
  boost::asio::mutable_buffer operator()(const frame_header&, error_code&) const { return {}; }
};
struct send_handler_archetype {
  void operator()(error_code) const {}
};
struct receive_handler_archetype {
  void operator()(error_code, frame_header) const {}
};
template <class C>
struct connect_handler_archetype {
  void operator()(error_code, std::shared_ptr<C>) const {}
};
template <class C>
struct accept_handler_archetype {
  void operator()(std::shared_ptr<C>) const {}
};

}  // namespace transport::detail

namespace transport {

/// A receive sink: given a validated header, returns the buffer its payload is read into.
/// The buffer must be exactly header.payload_length bytes and stay valid until the receive
/// completes. Setting @p ec rejects the frame, which closes the connection.
template <class S>
concept ReceiveSink = requires(S& sink, const frame_header& h, error_code& ec) {
  { sink(h, ec) } -> std::convertible_to<boost::asio::mutable_buffer>;
};

/// For chunked messages: the part of @p whole that the chunk described by @p h fills.
/// Sets @p ec to errc::bad_frame when the message size differs from whole.size().
inline boost::asio::mutable_buffer chunk_destination(boost::asio::mutable_buffer whole, const frame_header& h,
                                                     error_code& ec) {
  if (h.total_length != whole.size() || h.chunk_offset > whole.size() - h.payload_length ||
      h.payload_length > whole.size()) {
    ec = make_error_code(errc::bad_frame);
    return {};
  }
  return boost::asio::buffer(static_cast<char*>(whole.data()) + h.chunk_offset,
                             static_cast<std::size_t>(h.payload_length));
}

/// The connection knobs every transport's options carry (transport::tcp_options is the model;
/// the roles fill identity and accept_peer on their copy, users set the rest).
template <class O>
concept ConnectionOptions = std::copyable<O> && requires(O& o) {
  o.identity = std::string();  ///< this task's identity, proven to the peer ("worker:1")
  o.token = std::string();     ///< the cluster token both ends must share
  /// false for a peer identity that must be refused
  o.accept_peer = std::function<bool(std::string_view)>();
  o.log = std::function<void(std::string_view)>();             ///< where connection errors go
  { o.caps } -> std::convertible_to<limits>;                   ///< caps checked before any sink runs
  { o.chunk_bytes } -> std::convertible_to<std::size_t>;       ///< largest frame of a message
  { o.max_queued_sends } -> std::convertible_to<std::size_t>;  ///< send-queue bound
};

/// One authenticated, ordered, message-framed connection to a peer task, shared-owned
/// (std::shared_ptr<C>) because pending operations keep it alive. Used from its executor.
template <class C>
concept Connection = requires(C& c, const C& cc, const frame_header& h, boost::asio::const_buffer one,
                              std::array<boost::asio::const_buffer, 2> two) {
  /// The executor completions of this connection's operations run on (the task's io_context).
  { c.get_executor() } -> std::convertible_to<boost::asio::any_io_executor>;
  /// The identity the peer proved when the connection was made.
  { cc.peer_identity() } -> std::convertible_to<std::string>;
  /// True until the connection was closed for any reason (locally, by the peer, by an error).
  { cc.is_open() } -> std::convertible_to<bool>;
  /// Why it was closed (empty while open); for error messages.
  { cc.close_reason() } -> std::convertible_to<std::string>;
  /// Closes the connection: pending operations complete with operation_aborted here, and the
  /// peer's pending receive completes with boost::asio::error::eof.
  c.close();
  /// Queues one message (header then the payload's bytes, by view: the ConstBufferSequence must
  /// stay valid until completion); the transport fills version, payload_length, chunk_offset and
  /// total_length, and splits a payload larger than options.chunk_bytes into frames unless the
  /// header has frame_flags::control. Messages arrive in order. Completion: void(error_code);
  /// boost::asio::error::no_buffer_space when the send queue is full (nothing queued).
  c.async_send(h, one, detail::send_handler_archetype{});
  c.async_send(h, two, detail::send_handler_archetype{});
  /// Receives the next frame (any ReceiveSink; the archetype stands for them): checks its header against options.caps
  /// (errc::bad_frame closes the connection, before the sink is asked), asks the ReceiveSink where its payload_length
  /// bytes go (an error it sets closes the connection and is the completion's), and writes the payload there. One
  /// receive at a time. Completion: void(error_code, frame_header).
  c.async_receive(detail::sink_archetype{}, detail::receive_handler_archetype{});
};

/// Accepts authenticated connections of type C on one address.
template <class L, class C>
concept Listener = requires(L& l) {
  /// Starts handing over every authenticated connection to the callable, on the listener's
  /// executor. A peer that fails authentication (token, accept_peer) never reaches it.
  l.start(detail::accept_handler_archetype<C>{});
  /// Stops accepting; connections already handed over are unaffected.
  l.close();
};

}  // namespace transport

/// A transport policy: a copyable value (it may hold shared state, e.g. inproc's hub) that
/// listens on and connects to tasks by their cluster-spec address.
///
/// - T::connection_type models transport::Connection; T::listener_type models
///   transport::Listener<.., connection_type>; T::options_type models
///   transport::ConnectionOptions (both shipped models use transport::tcp_options).
/// - t.listen(ex, address, options) -> std::shared_ptr<listener_type>: binds @p address (port 0
///   picks a free one); throws dsgd::error when the address is taken or cannot be bound.
/// - T::local_address(listener) -> cluster::task_address: the bound address, with its real port.
/// - t.async_connect(ex, address, options, token): connects and authenticates; completion
///   void(error_code, std::shared_ptr<connection_type>) (null on failure) on @p ex:
///   errc::handshake_failed for a wrong token or a refused identity, and an error at once
///   (connection_refused) when nobody listens there, so the caller's retry and backoff work.
template <class T>
concept Transport = std::copyable<T> && requires {
  typename T::connection_type;
  typename T::listener_type;
  typename T::options_type;
} && transport::ConnectionOptions<typename T::options_type> && transport::Connection<typename T::connection_type> &&
    transport::Listener<typename T::listener_type, typename T::connection_type> &&
    requires(const T& t, boost::asio::any_io_executor ex, const cluster::task_address& address,
             typename T::options_type options, const typename T::listener_type& listener) {
  { t.listen(ex, address, options) } -> std::same_as<std::shared_ptr<typename T::listener_type>>;
  { T::local_address(listener) } -> std::convertible_to<cluster::task_address>;
  t.async_connect(ex, address, options, transport::detail::connect_handler_archetype<typename T::connection_type>{});
};

namespace transport {

// Optional capabilities of a Transport: the ps and the client use each where a transport has it
// and do without it where it has not (a setting that needs one is refused, naming it).

/// A transport that can listen elsewhere than the task's own address, peers still dialling that
/// address: t.listen(ex, address, bind, options), @p bind saying where (TCP: "*", "0.0.0.0",
/// "::", an IP, "if:NAME"; "" the address itself). The ps's serving_options::listen needs it.
template <class T>
concept binds_elsewhere = Transport<T> &&
    requires(const T& t, boost::asio::any_io_executor ex, const cluster::task_address& address, std::string_view bind,
             typename T::options_type options) {
  { t.listen(ex, address, bind, options) } -> std::same_as<std::shared_ptr<typename T::listener_type>>;
};

/// A transport whose connections may be served by several threads of one io_context
/// (T::serves_threads is true: each connection's handlers run on a strand of its own). The ps's
/// serving_options::threads needs it.
template <class T>
concept serves_threads = Transport<T> && requires {
  requires T::serves_threads;
};

/// A connection that may carry its payloads through a shared-memory ring (TCP between
/// processes of one host): sends_through_shared_memory(), receives_through_shared_memory(). A
/// ps applies a push that arrives that way whole instead of chunk by chunk.
template <class C>
concept shares_memory = requires(const C& c) {
  { c.sends_through_shared_memory() } -> std::convertible_to<bool>;
  { c.receives_through_shared_memory() } -> std::convertible_to<bool>;
};

/// @returns whether @p c receives its payloads through shared memory (false for a connection
/// without the capability).
template <class C>
bool receives_through_shared_memory(const C& c) {
  if constexpr (shares_memory<C>) return c.receives_through_shared_memory();
  else return false;
}

}  // namespace transport
}  // namespace dsgd
