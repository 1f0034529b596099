// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/version.hpp>: version() agrees with the macros and with the version the
// CMake project declares (DSGD_TEST_PROJECT_VERSION, set in test/CMakeLists.txt).
#include <dsgd/version.hpp>

#include <boost/test/unit_test.hpp>

#include <string>

static_assert(dsgd::version().major == DSGD_VERSION_MAJOR);
static_assert(dsgd::version().minor == DSGD_VERSION_MINOR);
static_assert(dsgd::version().patch == DSGD_VERSION_PATCH);

BOOST_AUTO_TEST_SUITE(version)

BOOST_AUTO_TEST_CASE(the_headers_version_is_the_projects) {
  constexpr auto v = dsgd::version();
  const std::string dotted = std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
  BOOST_TEST(dotted == DSGD_TEST_PROJECT_VERSION);
}

BOOST_AUTO_TEST_SUITE_END()
