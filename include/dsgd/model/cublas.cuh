// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// model::blas<device::cuda>: the models' matrix product on a GPU, through cuBLAS.
#pragma once

#include <dsgd/device/cuda.cuh>
#include <dsgd/error.hpp>
#include <dsgd/model/blas.hpp>

#include <cublas_v2.h>

#include <map>
#include <string>
#include <utility>

namespace dsgd::model {

namespace detail {

/// The error category of cublasStatus_t values: name "cublas", messages from cuBLAS.
class cublas_category_impl final : public boost::system::error_category {
 public:
  using boost::system::error_category::message;
  const char* name() const noexcept override { return "cublas"; }
  std::string message(int ev) const override { return cublasGetStatusString(static_cast<cublasStatus_t>(ev)); }
};

/// @returns the category of cublasStatus_t values.
inline const boost::system::error_category& cublas_category() noexcept {
  static const cublas_category_impl instance;
  return instance;
}

/// Throws dsgd::error in cublas_category() when @p status is not CUBLAS_STATUS_SUCCESS.
inline void throw_on_cublas_error(cublasStatus_t status, const std::string& what) {
  if (status != CUBLAS_STATUS_SUCCESS) throw error(error_code(static_cast<int>(status), cublas_category()), what);
}

/// The calling thread's cuBLAS handles, one per (GPU, stream), each created on first use, bound
/// to its stream for good and destroyed when the thread exits. A handle is not shared between
/// threads (it is not thread-safe) nor between streams (gemms queued on two streams at once
/// would share its workspace). Handles outlive the streams they were made for until the thread
/// exits, so make devices once, not once per step.
class cublas_handles {
 public:
  cublas_handles() = default;
  cublas_handles(const cublas_handles&) = delete;
  cublas_handles& operator=(const cublas_handles&) = delete;
  ~cublas_handles() {
    for (const auto& [key, h] : handles_) (void)cublasDestroy(h);
  }

  /// @returns the handle for @p d's GPU and stream; @p d's GPU must be current.
  cublasHandle_t get(const device::cuda& d) {
    const auto key = std::pair(d.index(), d.stream());
    if (auto it = handles_.find(key); it != handles_.end()) return it->second;
    cublasHandle_t h = nullptr;
    if (const cublasStatus_t status = cublasCreate(&h); status != CUBLAS_STATUS_SUCCESS)
      throw_on_cublas_error(status, "cublasCreate on " + d.name());
    if (const cublasStatus_t status = cublasSetStream(h, d.stream()); status != CUBLAS_STATUS_SUCCESS) {
      (void)cublasDestroy(h);
      throw_on_cublas_error(status, "cublasSetStream on " + d.name());
    }
    handles_.emplace(key, h);
    return h;
  }

 private:
  std::map<std::pair<int, cudaStream_t>, cublasHandle_t> handles_;
};

/// @returns the calling thread's handle for @p d, bound to @p d's stream.
inline cublasHandle_t cublas_handle(const device::cuda& d) {
  thread_local cublas_handles handles;
  return handles.get(d);
}

}  // namespace detail

/// cuBLAS on a GPU, queued on the device's stream (returns without waiting for the product).
///
/// Full FP32 arithmetic (cuBLAS's default math mode, no TF32), so the products agree with the
/// CPU's CBLAS to float rounding.
template <>
struct blas<device::cuda> {
  /// `C = alpha * op(A) * op(B) + beta * C`, row-major; op(X) is X transposed when the flag is set.
  /// @param lda, ldb, ldc row strides of A, B and C as stored (before any transposition).
  /// @throws dsgd::error in cuda_category() if the GPU cannot be selected, or in
  /// cublas_category() if cuBLAS rejects the arguments or fails.
  static void gemm(const device::cuda& d, bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                   int lda, const float* b, int ldb, float beta, float* c, int ldc) {
    d.activate();
    // A row-major matrix read as column-major is its transpose, so row-major C = op(A) op(B)
    // is column-major C^T = op(B)^T op(A)^T: swap the operands and the m/n extents, keep the
    // transposition flags.
    const cublasStatus_t status =
        cublasSgemm(detail::cublas_handle(d), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                    n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc);
    if (status != CUBLAS_STATUS_SUCCESS)
      detail::throw_on_cublas_error(
          status, "cublasSgemm on " + d.name() + " (m=" + std::to_string(m) + ", n=" + std::to_string(n) +
                      ", k=" + std::to_string(k) + ", lda=" + std::to_string(lda) + ", ldb=" + std::to_string(ldb) +
                      ", ldc=" + std::to_string(ldc) + ", trans_a=" + std::to_string(trans_a) +
                      ", trans_b=" + std::to_string(trans_b) + ")");
  }
};

}  // namespace dsgd::model
