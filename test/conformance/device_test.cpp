// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Conformance of the Device family: every shipped host device models dsgd::Device, a user type
// that models only the concept (no dsgd base, no detail::) works where a device is expected, and
// near-misses are refused (near_miss_device.cpp checks the compiler's message names the concept);
// two workers on a user device, whose memory comes from the user's allocator, train softmax
// regression on Fashion-MNIST with a ps.
#include <dsgd/device/concepts.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/model/blas.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/tensor/tensor.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/sync_average.hpp>

#include "user_policy_cluster.hpp"

#include <boost/test/unit_test.hpp>

#include <cblas.h>

#include <thrust/host_vector.h>
#include <thrust/system/cpp/execution_policy.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <span>
#include <string>

BOOST_AUTO_TEST_SUITE(conformance_device_test)

namespace {

// A user's device, written from the concept's documentation alone: host memory, sequential kernels.
struct my_host {
  template <class T>
  using vector = thrust::host_vector<T>;
  static constexpr bool is_host = true;
  auto policy() const noexcept { return thrust::cpp::par; }
  void synchronize() const noexcept {}
  std::string name() const { return "cpu"; }
};

struct no_policy {  // near-miss: no execution policy
  template <class T>
  using vector = thrust::host_vector<T>;
  static constexpr bool is_host = true;
  void synchronize() const noexcept {}
  std::string name() const { return "cpu"; }
};

struct no_vector {  // near-miss: no storage
  static constexpr bool is_host = true;
  auto policy() const noexcept { return thrust::cpp::par; }
  void synchronize() const noexcept {}
  std::string name() const { return "cpu"; }
};

// A user's device whose memory is the user's own: host memory from an allocator that counts what
// it hands out (a pool, pinned or NUMA-local memory would go here), sequential kernels.
template <class T>
struct counting_allocator {
  using value_type = T;
  static inline std::atomic<std::size_t> bytes{0};  // handed out so far, by every counting_allocator
  counting_allocator() = default;
  template <class U>
  counting_allocator(const counting_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    counting_allocator<char>::bytes += n * sizeof(T);
    return std::allocator<T>{}.allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>{}.deallocate(p, n); }
  friend bool operator==(const counting_allocator&, const counting_allocator&) noexcept { return true; }
};

struct my_memory {
  template <class T>
  using vector = thrust::host_vector<T, counting_allocator<T>>;
  static constexpr bool is_host = true;
  auto policy() const noexcept { return thrust::cpp::par; }
  void synchronize() const noexcept {}
  std::string name() const { return "cpu"; }
};

}  // namespace

// The suite's namespace, closed here and reopened below: a specialisation is declared in dsgd's.
}  // namespace conformance_device_test

// The models' matrix product on the user's device: the CPU's CBLAS, its memory being host memory
// (model::blas is what a model needs of a device beyond the concept; docs/policies.md).
template <>
struct dsgd::model::blas<conformance_device_test::my_memory> {
  static void gemm(const conformance_device_test::my_memory&, bool trans_a, bool trans_b, int m, int n, int k,
                   float alpha, const float* a, int lda, const float* b, int ldb, float beta, float* c,
                   int ldc) noexcept {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha,
                a, lda, b, ldb, beta, c, ldc);
  }
};

namespace conformance_device_test {

static_assert(dsgd::Device<dsgd::device::cpu>);
static_assert(dsgd::Device<my_host>);
static_assert(!dsgd::Device<no_policy>);
static_assert(!dsgd::Device<no_vector>);
static_assert(!dsgd::Device<int>);
static_assert(dsgd::Device<my_memory>);

BOOST_AUTO_TEST_SUITE(conformance_device)

BOOST_AUTO_TEST_CASE(a_user_device_holds_tensors_and_runs_an_optimizer) {
  dsgd::tensor<my_host> w(my_host{}, dsgd::shape{4}, [](std::span<float> v) {
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  });
  my_host::vector<float> g(4, 1.f);
  dsgd::optim::sgd o{0.5f};
  dsgd::optim::sgd::state<my_host> s(my_host{}, 4);
  o.apply(my_host{}, s, w.data(), thrust::raw_pointer_cast(g.data()), 4);
  const auto host = w.to_host();
  BOOST_TEST(host[0] == -0.5f);
  BOOST_TEST(host[3] == 2.5f);
}

// The user's device in a cluster: the workers' model, its parameters and gradients live in the
// user's memory and are exchanged from there, in place (a host device: no staging), and the model
// trains to its accuracy.
BOOST_AUTO_TEST_CASE(two_workers_on_a_user_device_train_softmax_regression_with_a_ps) {
  const auto before = counting_allocator<char>::bytes.load();
  const dsgd::model::softmax_regression<my_memory> probe(my_memory{}, {.seed = 1});
  const std::size_t params_bytes = probe.parameter_count() * sizeof(float);
  BOOST_TEST(counting_allocator<char>::bytes - before >= 2 * params_bytes);  // its parameters and gradients
  const auto o = dsgd::test::user_policy_options<dsgd::placement::round_robin, dsgd::update::sync_average>(
      dsgd::test::decaying_momentum_over(469));
  const auto start = counting_allocator<char>::bytes.load();
  const auto r = dsgd::test::train_softmax(o, 1, my_memory{});
  // Two workers' models (parameters, gradients, activations) were the user's memory.
  BOOST_TEST(counting_allocator<char>::bytes - start >= 2 * 2 * params_bytes);
  BOOST_TEST(r.staged_allocations == 0u);  // exchanged in place, as on device::cpu
  BOOST_TEST(r.steps[0] == r.pushes[0]);
  BOOST_TEST(r.dropped == 0u);
  BOOST_TEST(r.accuracy >= 0.80);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()

// dsgd::trainer (over TCP) takes the user type as is: every member of the trainer compiles with it.
template class dsgd::trainer<conformance_device_test::my_memory>;
