// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// transport::asio_tcp: the Transport policy over Boost.Asio TCP (tcp_connection, tcp_listener
/// and async_connect of asio_tcp.hpp), addressing tasks by their cluster-spec address.
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/cluster/endpoint.hpp>
#include <dsgd/transport/asio_tcp.hpp>
#include <dsgd/transport/concepts.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <string>
#include <utility>

namespace dsgd::transport {

/// The TCP transport policy: stateless, so a default-constructed value is all a role needs.
/// A host name in an address is resolved when listening or connecting (cluster::endpoint_of).
struct asio_tcp {
  using connection_type = tcp_connection;  ///< one authenticated TCP (or TLS) connection
  using listener_type = tcp_listener;      ///< accepts and authenticates connections
  using options_type = tcp_options;        ///< the connection knobs

  /// Binds and listens on @p at (port 0 picks a free port; see local_address()).
  /// @throws dsgd::error for an address that cannot be resolved or bound
  std::shared_ptr<tcp_listener> listen(boost::asio::any_io_executor ex, const cluster::task_address& at,
                                       tcp_options options) const {
    const auto who = options.identity.empty() ? std::string("this task") : options.identity;
    return tcp_listener::create(std::move(ex), cluster::endpoint_of(at, who), std::move(options));
  }

  /// @returns the address @p l is bound to, with its real port.
  static cluster::task_address local_address(const tcp_listener& l) {
    const auto ep = l.local_endpoint();
    error_code ec;
    return {ep.address().to_string(ec), ep.port()};
  }

  /// Connects to @p to and runs the handshake (transport::async_connect).
  /// Completion signature: void(error_code, std::shared_ptr<tcp_connection>).
  /// @throws dsgd::error for an address that cannot be resolved (before anything starts)
  template <class Token>
  auto async_connect(boost::asio::any_io_executor ex, const cluster::task_address& to, tcp_options options,
                     Token&& token) const {
    return transport::async_connect(std::move(ex), cluster::endpoint_of(to, "a peer"), std::move(options),
                                    std::forward<Token>(token));
  }
};

static_assert(Transport<asio_tcp>);

}  // namespace dsgd::transport
