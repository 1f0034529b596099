// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// cluster::endpoint_of: the TCP endpoint a task's cluster-spec address names.
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/error.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <string>

namespace dsgd::cluster {

/// @returns the TCP endpoint of task @p who at @p address: an IP address as it is ("localhost"
/// as 127.0.0.1), a host name through the resolver.
/// @throws dsgd::error(errc::bad_cluster_spec) naming the task and address that do not resolve
inline boost::asio::ip::tcp::endpoint endpoint_of(const task_address& address, const std::string& who) {
  error_code ec;
  auto ip = boost::asio::ip::make_address(address.host == "localhost" ? "127.0.0.1" : address.host, ec);
  if (!ec) return {ip, address.port};
  boost::asio::io_context ctx;
  boost::asio::ip::tcp::resolver resolver(ctx);
  auto results = resolver.resolve(address.host, std::to_string(address.port), ec);
  if (ec || results.empty())
    throw error(errc::bad_cluster_spec,
                "cannot resolve the address of " + who + ", " + address.to_string() + ": " + ec.message());
  return *results.begin();
}

}  // namespace dsgd::cluster
