// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/transport/detail/rejection_log.hpp>: a listener's rejected handshakes, the
// first few of each interval logged in full and the rest counted per reason in one line.
#include <dsgd/transport/detail/rejection_log.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(rejection_log_test)

using dsgd::transport::detail::rejection_log;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(transport_rejection_log)

BOOST_AUTO_TEST_CASE(a_flood_is_logged_as_a_few_lines_and_one_count_per_interval) {
  std::vector<std::string> out;
  const auto t0 = rejection_log::clock_type::now();
  {
    rejection_log log([&](std::string_view l) { out.emplace_back(l); }, 3, 1000ms);
    for (int i = 0; i < 1000; ++i)
      log(i % 2
              ? "dsgd transport: handshake failed: peer 'worker:9' failed the challenge (wrong cluster token)"
              : "dsgd transport: handshake failed: peer closed the connection before its hello (not a dsgd peer, ...)",
          t0 + std::chrono::milliseconds(i / 4));                // 1000 rejections within 250 ms: one interval
    BOOST_TEST(out.size() == 3u);                                // the first three in full, the rest counted
    log("dsgd transport: connection to ps:0 lost", t0 + 300ms);  // not a rejection: passes through
    BOOST_TEST(out.size() == 4u);
    log("dsgd transport: handshake failed: peer speaks protocol version 9, this side speaks 2", t0 + 1200ms);
    // The next interval's first rejection reports the last interval's counts, then is logged.
    BOOST_REQUIRE(out.size() == 6u);
    BOOST_TEST(out[4] ==
               "dsgd transport: 997 more rejected connections in the last 1200 ms, not logged one by one: "
               "498 closed before its hello, 499 wrong token");
    BOOST_TEST(out[5].find("protocol version 9") != std::string::npos);
    for (int i = 0; i < 5; ++i)
      log("dsgd transport: handshake failed: handshake timed out after 10000 ms", t0 + 1300ms);
  }  // destroyed: flushes what is counted
  BOOST_REQUIRE(out.size() == 9u);
  BOOST_TEST(out.back().find("3 more rejected connections") != std::string::npos, out.back());
  BOOST_TEST(out.back().find("3 timed out") != std::string::npos, out.back());
}

BOOST_AUTO_TEST_CASE(each_kind_of_stranger_has_its_own_reason) {
  BOOST_TEST(rejection_log::reason_of("handshake failed: bad hello magic (not a dsgd peer)") == "not a dsgd peer");
  BOOST_TEST(rejection_log::reason_of("handshake failed: peer closed the connection after the proofs (it rejected "
                                      "our token: a wrong cluster token?)") == "wrong token");
  BOOST_TEST(rejection_log::reason_of("handshake failed: peer speaks protocol version 3, this side speaks 2") ==
             "wrong version");
  BOOST_TEST(rejection_log::reason_of("handshake failed: unknown peer identity 'worker:7'") == "unknown peer");
  BOOST_TEST(rejection_log::reason_of("handshake failed: peer closed the connection before its hello") ==
             "closed before its hello");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
