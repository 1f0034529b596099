// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support: a transport listener on 127.0.0.1 (a free port) with its io_context, the
// connections it accepted, and connect(), which runs the context until the library's client
// has connected or failed (within run_until's deadline). Fixtures derive from it and add their
// own options.
#pragma once

#include <dsgd/transport/asio_tcp.hpp>

#include <support/run_until.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/test/unit_test.hpp>

#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace dsgd::test {

struct loopback_listener {
  boost::asio::io_context ioc;
  std::vector<std::shared_ptr<transport::tcp_connection>> accepted;
  std::shared_ptr<transport::tcp_listener> listener;

  /// Listens with @p o (replacing any listener before), collecting authenticated connections.
  void listen(transport::tcp_options o) {
    if (listener) listener->close();
    listener = transport::tcp_listener::create(ioc.get_executor(), {boost::asio::ip::make_address("127.0.0.1"), 0},
                                               std::move(o));
    listener->start([this](std::shared_ptr<transport::tcp_connection> c) { accepted.push_back(std::move(c)); });
  }

  /// Connects to the listener with @p o; @returns the error and the connection (null on error).
  std::pair<error_code, std::shared_ptr<transport::tcp_connection>> connect(transport::tcp_options o) {
    std::optional<error_code> result;
    std::shared_ptr<transport::tcp_connection> conn;
    transport::async_connect(ioc.get_executor(), listener->local_endpoint(), std::move(o),
                             [&](error_code ec, std::shared_ptr<transport::tcp_connection> c) {
                               result = ec;
                               conn = std::move(c);
                             });
    BOOST_REQUIRE(run_until(ioc, [&] { return result.has_value(); }));
    return {*result, conn};
  }

  // The context is not run again: pending handlers may refer to a finished test's locals;
  // destroying the context destroys them without calling them.
  ~loopback_listener() {
    if (listener) listener->close();
    for (auto& c : accepted) c->close();
  }
};

}  // namespace dsgd::test
