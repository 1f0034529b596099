// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/cluster/endpoint.hpp>: IP literals, and where a task listens (its spec address,
// any address, an interface). Nothing here asks a DNS server: names that need the resolver are
// tested inside network namespaces whose resolver is loopback (test/hosts/).
#include <dsgd/cluster/endpoint.hpp>

#include <support/error_checks.hpp>

#include <boost/test/unit_test.hpp>

#include <string>

BOOST_AUTO_TEST_SUITE(cluster_endpoint_test)

using namespace dsgd::cluster;
using dsgd::test::contains;
using dsgd::test::error_of;

BOOST_AUTO_TEST_SUITE(cluster_endpoint)

BOOST_AUTO_TEST_CASE(ip_literals_and_localhost_need_no_resolver) {
  const auto v4 = resolve_all(task_address::parse("10.1.2.3:2222"));
  BOOST_TEST_REQUIRE(v4.endpoints.size() == 1u);
  BOOST_TEST(v4.endpoints[0].address().to_string() == "10.1.2.3");
  BOOST_TEST(v4.endpoints[0].port() == 2222);
  BOOST_TEST(resolve_all(task_address::parse("[::1]:7")).endpoints.at(0).address().is_v6());
  BOOST_TEST(resolve_all(task_address::parse("localhost:9")).endpoints.at(0).address().to_string() == "127.0.0.1");
}

BOOST_AUTO_TEST_CASE(a_task_listens_on_its_address_any_address_or_an_interface) {
  const auto spec = task_address::parse("127.0.0.1:2345");
  BOOST_TEST(listen_endpoint(spec, "", "ps:0").address().to_string() == "127.0.0.1");
  const auto any = listen_endpoint(spec, "*", "ps:0");
  BOOST_TEST(any.address().is_v6());
  BOOST_TEST(any.address().is_unspecified());
  BOOST_TEST(any.port() == 2345);
  BOOST_TEST(listen_endpoint(spec, "0.0.0.0", "ps:0").address().to_string() == "0.0.0.0");
  BOOST_TEST(listen_endpoint(spec, "::", "ps:0").address().is_v6());
  const auto lo = listen_endpoint(spec, "if:lo", "ps:0");
  BOOST_TEST(lo.address().is_loopback());
  BOOST_TEST(lo.port() == 2345);
}

BOOST_AUTO_TEST_CASE(a_bad_listen_setting_is_refused_naming_the_task_and_the_setting) {
  const auto spec = task_address::parse("127.0.0.1:2345");
  const auto bad = [&](std::string listen) {
    return error_of([&] { listen_endpoint(spec, listen, "ps:1"); }, dsgd::errc::bad_cluster_spec);
  };
  BOOST_TEST(contains(bad("if:no-such-if0"), "ps:1: listen \"if:no-such-if0\": no such interface"));
  BOOST_TEST(contains(bad("if:"), "not an interface name"));
  BOOST_TEST(contains(bad("eth0"), "expected \"\", \"*\", an IP address or \"if:NAME\""));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
