// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support: checks that a call fails with a given dsgd::errc and a message that names what
// was wrong and where (for parsers: the quoted input and a caret under the offending column).
#pragma once

#include <dsgd/error.hpp>

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

namespace dsgd::test {

// Runs `f`, which must throw dsgd::error with `code`; returns the message ("" if it did not).
template <class F>
std::string error_of(F&& f, errc code) {
  try {
    f();
    BOOST_ERROR("expected a dsgd::error, nothing was thrown");
  } catch (const error& e) {
    BOOST_TEST_MESSAGE(e.what());
    BOOST_TEST((e.code() == code));
    return e.what();
  }
  return {};
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Whether `f` throws dsgd::error with `code` and a message holding every one of `parts` (the
// message of another error goes to the test log).
template <class F>
bool throws_named(F&& f, errc code, std::initializer_list<std::string> parts) {
  try {
    f();
  } catch (const error& e) {
    bool ok = e.code() == code;
    for (const auto& p : parts) ok = ok && contains(e.what(), p);
    if (!ok) BOOST_TEST_MESSAGE("unexpected error: " << e.what());
    return ok;
  }
  BOOST_TEST_MESSAGE("no error");
  return false;
}

// Column of the caret on the message's last line (the echoed string is indented by two spaces).
inline std::size_t caret_column(const std::string& msg) {
  const auto line = msg.substr(msg.rfind('\n') + 1);
  return line.find('^') - 2;
}

// Checks that parse(text) fails with errc::bad_device_string, quotes the text, names the
// column both in words and with the caret, and explains itself with `reason`.
template <class Parse>
void check_rejected(Parse parse, std::string_view text, std::size_t column, std::string_view reason) {
  BOOST_TEST_CONTEXT("device string \"" << text << "\"") {
    const std::string msg = error_of([&] { (void)parse(text); }, errc::bad_device_string);
    BOOST_TEST(contains(msg, "\"" + std::string(text) + "\""));
    BOOST_TEST(contains(msg, "at column " + std::to_string(column)));
    BOOST_TEST(caret_column(msg) == column);
    BOOST_TEST(contains(msg, std::string(reason)));
  }
}

}  // namespace dsgd::test
