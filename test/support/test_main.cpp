// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The Boost.Test runner, compiled once and linked into every test executable.
#define BOOST_TEST_MODULE dsgd
#include <boost/test/included/unit_test.hpp>
