// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// model::blas<D>: the matrix product the models use, one specialisation per device. This one
/// is the CPU's (CBLAS); device::cuda's lives in <dsgd/model/cublas.cuh>. Also which kernels
/// OpenBLAS runs, and use_cpu_blas_kernels(), which makes it run those the CPU supports where its
/// own detection fell back to old ones (a virtual machine that hides the CPU's model).
#pragma once

#include <dsgd/device/cpu.hpp>

#include <cblas.h>

#if defined(__linux__)
#include <unistd.h>
#endif

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <string_view>

namespace dsgd::model {

namespace detail {
template <class>
inline constexpr bool dependent_false = false;
}  // namespace detail

/// Row-major single-precision GEMM on device @p D:
/// `C = alpha * op(A) * op(B) + beta * C`, with op(A) m x k, op(B) k x n and C m x n, all
/// pointers into @p D's memory.
///
/// If you get the static_assert below, no specialisation exists for your device: for
/// device::cuda include <dsgd/model/cublas.cuh>; docs/policies.md shows how to add one.
template <class D>
struct blas {
  static_assert(detail::dependent_false<D>,
                "dsgd::model::blas has no specialisation for this device (for device::cuda "
                "include <dsgd/model/cublas.cuh>)");
};

/// CBLAS (OpenBLAS when available) on the host.
template <>
struct blas<device::cpu> {
  /// `C = alpha * op(A) * op(B) + beta * C`, row-major; op(X) is X transposed when the flag is set.
  /// @param lda, ldb, ldc row strides of A, B and C as stored (before any transposition).
  static void gemm(const device::cpu&, bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                   int lda, const float* b, int ldb, float beta, float* c, int ldc) noexcept {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha,
                a, lda, b, ldb, beta, c, ldc);
  }
};

/// Sets how many threads one BLAS call may use (OpenBLAS only; a no-op otherwise). With several
/// replicas each calling BLAS from its own thread, 1 avoids oversubscribing the cores.
inline void set_blas_threads(int threads) noexcept {
#if defined(DSGD_HAS_OPENBLAS)
  openblas_set_num_threads(threads < 1 ? 1 : threads);
#else
  (void)threads;
#endif
}

/// @returns which BLAS runs the models' matrix products and, for OpenBLAS, the kernels it chose
/// for this CPU when it loaded (e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Cooperlake
/// MAX_THREADS=64, Cooperlake kernels"; OPENBLAS_CORETYPE overrides the choice), so that a
/// figure can say what computed it.
inline std::string blas_description() {
#if defined(DSGD_HAS_OPENBLAS)
  return std::string(openblas_get_config()) + ", " + openblas_get_corename() + " kernels";
#else
  return "CBLAS";
#endif
}

/// @returns the OPENBLAS_CORETYPE that runs the kernels this CPU supports, where OpenBLAS chose
/// kernels without AVX2 on a CPU with AVX2 and FMA (Haswell's) or AVX-512 (SkylakeX's), and
/// OPENBLAS_CORETYPE is unset; "" otherwise (OpenBLAS's choice stands, or another BLAS).
///
/// OpenBLAS's DYNAMIC_ARCH picks its kernels from the CPU's family and model numbers. A virtual
/// machine that reports a generic model ("Intel(R) Xeon(R) Processor") gets its oldest x86-64
/// kernels, Prescott's (SSE3): on an AVX-512 Xeon the Wide & Deep MLP's step then takes 4x as
/// long as with its SkylakeX kernels (docs/ctr.md). Only a choice without AVX2 is replaced: where
/// OpenBLAS picked AVX2 or AVX-512 kernels itself (Haswell, Zen, SkylakeX, Cooperlake, ...) it knew
/// the CPU.
inline std::string better_blas_coretype() {
#if defined(DSGD_HAS_OPENBLAS) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (const char* set = std::getenv("OPENBLAS_CORETYPE"); set && *set) return {};
  std::string core = openblas_get_corename();
  std::transform(core.begin(), core.end(), core.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  for (std::string_view modern : {"haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"})
    if (core == modern) return {};
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return {};
}

/// Where better_blas_coretype() names kernels, runs this program again in place (execv of
/// /proc/self/exe with @p argv, the same process id) with OPENBLAS_CORETYPE set to them:
/// OpenBLAS reads the variable once, when it loads, so a process cannot change its kernels
/// after it started. Call it first thing in main(), before any thread or connection. Returns
/// when nothing is to change, or when the exec fails (the program goes on with OpenBLAS's
/// choice). dsgd-train and dsgd-ctr call it.
inline void use_cpu_blas_kernels([[maybe_unused]] char** argv) {
#if defined(__linux__)
  const std::string core = better_blas_coretype();
  if (core.empty() || setenv("OPENBLAS_CORETYPE", core.c_str(), 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_CORETYPE");  // the exec failed: go on as started
#endif
}

/// @returns how many threads one BLAS call uses (1 when the BLAS does not say).
inline int blas_threads() noexcept {
#if defined(DSGD_HAS_OPENBLAS)
  return openblas_get_num_threads();
#else
  return 1;
#endif
}

}  // namespace dsgd::model
