// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Compiler and platform configuration: the few macros dsgd allows itself.
#pragma once

#if __cplusplus < 202002L
#error "dsgd needs C++20 (compile with -std=c++20 or target_compile_features(... cxx_std_20))"
#endif

/// Marks a function callable from host and device code (nvcc); plain inline elsewhere.
#if defined(__CUDACC__)
#define DSGD_HOST_DEVICE __host__ __device__
#else
#define DSGD_HOST_DEVICE
#endif

/// 1 when the translation unit is compiled by nvcc with dsgd's CUDA device available.
#if !defined(DSGD_HAS_CUDA)
#if defined(__CUDACC__)
#define DSGD_HAS_CUDA 1
#else
#define DSGD_HAS_CUDA 0
#endif
#endif

/// Checks an internal invariant in debug builds. Never used for user input: bad input gets a
/// dsgd::error (see error.hpp), not an abort.
#if defined(NDEBUG)
#define DSGD_ASSERT(cond, msg) ((void)0)
#else
#include <cstdio>
#include <cstdlib>
#define DSGD_ASSERT(cond, msg)                                                                                  \
  ((cond) ? (void)0                                                                                             \
          : (std::fprintf(stderr, "%s:%d: dsgd invariant violated: %s (%s)\n", __FILE__, __LINE__, #cond, msg), \
             std::abort()))
#endif
