// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/config.hpp> in a host compiler's translation unit: DSGD_HOST_DEVICE is
// empty, DSGD_HAS_CUDA is 0, and DSGD_ASSERT checks only in debug builds.
#include <dsgd/config.hpp>

#include <boost/test/unit_test.hpp>

BOOST_AUTO_TEST_SUITE(config_test)

static_assert(DSGD_HAS_CUDA == 0, "a host compiler has no dsgd CUDA device");

namespace {

DSGD_HOST_DEVICE int twice(int x) { return 2 * x; }

}  // namespace

BOOST_AUTO_TEST_SUITE(config)

BOOST_AUTO_TEST_CASE(a_host_device_function_is_a_plain_function_on_the_host) { BOOST_TEST(twice(21) == 42); }

BOOST_AUTO_TEST_CASE(an_assert_evaluates_its_condition_only_in_debug_builds) {
  int evaluated = 0;
  DSGD_ASSERT(++evaluated == 1, "evaluated once");
#if defined(NDEBUG)
  BOOST_TEST(evaluated == 0);
#else
  BOOST_TEST(evaluated == 1);
#endif
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
