// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support: a device that says its memory is not the host's (is_host = false), though it is,
// so that the staging a worker uses for a GPU runs, and can be checked, without one.
#pragma once

#include <dsgd/device/concepts.hpp>

#include <thrust/host_vector.h>
#include <thrust/system/cpp/execution_policy.h>

#include <string>

namespace dsgd::test {

struct off_host {
  template <class T>
  using vector = thrust::host_vector<T>;
  static constexpr bool is_host = false;
  static auto policy() noexcept { return thrust::cpp::par; }
  static void synchronize() noexcept {}
  static std::string name() { return "off_host"; }
  friend constexpr bool operator==(off_host, off_host) noexcept { return true; }
};

static_assert(Device<off_host>);

}  // namespace dsgd::test
