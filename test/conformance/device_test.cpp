// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Conformance of the Device family: every shipped host device models dsgd::Device, a user type
// that models only the concept (no dsgd base, no detail::) works where a device is expected, and
// near-misses are refused (near_miss_device.cpp checks the compiler's message names the concept).
#include <dsgd/device/concepts.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/tensor/tensor.hpp>

#include <boost/test/unit_test.hpp>

#include <thrust/host_vector.h>
#include <thrust/system/cpp/execution_policy.h>

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

}  // namespace

static_assert(dsgd::Device<dsgd::device::cpu>);
static_assert(dsgd::Device<my_host>);
static_assert(!dsgd::Device<no_policy>);
static_assert(!dsgd::Device<no_vector>);
static_assert(!dsgd::Device<int>);

BOOST_AUTO_TEST_SUITE(conformance_device)

BOOST_AUTO_TEST_CASE(a_user_device_holds_tensors_and_runs_an_optimizer)
{
  dsgd::tensor<my_host> w(my_host{}, dsgd::shape{4}, [](std::span<float> v) { for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(i); });
  my_host::vector<float> g(4, 1.f);
  dsgd::optim::sgd o{0.5f};
  dsgd::optim::sgd::state<my_host> s(my_host{}, 4);
  o.apply(my_host{}, s, w.data(), thrust::raw_pointer_cast(g.data()), 4);
  const auto host = w.to_host();
  BOOST_TEST(host[0] == -0.5f);
  BOOST_TEST(host[3] == 2.5f);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
