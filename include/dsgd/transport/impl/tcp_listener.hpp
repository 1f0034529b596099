// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Out-of-line members of tcp_listener (declared in asio_tcp.hpp).
// IWYU pragma: private, include <dsgd/transport/asio_tcp.hpp>
#pragma once

#include <dsgd/transport/asio_tcp.hpp>
#include <dsgd/transport/detail/socket_io.hpp>

#include <boost/asio/error.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>

namespace dsgd::transport {

inline tcp_listener::tcp_listener(private_tag, executor_type ex, const endpoint_type& bind_to, tcp_options options)
    : connections_(ex),
      acceptor_(options.strand_per_connection ? executor_type(boost::asio::make_strand(ex)) : ex),
      retry_timer_(acceptor_.get_executor()),
      options_(std::move(options)),
      rejections_(std::make_shared<detail::rejection_log>(options_.log)) {
  if (options_.tls) shared_tls_context(*options_.tls);  // throws naming a bad file, before binding
  options_.log = [log = rejections_](std::string_view line) { (*log)(line); };
  error_code ec;
  auto fail = [&](const char* what) {
    throw error(ec,
                std::string("tcp_listener: cannot ") + what + " " + detail::to_string(bind_to) + ": " + ec.message());
  };
  if (acceptor_.open(bind_to.protocol(), ec)) fail("open a socket for");
  if (acceptor_.set_option(boost::asio::socket_base::reuse_address(true), ec)) fail("set SO_REUSEADDR on");
  // Any IPv6 address ("::", cluster::listen_endpoint's "*") takes IPv4 peers too, whatever the
  // system's default (net.ipv6.bindv6only).
  if (bind_to.address().is_v6() && bind_to.address().is_unspecified() &&
      acceptor_.set_option(boost::asio::ip::v6_only(false), ec))
    fail("accept IPv4 as well on");
  if (acceptor_.bind(bind_to, ec)) fail("bind");
  if (acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec)) fail("listen on");
}

inline void tcp_listener::start(on_connection_type on_connection) {
  on_connection_ = std::move(on_connection);
  accept_next();
}

inline void tcp_listener::close() {
  auto stop = [self = shared_from_this()] {
    self->closed_ = true;
    error_code ignored;
    self->acceptor_.close(ignored);
    self->retry_timer_.cancel();
    self->rejections_->flush();
  };
  // With a strand per connection the acceptor is on a strand of its own, and close() may come
  // from any thread: it runs there.
  if (options_.strand_per_connection) boost::asio::post(acceptor_.get_executor(), std::move(stop));
  else stop();
}

inline void tcp_listener::accept_next() {
  if (closed_) return;
  auto accepted = [self = shared_from_this()](error_code ec, tcp_connection::socket_type socket) {
    if (self->closed_) return;
    if (ec) {
      // Out of descriptors and the like: log, pause briefly, keep serving.
      self->options_.log("dsgd transport: accept failed: " + ec.message());
      self->retry_timer_.expires_after(std::chrono::milliseconds(100));
      self->retry_timer_.async_wait([self](error_code e) {
        if (!e) self->accept_next();
      });
      return;
    }
    auto conn = tcp_connection::create(std::move(socket), self->options_);
    auto handshake = [self, conn] {
      conn->async_handshake(handshake::role::acceptor, [self, conn](error_code e) {
        if (e) {
          ++self->rejected_;  // the connection logged why and closed itself
          return;
        }
        if (self->on_connection_) self->on_connection_(conn);
      });
    };
    if (self->options_.strand_per_connection)
      boost::asio::post(conn->get_executor(), std::move(handshake));  // on the connection's strand
    else handshake();
    self->accept_next();
  };
  if (options_.strand_per_connection)
    acceptor_.async_accept(executor_type(boost::asio::make_strand(connections_)), std::move(accepted));
  else acceptor_.async_accept(std::move(accepted));
}

}  // namespace dsgd::transport
