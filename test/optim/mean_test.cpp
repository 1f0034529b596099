// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/optim/mean.hpp>: accumulate and mean_of against the scalar reference in
// support/reference_optim.hpp.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/mean.hpp>

#include <support/reference_optim.hpp>

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(optim_mean_test)

namespace {

namespace tt = boost::test_tools;
using cpu = dsgd::device::cpu;

using dsgd::test::random_values;

std::vector<std::vector<float>> random_inputs(std::size_t k, std::size_t n, std::uint32_t seed) {
  std::vector<std::vector<float>> inputs;
  for (std::size_t j = 0; j < k; ++j) inputs.push_back(random_values(n, seed + std::uint32_t(j)));
  return inputs;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(optim_mean_on_cpu)

BOOST_AUTO_TEST_CASE(mean_of_k_arrays_matches_the_scalar_reference) {
  constexpr std::size_t n = 3001;
  // 8 is one full pass, 11 needs a second pass over the remaining 3 arrays.
  for (std::size_t k : {1u, 3u, 8u, 11u, 17u}) {
    BOOST_TEST_CONTEXT("k = " << k) {
      const auto inputs = random_inputs(k, n, 100 * std::uint32_t(k));
      std::vector<const float*> pointers;
      for (const auto& in : inputs) pointers.push_back(in.data());
      std::vector<float> out(n, 12345.f);  // garbage the first pass must overwrite
      dsgd::optim::mean_of(cpu{}, out.data(), std::span<const float* const>(pointers), n);
      BOOST_TEST(out == dsgd::test::reference_mean(inputs), tt::tolerance(1e-6f) << tt::per_element());
      if (k == 1) BOOST_TEST(out == inputs[0], tt::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(mean_of_three_known_arrays) {
  const std::vector<float> a{1.f, -3.f}, b{2.f, 0.f}, c{6.f, 0.f};
  const float* inputs[] = {a.data(), b.data(), c.data()};
  std::vector<float> out(2);
  dsgd::optim::mean_of(cpu{}, out.data(), inputs, 2);
  BOOST_TEST(out == (std::vector<float>{3.f, -1.f}), tt::tolerance(1e-7f) << tt::per_element());
}

BOOST_AUTO_TEST_CASE(the_mean_of_no_arrays_is_an_error) {
  std::vector<float> out(4, 7.f);
  BOOST_CHECK_EXCEPTION(dsgd::optim::mean_of(cpu{}, out.data(), std::span<const float* const>{}, out.size()),
                        dsgd::error, [](const dsgd::error& e) {
                          return e.code() == dsgd::errc::invalid_argument &&
                                 std::string(e.what()).find("k = 0") != std::string::npos;
                        });
  BOOST_TEST(out == std::vector<float>(4, 7.f), tt::per_element());
}

BOOST_AUTO_TEST_CASE(accumulate_adds_in_place_and_scaled_sums_give_the_mean) {
  constexpr std::size_t n = 1025, k = 5;
  const auto inputs = random_inputs(k, n, 7);
  std::vector<float> acc(n, 0.f);
  for (const auto& g : inputs) dsgd::optim::accumulate(cpu{}, acc.data(), g.data(), n);
  std::vector<float> expected(n, 0.f);
  for (const auto& g : inputs)
    for (std::size_t i = 0; i < n; ++i) expected[i] += g[i];
  BOOST_TEST(acc == expected, tt::per_element());  // same additions in the same order
  for (float& x : acc) x /= float(k);
  BOOST_TEST(acc == dsgd::test::reference_mean(inputs), tt::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
