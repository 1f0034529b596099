// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// transport::asio_tcp: the Transport policy over Boost.Asio TCP (tcp_connection, tcp_listener
/// and async_connect of asio_tcp.hpp), addressing tasks by their cluster-spec address, with
/// every optional capability of a transport.
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/cluster/endpoint.hpp>
#include <dsgd/transport/asio_tcp.hpp>
#include <dsgd/transport/concepts.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsgd::transport {

/// The TCP transport policy: stateless, so a default-constructed value is all a role needs.
/// A host name in an address is resolved when listening or connecting (cluster::resolve_all).
/// Besides the Transport concept it has every optional capability: listening elsewhere than the
/// task's address (binds_elsewhere), connections served by several threads (serves_threads),
/// and payloads through shared memory between processes of one host (shares_memory).
struct asio_tcp {
  using connection_type = tcp_connection;  ///< one authenticated TCP (or TLS) connection
  using listener_type = tcp_listener;      ///< accepts and authenticates connections
  using options_type = tcp_options;        ///< the connection knobs

  /// Each connection's handlers run on a strand of its own.
  static constexpr bool serves_threads = true;

  /// Binds and listens on @p at (port 0 picks a free port; see local_address()).
  /// @throws dsgd::error for an address that cannot be resolved or bound
  std::shared_ptr<tcp_listener> listen(boost::asio::any_io_executor ex, const cluster::task_address& at,
                                       tcp_options options) const {
    return listen(std::move(ex), at, {}, std::move(options));
  }

  /// Listens where @p bind says (cluster::listen_endpoint: "" the address itself, "*" any
  /// address, "0.0.0.0", "::", an IP, "if:NAME") on @p at's port; peers still dial @p at.
  /// @throws dsgd::error for a setting, an address or an interface that cannot be bound
  std::shared_ptr<tcp_listener> listen(boost::asio::any_io_executor ex, const cluster::task_address& at,
                                       std::string_view bind, tcp_options options) const {
    const auto who = options.identity.empty() ? std::string("this task") : options.identity;
    return tcp_listener::create(std::move(ex), cluster::listen_endpoint(at, bind, who), std::move(options));
  }

  /// @returns the address @p l is bound to, with its real port.
  static cluster::task_address local_address(const tcp_listener& l) {
    const auto ep = l.local_endpoint();
    error_code ec;
    return {ep.address().to_string(ec), ep.port()};
  }

  /// Connects to @p to and runs the handshake (transport::async_connect), trying every address
  /// its name resolves to, in the resolver's order, until one connects (the last one's error
  /// otherwise). A name that does not resolve yet (a pod's, before the pod exists) completes
  /// with boost::asio::error::host_not_found: a failure to retry, like a refused connection.
  /// Completion signature: void(error_code, std::shared_ptr<tcp_connection>).
  /// @throws dsgd::error(errc::bad_cluster_spec) for a name that cannot resolve (before anything
  ///         starts)
  template <class Token>
  auto async_connect(boost::asio::any_io_executor ex, const cluster::task_address& to, tcp_options options,
                     Token&& token) const {
    auto found = cluster::resolve_all(to);
    if (found.endpoints.empty() && !found.may_resolve_later)
      throw error(errc::bad_cluster_spec, "cannot resolve " + to.to_string() + ": " + found.failure);
    return boost::asio::async_initiate<Token, void(error_code, std::shared_ptr<tcp_connection>)>(
        [](auto handler, boost::asio::any_io_executor ex, endpoints eps, tcp_options options) {
          connect_each(std::move(ex), std::make_shared<const endpoints>(std::move(eps)), 0, std::move(options),
                       std::move(handler));
        },
        token, std::move(ex), std::move(found.endpoints), std::move(options));
  }

 private:
  using endpoints = std::vector<boost::asio::ip::tcp::endpoint>;

  // Tries (*eps)[i], then the next on failure; hands the outcome of the last to @p handler.
  template <class Handler>
  static void connect_each(boost::asio::any_io_executor ex, std::shared_ptr<const endpoints> eps, std::size_t i,
                           tcp_options options, Handler handler) {
    if (eps->empty()) {
      boost::asio::post(ex, [h = std::move(handler)]() mutable {
        std::move(h)(make_error_code(boost::asio::error::host_not_found), std::shared_ptr<tcp_connection>());
      });
      return;
    }
    const auto endpoint = (*eps)[i];
    transport::async_connect(ex, endpoint, options,
                             [ex, eps = std::move(eps), i, options, h = std::move(handler)](
                                 error_code ec, std::shared_ptr<tcp_connection> c) mutable {
                               if (!ec || i + 1 == eps->size()) return std::move(h)(ec, std::move(c));
                               connect_each(std::move(ex), std::move(eps), i + 1, std::move(options), std::move(h));
                             });
  }
};

static_assert(Transport<asio_tcp>);

}  // namespace dsgd::transport
