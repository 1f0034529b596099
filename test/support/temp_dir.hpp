// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// A scratch directory per test, and whole-file reads, for the tests that write files.
#pragma once

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <system_error>

#include <unistd.h>

namespace dsgd::test {

/// A directory under the system's temporary directory that no other test or process uses (its
/// name: @p prefix, the process id, a counter), empty at the start (created when @p create;
/// otherwise left for the code under test to create) and removed with its contents at the end.
class temp_dir {
 public:
  explicit temp_dir(std::string_view prefix, bool create = true) {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           (std::string(prefix) + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    if (create) std::filesystem::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  std::filesystem::path path;
};

/// The bytes of file @p p (empty when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

}  // namespace dsgd::test
