// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/error.hpp>: errc as error codes of the "dsgd" category, a message for every
// condition, and dsgd::error keeping its message exactly as given.
#include <dsgd/error.hpp>

#include <boost/test/unit_test.hpp>

#include <set>
#include <string>

BOOST_AUTO_TEST_SUITE(error_test)

BOOST_AUTO_TEST_SUITE(error)

BOOST_AUTO_TEST_CASE(an_errc_is_an_error_code_of_the_dsgd_category) {
  const dsgd::error_code ec = dsgd::errc::timed_out;  // is_error_code_enum
  BOOST_TEST(ec.category().name() == std::string("dsgd"));
  BOOST_TEST(&ec.category() == &dsgd::category());
  BOOST_TEST(ec.value() == static_cast<int>(dsgd::errc::timed_out));
  BOOST_TEST((ec == dsgd::errc::timed_out));
  BOOST_TEST((ec != dsgd::errc::peer_lost));
  BOOST_TEST(ec.message() == "timed out");
  BOOST_TEST(!dsgd::make_error_code(dsgd::errc::ok));
}

BOOST_AUTO_TEST_CASE(every_condition_has_its_own_message) {
  std::set<std::string> seen;
  for (int v = static_cast<int>(dsgd::errc::ok); v <= static_cast<int>(dsgd::errc::aborted); ++v) {
    const std::string m = dsgd::category().message(v);
    BOOST_TEST_CONTEXT("errc " << v) {
      BOOST_TEST(m != "unknown dsgd error");
      BOOST_TEST(seen.insert(m).second);
    }
  }
  BOOST_TEST(dsgd::category().message(static_cast<int>(dsgd::errc::aborted) + 1) == "unknown dsgd error");
  BOOST_TEST(dsgd::category().message(static_cast<int>(dsgd::errc::aborted)) == "session aborted");
}

BOOST_AUTO_TEST_CASE(what_is_the_message_exactly_as_given) {
  const std::string msg = "bad device string \"cuda:x\" at column 5\n  cuda:x\n       ^";
  try {
    throw dsgd::error(dsgd::errc::bad_device_string, msg);
  } catch (const boost::system::system_error& e) {  // dsgd::error is a system_error
    BOOST_TEST(e.what() == msg);
    BOOST_TEST((e.code() == dsgd::errc::bad_device_string));
  }
}

BOOST_AUTO_TEST_CASE(an_error_can_carry_another_category) {
  const dsgd::error e(boost::system::errc::make_error_code(boost::system::errc::connection_refused),
                      "connecting to ps:0");
  BOOST_TEST(e.what() == std::string("connecting to ps:0"));
  BOOST_TEST((e.code() == boost::system::errc::connection_refused));
  BOOST_TEST(&e.code().category() != &dsgd::category());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
