// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// CUDA runtime status codes as error_codes, and the throw helper every CUDA call goes through.
// IWYU pragma: private, include <dsgd/device/cuda.cuh>
#pragma once

#include <dsgd/error.hpp>

#include <cuda_runtime_api.h>

#include <string>

namespace dsgd::device::detail {

/// The error category of cudaError_t values: name "cuda", messages from cudaGetErrorString.
class cuda_category_impl final : public boost::system::error_category {
 public:
  using boost::system::error_category::message;
  const char* name() const noexcept override { return "cuda"; }
  std::string message(int ev) const override { return cudaGetErrorString(static_cast<cudaError_t>(ev)); }
};

/// @returns the category of cudaError_t values (a function-local static keeps it header-only).
inline const boost::system::error_category& cuda_category() noexcept {
  static const cuda_category_impl instance;
  return instance;
}

/// Throws dsgd::error (a boost::system::system_error) carrying @p status in cuda_category()
/// when @p status is not cudaSuccess; @p what names the call that failed.
///
/// The sticky "last error" of the runtime is cleared first, so one failure is reported once.
inline void throw_on_cuda_error(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  (void)cudaGetLastError();
  throw error(error_code(static_cast<int>(status), cuda_category()), what);
}

}  // namespace dsgd::device::detail
