// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// model::blas<D>: the matrix product the models use, one specialisation per device. This one
/// is the CPU's (CBLAS); device::cuda's lives in <dsgd/model/cublas.cuh>.
#pragma once

#include <dsgd/device/cpu.hpp>

#include <cblas.h>

#include <string>

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

/// @returns how many threads one BLAS call uses (1 when the BLAS does not say).
inline int blas_threads() noexcept {
#if defined(DSGD_HAS_OPENBLAS)
  return openblas_get_num_threads();
#else
  return 1;
#endif
}

}  // namespace dsgd::model
