// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/cluster/endpoint.hpp>: addresses as they are, "localhost" as 127.0.0.1, and a
// host that does not resolve as an error naming the task and the address.
#include <dsgd/cluster/endpoint.hpp>

#include <support/error_checks.hpp>

#include <boost/test/unit_test.hpp>

#include <string>

using dsgd::cluster::endpoint_of;
using dsgd::cluster::task_address;
using dsgd::test::contains;
using dsgd::test::error_of;

BOOST_AUTO_TEST_SUITE(endpoint)

BOOST_AUTO_TEST_CASE(an_ipv4_address_is_taken_as_it_is) {
  const auto e = endpoint_of(task_address{"10.1.2.3", 2222}, "ps:0");
  BOOST_TEST(e.address().is_v4());
  BOOST_TEST(e.address().to_string() == "10.1.2.3");
  BOOST_TEST(e.port() == 2222u);
}

BOOST_AUTO_TEST_CASE(an_ipv6_address_is_taken_as_it_is) {
  const auto e = endpoint_of(task_address::parse("[::1]:2223"), "worker:1");
  BOOST_TEST(e.address().is_v6());
  BOOST_TEST(e.address().is_loopback());
  BOOST_TEST(e.port() == 2223u);
}

BOOST_AUTO_TEST_CASE(localhost_is_the_ipv4_loopback_without_the_resolver) {
  const auto e = endpoint_of(task_address{"localhost", 1}, "chief:0");
  BOOST_TEST(e.address().to_string() == "127.0.0.1");
  BOOST_TEST(e.port() == 1u);
}

BOOST_AUTO_TEST_CASE(a_host_that_does_not_resolve_names_the_task_and_the_address) {
  // ".invalid" never resolves (RFC 6761), so the resolver fails at once, network or not.
  const std::string msg =
      error_of([] { (void)endpoint_of(task_address{"no-such-host.invalid", 2222}, "ps:3"); },
               dsgd::errc::bad_cluster_spec);
  BOOST_TEST(contains(msg, "ps:3"));
  BOOST_TEST(contains(msg, "no-such-host.invalid:2222"));
}

BOOST_AUTO_TEST_SUITE_END()
