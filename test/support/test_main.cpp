// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The Boost.Test runner's entry point, linked into every test executable. The framework itself
// is Boost's compiled library (Boost::unit_test_framework, linked dynamically: BOOST_TEST_DYN_LINK
// comes with dsgd_test_main), so no build compiles its implementation.
#define BOOST_TEST_MODULE dsgd
#include <boost/test/unit_test.hpp>
