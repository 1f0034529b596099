// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/device/cuda.cuh>, and the device-generic code (tensors, initialisers,
// elementwise ops, optimizers, gradient means) run on device::cuda against device::cpu.
#include <dsgd/device/cuda.cuh>

#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/optim/mean.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/tensor/ops.hpp>
#include <dsgd/tensor/tensor.hpp>

#include "gpu_or_skip.hpp"

#include <support/reference_optim.hpp>
#include <support/scaled_error.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

using cpu = dsgd::device::cpu;
// Not `cuda`: under nvcc, libcu++ owns the global namespace ::cuda.
using cuda_device = dsgd::device::cuda;

static_assert(dsgd::Device<cuda_device>);
static_assert(!cuda_device::is_host);
static_assert(std::is_same_v<cuda_device::vector<float>, thrust::device_vector<float>>);
static_assert(dsgd::Optimizer<dsgd::optim::sgd, cuda_device>);
static_assert(dsgd::Optimizer<dsgd::optim::momentum, cuda_device>);
static_assert(dsgd::Optimizer<dsgd::optim::adagrad, cuda_device>);
static_assert(dsgd::Optimizer<dsgd::optim::adam, cuda_device>);

namespace {

using dsgd::test::max_scaled_error;
using dsgd::test::random_values;

bool is_cuda_error(const dsgd::error& e, cudaError_t expected) {
  return e.code().category().name() == std::string("cuda") && e.code().value() == int(expected);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(device_cuda)

BOOST_AUTO_TEST_CASE(a_device_is_named_by_its_index_and_starts_on_the_legacy_stream) {
  BOOST_TEST(cuda_device::count() > 0);
  BOOST_TEST(cuda_device{}.name() == "cuda:0");
  BOOST_TEST(cuda_device(3).name() == "cuda:3");
  BOOST_TEST(cuda_device(3).index() == 3);
  BOOST_TEST(cuda_device{}.stream() == cudaStream_t{});
  BOOST_TEST((cuda_device{} == cuda_device(0)));
  BOOST_TEST(!(cuda_device(0) == cuda_device(1)));
}

BOOST_AUTO_TEST_CASE(copies_share_the_stream_a_device_created) {
  cuda_device a = cuda_device::with_new_stream(0);
  cuda_device b = a;
  BOOST_TEST(a.stream() != cudaStream_t{});
  BOOST_TEST(b.stream() == a.stream());
  BOOST_TEST((a == b));
  BOOST_TEST(!(a == cuda_device(0)));
  BOOST_TEST(!(a == cuda_device::with_new_stream(0)));
  BOOST_CHECK_NO_THROW(b.synchronize());
}

BOOST_AUTO_TEST_CASE(a_gpu_that_does_not_exist_is_a_cuda_error) {
  cuda_device missing(cuda_device::count());
  BOOST_TEST(missing.name() == "cuda:" + std::to_string(cuda_device::count()));
  auto invalid_device = [](const dsgd::error& e) { return is_cuda_error(e, cudaErrorInvalidDevice); };
  BOOST_CHECK_EXCEPTION(missing.synchronize(), dsgd::error, invalid_device);
  BOOST_CHECK_EXCEPTION(missing.activate(), dsgd::error, invalid_device);
  BOOST_CHECK_EXCEPTION(cuda_device::with_new_stream(cuda_device::count()), dsgd::error, invalid_device);
  // A failed call leaves no sticky error behind: the next one succeeds.
  BOOST_CHECK_NO_THROW(cuda_device{}.synchronize());
}

BOOST_AUTO_TEST_CASE(throw_on_cuda_error_names_the_call_and_the_cuda_message) {
  BOOST_CHECK_NO_THROW(dsgd::device::detail::throw_on_cuda_error(cudaSuccess, "nothing"));
  try {
    dsgd::device::detail::throw_on_cuda_error(cudaErrorMemoryAllocation, "cudaMalloc of w");
    BOOST_FAIL("no exception");
  } catch (const dsgd::error& e) {
    BOOST_TEST(is_cuda_error(e, cudaErrorMemoryAllocation));
    const std::string what = e.what();
    BOOST_TEST(what.find("cudaMalloc of w") != std::string::npos, what);
    BOOST_TEST(what.find(cudaGetErrorString(cudaErrorMemoryAllocation)) != std::string::npos, what);
  }
}

BOOST_AUTO_TEST_CASE(kernels_on_a_new_stream_are_done_before_to_host_reads) {
  // A large update queued without waiting: to_host() runs on the legacy default stream, which
  // the device's blocking stream is ordered with (see the stream notes in cuda.cuh).
  cuda_device gpu = cuda_device::with_new_stream(0);
  constexpr std::size_t n = std::size_t{1} << 24;
  dsgd::tensor<cuda_device> w(gpu, {n}, dsgd::init::constant{1.f});
  dsgd::tensor<cuda_device> g(gpu, {n}, dsgd::init::constant{2.f});
  dsgd::optim::sgd opt{0.25f};
  dsgd::optim::sgd::state<cuda_device> s(gpu, n);
  for (int step = 0; step < 4; ++step) opt.apply(gpu, s, w.data(), g.data(), n);
  auto h = w.to_host();
  BOOST_TEST(h.front() == -1.f);
  BOOST_TEST(h[n / 2] == -1.f);
  BOOST_TEST(h.back() == -1.f);
}

BOOST_AUTO_TEST_CASE(copy_peer_copies_between_streams_and_gpus) {
  const int last = cuda_device::count() - 1;  // a second GPU when there is one, else GPU 0 again
  cuda_device from = cuda_device::with_new_stream(0);
  cuda_device to = cuda_device::with_new_stream(last);
  const auto values = random_values(100003, 1);
  from.activate();
  dsgd::tensor<cuda_device> a(from, {values.size()});
  a.assign(values);
  to.activate();
  dsgd::tensor<cuda_device> b(to, {values.size()});
  dsgd::device::copy_peer(from, a.storage(), to, b.storage());
  to.synchronize();
  BOOST_TEST(b.to_host() == values, boost::test_tools::per_element());

  dsgd::tensor<cuda_device> shorter(to, {values.size() - 1});
  BOOST_CHECK_EXCEPTION(dsgd::device::copy_peer(from, a.storage(), to, shorter.storage()), dsgd::error,
                        [](const dsgd::error& e) { return e.code() == dsgd::errc::shape_mismatch; });
  cuda_device{}.activate();
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tensor_on_cuda)

BOOST_AUTO_TEST_CASE(a_tensor_goes_to_the_gpu_and_back_unchanged) {
  dsgd::tensor<cpu> host({}, {37, 11}, dsgd::init::normal{0.f, 1.f, 5});
  auto on_gpu = host.to(cuda_device{});
  BOOST_TEST(on_gpu.shape().to_string() == host.shape().to_string());
  BOOST_TEST(on_gpu.to_host() == host.to_host(), boost::test_tools::per_element());
  auto back = on_gpu.to(cpu{});
  BOOST_TEST(back.to_host() == host.to_host(), boost::test_tools::per_element());
  auto twin = on_gpu.to(cuda_device::with_new_stream(0));
  BOOST_TEST(twin.to_host() == host.to_host(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(seeded_initialisers_give_the_same_tensor_on_cpu_and_cuda) {
  const dsgd::shape s{129, 65};
  auto same = [&](auto init) {
    dsgd::tensor<cpu> a({}, s, init);
    dsgd::tensor<cuda_device> b(cuda_device{}, s, init);
    return a.to_host() == b.to_host();
  };
  BOOST_TEST(same(dsgd::init::zeros{}));
  BOOST_TEST(same(dsgd::init::constant{-3.5f}));
  BOOST_TEST(same(dsgd::init::uniform{-0.5f, 2.f, 11}));
  BOOST_TEST(same(dsgd::init::normal{1.f, 3.f, 12}));
  BOOST_TEST(same(dsgd::init::glorot_uniform{129, 65, 13}));
}

BOOST_AUTO_TEST_CASE(elementwise_ops_on_cuda_match_cpu) {
  // The source article's example: w (all 2) and b (all 5), w + b and w * b on the GPU.
  dsgd::tensor<cuda_device> w(cuda_device{}, {2, 2}, dsgd::init::constant{2.f});
  dsgd::tensor<cuda_device> b(cuda_device{}, {2, 2}, dsgd::init::constant{5.f});
  BOOST_TEST(dsgd::to_string(w + b) == "[[7. 7.]\n [7. 7.]]");
  BOOST_TEST(dsgd::to_string(w * b) == "[[10. 10.]\n [10. 10.]]");

  const dsgd::shape s{1000};
  dsgd::tensor<cpu> x({}, s, dsgd::init::normal{0.f, 1.f, 1});
  dsgd::tensor<cpu> y({}, s, dsgd::init::uniform{1.f, 2.f, 2});
  auto gx = x.to(cuda_device{}), gy = y.to(cuda_device{});
  BOOST_TEST((gx + gy).to_host() == (x + y).to_host(), boost::test_tools::per_element());
  BOOST_TEST((gx - gy).to_host() == (x - y).to_host(), boost::test_tools::per_element());
  BOOST_TEST((gx * gy).to_host() == (x * y).to_host(), boost::test_tools::per_element());
  BOOST_TEST((gx / gy).to_host() == (x / y).to_host(), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(optim_on_cuda)

using optimizers = std::tuple<dsgd::optim::sgd, dsgd::optim::momentum, dsgd::optim::adagrad, dsgd::optim::adam>;

BOOST_AUTO_TEST_CASE_TEMPLATE(steps_on_cuda_match_steps_on_cpu, O, optimizers) {
  constexpr std::size_t n = 4099;
  const O opt{};
  const cuda_device gpu = cuda_device::with_new_stream(0);
  auto w_cpu = random_values(n, 1);
  cuda_device::vector<float> w_gpu(w_cpu.begin(), w_cpu.end());
  typename O::template state<cpu> s_cpu(cpu{}, n);
  typename O::template state<cuda_device> s_gpu(gpu, n);
  for (unsigned step = 0; step < 5; ++step) {
    auto g = random_values(n, 100 + step, -2.f, 2.f);
    cuda_device::vector<float> g_gpu(g.begin(), g.end());
    opt.apply(cpu{}, s_cpu, w_cpu.data(), g.data(), n, 0.5f);
    opt.apply(gpu, s_gpu, thrust::raw_pointer_cast(w_gpu.data()), thrust::raw_pointer_cast(g_gpu.data()), n, 0.5f);
    gpu.synchronize();
    std::vector<float> w_back(n);
    thrust::copy(w_gpu.begin(), w_gpu.end(), w_back.begin());
    // nvcc contracts a * b + c into one fused multiply-add, the host does not: a few ulps apart.
    BOOST_TEST(max_scaled_error(w_back, w_cpu) <= 1e-6, "step " << step);
  }
}

BOOST_AUTO_TEST_CASE(mean_of_and_accumulate_on_cuda_match_cpu_exactly) {
  constexpr std::size_t n = 1001;
  for (std::size_t k : {1u, 3u, 11u}) {  // 11 takes two passes of the fused kernel
    std::vector<std::vector<float>> host;
    std::vector<cuda_device::vector<float>> gpu;
    std::vector<const float*> host_ptrs, gpu_ptrs;
    for (std::size_t j = 0; j < k; ++j) {
      host.push_back(random_values(n, unsigned(7 * k + j)));
      gpu.emplace_back(host.back().begin(), host.back().end());
    }
    for (std::size_t j = 0; j < k; ++j) {
      host_ptrs.push_back(host[j].data());
      gpu_ptrs.push_back(thrust::raw_pointer_cast(gpu[j].data()));
    }
    std::vector<float> mean_cpu(n);
    cuda_device::vector<float> mean_gpu(n);
    dsgd::optim::mean_of(cpu{}, mean_cpu.data(), std::span<const float* const>(host_ptrs), n);
    dsgd::optim::mean_of(cuda_device{}, thrust::raw_pointer_cast(mean_gpu.data()),
                         std::span<const float* const>(gpu_ptrs), n);
    cuda_device{}.synchronize();
    std::vector<float> back(n);
    thrust::copy(mean_gpu.begin(), mean_gpu.end(), back.begin());
    // Same additions in the same order, then one multiplication: nothing for nvcc to fuse.
    BOOST_TEST(back == mean_cpu, boost::test_tools::per_element());

    dsgd::optim::accumulate(cpu{}, mean_cpu.data(), host_ptrs[0], n);
    dsgd::optim::accumulate(cuda_device{}, thrust::raw_pointer_cast(mean_gpu.data()), gpu_ptrs[0], n);
    cuda_device{}.synchronize();
    thrust::copy(mean_gpu.begin(), mean_gpu.end(), back.begin());
    BOOST_TEST(back == mean_cpu, boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_SUITE_END()
