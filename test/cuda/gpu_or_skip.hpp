// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// A Boost.Test global fixture for the CUDA tests: without a usable GPU the executable prints
// "no CUDA device: skipped" and exits with DSGD_TEST_SKIP_RETURN_CODE, which test/cuda/
// CMakeLists.txt registers as the test's SKIP_RETURN_CODE, so CTest reports it as skipped
// rather than passed or failed. With DSGD_REQUIRE_GPU=1 in the environment (set by
// run_gpu_checks.sh) a missing GPU is a failure instead.
#pragma once

#include <dsgd/device/cuda.cuh>

#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <cstdlib>
#include <string_view>

#if !defined(DSGD_TEST_SKIP_RETURN_CODE)
#error "test/cuda/CMakeLists.txt defines DSGD_TEST_SKIP_RETURN_CODE"
#endif

namespace dsgd::test {

struct gpu_or_skip {
  gpu_or_skip() {
    if (device::cuda::count() > 0) return;
    const char* require = std::getenv("DSGD_REQUIRE_GPU");
    if (require != nullptr && std::string_view(require) == "1") {
      std::printf("no CUDA device, but DSGD_REQUIRE_GPU=1: failed\n");
      std::fflush(stdout);
      std::exit(EXIT_FAILURE);
    }
    std::printf("no CUDA device: skipped\n");
    std::fflush(stdout);
    std::exit(DSGD_TEST_SKIP_RETURN_CODE);
  }
};

}  // namespace dsgd::test

// The macro pastes its argument into identifiers: it needs an unqualified name.
using dsgd::test::gpu_or_skip;
BOOST_TEST_GLOBAL_FIXTURE(gpu_or_skip);
