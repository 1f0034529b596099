// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/model/cublas.cuh>: cuBLAS products against the CPU's CBLAS, and the MLP's
// forward and backward pass on device::cuda against device::cpu.
#include <dsgd/model/cublas.cuh>

#include <dsgd/device/cpu.hpp>
#include <dsgd/device/cuda.cuh>
#include <dsgd/model/blas.hpp>
#include <dsgd/model/mlp.hpp>

#include "gpu_or_skip.hpp"

#include <support/reference_optim.hpp>
#include <support/scaled_error.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using cpu = dsgd::device::cpu;
// Not `cuda`: under nvcc, libcu++ owns the global namespace ::cuda.
using cuda_device = dsgd::device::cuda;

namespace {

using dsgd::test::max_scaled_error;
using dsgd::test::random_values;

std::vector<float> to_host(const cuda_device::vector<float>& v) {
  std::vector<float> out(v.size());
  thrust::copy(v.begin(), v.end(), out.begin());
  return out;
}

// max |a - b| / max |b|: the error relative to the tensor's scale (gradients are mostly small).
double max_relative_to_scale(const std::vector<float>& a, const std::vector<float>& b) {
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  BOOST_REQUIRE(scale > 0);
  return diff / scale;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(model_cublas)

BOOST_AUTO_TEST_CASE(gemm_on_cuda_matches_cblas_for_every_transposition_and_stride) {
  constexpr int m = 37, n = 29, k = 53;
  const float alpha = 0.75f, beta = -0.5f;
  const cuda_device gpu = cuda_device::with_new_stream(0);
  unsigned seed = 1;
  for (bool trans_a : {false, true}) {
    for (bool trans_b : {false, true}) {
      for (int pad : {0, 3}) {
        // Stored shapes before transposition: A is m x k or k x m, B is k x n or n x k.
        const int a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
        const int b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
        const int lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
        const auto a = random_values(std::size_t(a_rows) * lda, seed++);
        const auto b = random_values(std::size_t(b_rows) * ldb, seed++);
        auto c_cpu = random_values(std::size_t(m) * ldc, seed++);
        cuda_device::vector<float> a_gpu(a.begin(), a.end()), b_gpu(b.begin(), b.end());
        cuda_device::vector<float> c_gpu(c_cpu.begin(), c_cpu.end());

        dsgd::model::blas<cpu>::gemm(cpu{}, trans_a, trans_b, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta,
                                     c_cpu.data(), ldc);
        dsgd::model::blas<cuda_device>::gemm(
            gpu, trans_a, trans_b, m, n, k, alpha, thrust::raw_pointer_cast(a_gpu.data()), lda,
            thrust::raw_pointer_cast(b_gpu.data()), ldb, beta, thrust::raw_pointer_cast(c_gpu.data()), ldc);
        gpu.synchronize();
        // Padding columns are compared too: neither library may write them.
        BOOST_TEST(max_scaled_error(to_host(c_gpu), c_cpu) <= 1e-5,
                   "trans_a=" << trans_a << " trans_b=" << trans_b << " pad=" << pad);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_stride_smaller_than_a_row_is_a_cublas_error_that_names_it) {
  constexpr int m = 4, n = 5, k = 6;
  cuda_device::vector<float> a(m * k), b(k * n), c(m * n);
  try {
    dsgd::model::blas<cuda_device>::gemm(cuda_device{}, false, false, m, n, k, 1.f, thrust::raw_pointer_cast(a.data()),
                                         k, thrust::raw_pointer_cast(b.data()), n - 1, 0.f,
                                         thrust::raw_pointer_cast(c.data()), n);
    BOOST_FAIL("no exception");
  } catch (const dsgd::error& e) {
    BOOST_TEST(e.code().category().name() == std::string("cublas"));
    BOOST_TEST(e.code().value() == int(CUBLAS_STATUS_INVALID_VALUE));
    BOOST_TEST(std::string(e.what()).find("ldb=4") != std::string::npos, e.what());
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(model_mlp_on_cuda)

BOOST_AUTO_TEST_CASE(forward_backward_on_cuda_matches_cpu) {
  constexpr std::size_t batch = 64;
  const dsgd::model::mlp<cpu>::config shape_cpu{.seed = 9};  // 784-256-128-10
  const dsgd::model::mlp<cuda_device>::config shape_gpu{.seed = 9};
  dsgd::model::mlp<cpu> on_cpu(cpu{}, shape_cpu);
  dsgd::model::mlp<cuda_device> on_gpu(cuda_device::with_new_stream(0), shape_gpu);
  BOOST_REQUIRE_EQUAL(on_cpu.parameters().size(), on_gpu.parameters().size());
  for (std::size_t i = 0; i < on_cpu.parameters().size(); ++i)
    BOOST_TEST(on_gpu.parameters()[i].to_host() == on_cpu.parameters()[i].to_host(),
               on_cpu.names()[i] << " starts different");

  std::vector<float> images(batch * on_cpu.inputs());
  std::mt19937 g(4);
  std::uniform_real_distribution<float> pixel(0.f, 1.f);
  for (auto& x : images) x = pixel(g);
  std::vector<std::int32_t> labels(batch);
  for (std::size_t i = 0; i < batch; ++i) labels[i] = std::int32_t(g() % on_cpu.outputs());

  const float loss_cpu = on_cpu.forward_backward(images.data(), labels.data(), batch);
  const float loss_gpu = on_gpu.forward_backward(images.data(), labels.data(), batch);
  BOOST_TEST(loss_gpu == loss_cpu, boost::test_tools::tolerance(1e-5f));
  for (std::size_t i = 0; i < on_cpu.gradients().size(); ++i)
    BOOST_TEST(max_relative_to_scale(on_gpu.gradients()[i].to_host(), on_cpu.gradients()[i].to_host()) <= 1e-4,
               on_cpu.names()[i]);
}

BOOST_AUTO_TEST_SUITE_END()
