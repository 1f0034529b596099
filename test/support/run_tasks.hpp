// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support: runs the tasks of a cluster as threads of this process and rethrows the first
// failure once all have ended.
#pragma once

#include <exception>
#include <functional>
#include <thread>
#include <vector>

namespace dsgd::test {

inline void run_tasks(const std::vector<std::function<void()>>& tasks) {
  std::vector<std::exception_ptr> failed(tasks.size());
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < tasks.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        tasks[i]();
      } catch (...) {
        failed[i] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& f : failed)
    if (f) std::rethrow_exception(f);
}

}  // namespace dsgd::test
