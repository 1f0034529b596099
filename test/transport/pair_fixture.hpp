// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support for the transport tests: one listener and its accepted connections on one
// io_context, written against the Transport concept so that every model runs the same tests;
// helpers to send and to receive whole messages into a buffer, every wait bounded.
#pragma once

#include <dsgd/transport/asio_tcp_policy.hpp>
#include <dsgd/transport/concepts.hpp>
#include <dsgd/transport/inproc.hpp>

#include <support/run_until.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dsgd::test {

inline constexpr const char* pair_token = "correct horse battery staple";

template <class T>
T make_transport();
template <>
inline transport::asio_tcp make_transport<transport::asio_tcp>() {
  return {};
}
template <>
inline transport::inproc make_transport<transport::inproc>() {
  return transport::inproc{transport::inproc_hub::create()};
}

// What one receive completed with.
struct received {
  error_code ec;
  transport::frame_header h;
};

template <Transport T>
struct pair_fixture {
  using connection = typename T::connection_type;
  boost::asio::io_context ioc;
  T net;
  std::shared_ptr<typename T::listener_type> listener;
  std::vector<std::shared_ptr<connection>> accepted;

  explicit pair_fixture(T n = make_transport<T>()) : net(std::move(n)) {}
  pair_fixture(const pair_fixture&) = delete;
  ~pair_fixture() {
    if (listener) listener->close();
    for (auto& c : accepted) c->close();
  }

  static transport::tcp_options options(std::string identity, std::string token = pair_token) {
    transport::tcp_options o;
    o.identity = std::move(identity);
    o.token = std::move(token);
    o.handshake_timeout = std::chrono::seconds(2);
    o.log = [](std::string_view) {};
    return o;
  }

  void listen(transport::tcp_options o = options("ps:0")) {
    listener = net.listen(ioc.get_executor(), cluster::task_address{"127.0.0.1", 0}, std::move(o));
    listener->start([this](std::shared_ptr<connection> c) { accepted.push_back(std::move(c)); });
  }

  cluster::task_address address() const { return T::local_address(*listener); }

  // Connects with @p o; on success also waits until the listener handed over its end.
  std::pair<error_code, std::shared_ptr<connection>> connect(transport::tcp_options o = options("worker:0")) {
    std::optional<error_code> result;
    std::shared_ptr<connection> conn;
    const auto before = accepted.size();
    net.async_connect(ioc.get_executor(), address(), std::move(o), [&](error_code ec, std::shared_ptr<connection> c) {
      result = ec;
      conn = std::move(c);
    });
    BOOST_REQUIRE(run_until(ioc, [&] { return result.has_value() && (*result || accepted.size() > before); }));
    return {*result, conn};
  }

  // Listens (the default options) and connects with @p o, which must succeed. @returns the
  // client's end; the listener's is accepted.back().
  std::shared_ptr<connection> connected(transport::tcp_options o = options("worker:0")) {
    listen();
    auto [ec, conn] = connect(std::move(o));
    BOOST_REQUIRE(!ec);
    return conn;
  }

  // Starts one send; the result appears in the returned slot.
  template <class Buffers>
  std::shared_ptr<std::optional<error_code>> send(connection& c, transport::frame_header h, const Buffers& b) {
    auto slot = std::make_shared<std::optional<error_code>>();
    c.async_send(h, b, [slot](error_code ec) { *slot = ec; });
    return slot;
  }

  // Receives one frame of a message into its place in @p whole.
  received receive_frame(connection& c, boost::asio::mutable_buffer whole) {
    std::optional<received> r;
    c.async_receive([whole](const transport::frame_header& h,
                            error_code& ec) { return transport::chunk_destination(whole, h, ec); },
                    [&](error_code ec, transport::frame_header h) {
                      r = received{ec, h};
                    });
    BOOST_REQUIRE(run_until(ioc, [&] { return r.has_value(); }));
    return *r;
  }

  // Receives frames into @p whole until the message's last one (or an error); @returns them.
  std::vector<received> receive_message(connection& c, boost::asio::mutable_buffer whole) {
    std::vector<received> frames;
    do frames.push_back(receive_frame(c, whole));
    while (!frames.back().ec && !frames.back().h.last_chunk());
    return frames;
  }
};

}  // namespace dsgd::test
