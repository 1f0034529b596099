// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support: the argument and environment arrays that execve and posix_spawn take, for the
// tests that start programs as child processes.
#pragma once

#include <string>
#include <vector>

namespace dsgd::test {

/// The null-terminated array of pointers to @p strings that execve and posix_spawn take as argv
/// or envp. It points into @p strings, which must outlive it unchanged.
inline std::vector<char*> exec_array(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace dsgd::test
