// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// device::cpu: host memory, kernels on Thrust's OpenMP backend (or its sequential C++ backend
/// when the translation unit is compiled without OpenMP).
#pragma once

#include <dsgd/device/concepts.hpp>

#include <thrust/host_vector.h>

#if defined(_OPENMP)
#include <omp.h>
#include <thrust/system/omp/execution_policy.h>
#else
#include <thrust/system/cpp/execution_policy.h>
#endif

#include <string>

namespace dsgd::device {

/// The host CPU. Stateless: all cpu devices are the same device.
///
/// Kernels run on all OpenMP threads (`OMP_NUM_THREADS` or `omp_set_num_threads` choose how
/// many); without OpenMP they run on the calling thread.
struct cpu {
  template <class T>
  using vector = thrust::host_vector<T>;

  static constexpr bool is_host = true;

  /// @returns the Thrust execution policy for kernels on the host.
  static auto policy() noexcept {
#if defined(_OPENMP)
    return thrust::omp::par;
#else
    return thrust::cpp::par;
#endif
  }

  /// Host kernels are synchronous: nothing to wait for.
  static void synchronize() noexcept {}

  /// @returns "cpu".
  static std::string name() { return "cpu"; }

  /// @returns how many threads a kernel on this device uses.
  static int threads() noexcept {
#if defined(_OPENMP)
    return omp_get_max_threads();
#else
    return 1;
#endif
  }

  friend constexpr bool operator==(cpu, cpu) noexcept { return true; }
};

static_assert(Device<cpu>);

}  // namespace dsgd::device
