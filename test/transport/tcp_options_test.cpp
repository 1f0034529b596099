// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/transport/tcp_options.hpp>: the defaults are valid, and validate() names the
// first bad field by its full path.
#include <dsgd/transport/tcp_options.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <functional>
#include <string>

BOOST_AUTO_TEST_SUITE(tcp_options_test)

namespace t = dsgd::transport;
using namespace std::chrono_literals;

namespace {

// The message validate() throws for @p o under @p path, or "" when it accepts it.
std::string refusal(const t::tcp_options& o, std::string_view path = "tcp_options") {
  try {
    t::validate(o, path);
    return {};
  } catch (const dsgd::error& e) {
    BOOST_TEST(e.code() == dsgd::make_error_code(dsgd::errc::invalid_argument));
    return e.what();
  }
}

bool names(const std::string& message, const std::string& field) { return message.find(field) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(the_defaults_are_valid) {
  BOOST_TEST(refusal(t::tcp_options{}).empty());
  BOOST_TEST(refusal(t::tcp_options{.socket_buffer_bytes = 0, .dead_peer_timeout = 0s}).empty());
}

BOOST_AUTO_TEST_CASE(each_bad_field_is_named_by_its_path) {
  const std::function<void(t::tcp_options&)> breakers[] = {
      [](t::tcp_options& o) { o.chunk_bytes = 0; },
      [](t::tcp_options& o) { o.max_queued_sends = 0; },
      [](t::tcp_options& o) { o.max_queued_bytes = 0; },
      [](t::tcp_options& o) { o.handshake_timeout = 0ms; },
      [](t::tcp_options& o) { o.frame_timeout = -1ms; },
      [](t::tcp_options& o) { o.write_timeout = 0ms; },
      [](t::tcp_options& o) { o.dead_peer_timeout = -1s; },
      [](t::tcp_options& o) { o.socket_buffer_bytes = -1; },
      [](t::tcp_options& o) { o.caps.max_payload_bytes = 0; },
      [](t::tcp_options& o) { o.caps.max_control_bytes = 0; },
      [](t::tcp_options& o) { o.caps.max_total_bytes = o.caps.max_payload_bytes - 1; },
      [](t::tcp_options& o) { o.chunk_bytes = o.caps.max_payload_bytes + 1; },
      [](t::tcp_options& o) { o.shared_memory.ring_bytes = 1024; },
  };
  const char* fields[] = {
      "trainer_options.connection.chunk_bytes",
      "trainer_options.connection.max_queued_sends",
      "trainer_options.connection.max_queued_bytes",
      "trainer_options.connection.handshake_timeout",
      "trainer_options.connection.frame_timeout",
      "trainer_options.connection.write_timeout",
      "trainer_options.connection.dead_peer_timeout",
      "trainer_options.connection.socket_buffer_bytes",
      "trainer_options.connection.caps.max_payload_bytes",
      "trainer_options.connection.caps.max_control_bytes",
      "trainer_options.connection.caps.max_total_bytes",
      "trainer_options.connection.chunk_bytes",
      "trainer_options.connection.shared_memory.ring_bytes",
  };
  static_assert(std::size(breakers) == std::size(fields));
  for (std::size_t i = 0; i < std::size(fields); ++i) {
    t::tcp_options o;
    breakers[i](o);
    const auto message = refusal(o, "trainer_options.connection");
    BOOST_TEST_CONTEXT("case " << i << ": " << message) { BOOST_TEST(names(message, fields[i])); }
  }
}

BOOST_AUTO_TEST_CASE(a_small_ring_is_fine_when_shared_memory_is_off) {
  t::tcp_options o;
  o.shared_memory = {.enabled = false, .ring_bytes = 16};
  BOOST_TEST(refusal(o).empty());
}

BOOST_AUTO_TEST_SUITE_END()
