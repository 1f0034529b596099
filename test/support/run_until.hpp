// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support: drives an io_context from the test's thread until a condition holds, with a
// deadline, so that a test of asynchronous code never hangs.
#pragma once

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>

namespace dsgd::test {

// Runs @p ioc until @p done() holds; false if @p limit passes first.
inline bool run_until(boost::asio::io_context& ioc, const std::function<bool()>& done,
                      std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    ioc.restart();
    ioc.run_one_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace dsgd::test
