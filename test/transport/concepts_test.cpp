// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Conformance of <dsgd/transport/concepts.hpp>: every shipped model satisfies Transport (and its
// parts), and near-miss types are refused, each by the requirement it lacks.
#include <dsgd/transport/asio_tcp_policy.hpp>
#include <dsgd/transport/concepts.hpp>
#include <dsgd/transport/inproc.hpp>

#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>

BOOST_AUTO_TEST_SUITE(concepts_test)

namespace t = dsgd::transport;

namespace near_miss {

// Everything a connection needs but async_receive.
struct deaf_connection {
  boost::asio::any_io_executor get_executor();
  const std::string& peer_identity() const;
  bool is_open() const;
  std::string close_reason() const;
  void close();
  template <class B, class Token>
  void async_send(const t::frame_header&, const B&, Token&&);
};

// A whole connection: what the concept names and nothing more.
struct full_connection : deaf_connection {
  template <class Sink, class Token>
  void async_receive(Sink, Token&&);
};

struct listener {
  template <class F>
  void start(F);
  void close();
};

// A transport whose connection cannot receive.
struct deaf_transport {
  using connection_type = deaf_connection;
  using listener_type = listener;
  using options_type = t::tcp_options;
  std::shared_ptr<listener> listen(boost::asio::any_io_executor, const dsgd::cluster::task_address&,
                                   t::tcp_options) const;
  static dsgd::cluster::task_address local_address(const listener&);
  template <class Token>
  void async_connect(boost::asio::any_io_executor, const dsgd::cluster::task_address&, t::tcp_options, Token&&) const;
};

// The same, with a whole connection: satisfies Transport (the archetype of a user model).
struct user_transport : deaf_transport {
  using connection_type = full_connection;
};

// Cannot listen.
struct mute_transport {
  using connection_type = full_connection;
  using listener_type = listener;
  using options_type = t::tcp_options;
  template <class Token>
  void async_connect(boost::asio::any_io_executor, const dsgd::cluster::task_address&, t::tcp_options, Token&&) const;
};

// Options without the connection knobs.
struct bare_options {
  std::string identity;
};
struct bare_transport : user_transport {
  using options_type = bare_options;
};

}  // namespace near_miss

// The shipped models.
static_assert(dsgd::Transport<t::asio_tcp>);
static_assert(dsgd::Transport<t::inproc>);
static_assert(t::Connection<t::tcp_connection>);
static_assert(t::Connection<t::inproc_connection>);
static_assert(t::Listener<t::tcp_listener, t::tcp_connection>);
static_assert(t::Listener<t::inproc_listener, t::inproc_connection>);
static_assert(t::ConnectionOptions<t::tcp_options>);

// A user model of only what the concept names plugs in.
static_assert(t::Connection<near_miss::full_connection>);
static_assert(dsgd::Transport<near_miss::user_transport>);

// Near misses, each refused.
static_assert(!t::Connection<near_miss::deaf_connection>);
static_assert(!dsgd::Transport<near_miss::deaf_transport>);
static_assert(!dsgd::Transport<near_miss::mute_transport>);
static_assert(!t::ConnectionOptions<near_miss::bare_options>);
static_assert(!dsgd::Transport<near_miss::bare_transport>);
static_assert(!dsgd::Transport<int>);

// The optional capabilities: TCP has each, inproc none, and a user's transport none it does not
// declare.
static_assert(t::binds_elsewhere<t::asio_tcp> && t::serves_threads<t::asio_tcp> && t::shares_memory<t::tcp_connection>);
static_assert(!t::binds_elsewhere<t::inproc> && !t::serves_threads<t::inproc> &&
              !t::shares_memory<t::inproc_connection>);
static_assert(!t::binds_elsewhere<near_miss::user_transport> && !t::serves_threads<near_miss::user_transport> &&
              !t::shares_memory<near_miss::full_connection>);

BOOST_AUTO_TEST_CASE(concepts_are_checked_at_compile_time) {
  BOOST_TEST(dsgd::Transport<t::inproc>);
  BOOST_TEST(!dsgd::Transport<near_miss::deaf_transport>);
}

BOOST_AUTO_TEST_SUITE_END()
