// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/optim/concepts.hpp> over every shipped optimizer: each fused kernel against
// the scalar references in support/reference_optim.hpp, the three maps of each element rule
// (optim/detail/elementwise.hpp) against one another, bit for bit, and the state size check.
// Each optimizer's hand-computed steps are in its own <name>_test.cpp.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/mean.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/sgd.hpp>

#include <support/reference_optim.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(optim_concepts_test)

static_assert(dsgd::Optimizer<dsgd::optim::sgd, dsgd::device::cpu>);
static_assert(dsgd::Optimizer<dsgd::optim::momentum, dsgd::device::cpu>);
static_assert(dsgd::Optimizer<dsgd::optim::adagrad, dsgd::device::cpu>);
static_assert(dsgd::Optimizer<dsgd::optim::adam, dsgd::device::cpu>);
static_assert(!dsgd::Optimizer<int, dsgd::device::cpu>);

namespace {

namespace tt = boost::test_tools;
using cpu = dsgd::device::cpu;
using cpu_vector = cpu::vector<float>;

using dsgd::test::random_values;

std::vector<float> to_std(const cpu_vector& v) { return {v.begin(), v.end()}; }

// Settings under test for each optimizer, each paired with its reference. Values differ from the
// defaults so that a kernel reading the wrong field cannot pass.
template <class O>
struct configurations;

template <>
struct configurations<dsgd::optim::sgd> {
  static auto get() { return std::vector{std::pair{dsgd::optim::sgd{0.05f}, dsgd::test::reference_sgd{0.05f}}}; }
};

template <>
struct configurations<dsgd::optim::momentum> {
  static auto get() {
    using dsgd::optim::momentum;
    using dsgd::test::reference_momentum;
    return std::vector{std::pair{momentum{0.03f, 0.8f, false}, reference_momentum{0.03f, 0.8f, false, {}}},
                       std::pair{momentum{0.03f, 0.8f, true}, reference_momentum{0.03f, 0.8f, true, {}}}};
  }
};

template <>
struct configurations<dsgd::optim::adagrad> {
  static auto get() {
    using dsgd::optim::adagrad;
    using dsgd::test::reference_adagrad;
    return std::vector{std::pair{adagrad{0.1f, 0.25f, 1e-6f}, reference_adagrad{0.1f, 0.25f, 1e-6f, {}}},
                       std::pair{adagrad{}, reference_adagrad{0.01f, 0.1f, 1e-7f, {}}}};
  }
};

template <>
struct configurations<dsgd::optim::adam> {
  static auto get() {
    using dsgd::optim::adam;
    using dsgd::test::reference_adam;
    return std::vector{std::pair{adam{2e-3f, 0.8f, 0.99f, 1e-6f}, reference_adam{2e-3f, 0.8f, 0.99f, 1e-6f, {}, {}, 0}},
                       std::pair{adam{}, reference_adam{1e-3f, 0.9f, 0.999f, 1e-8f, {}, {}, 0}}};
  }
};

using optimizers = std::tuple<dsgd::optim::sgd, dsgd::optim::momentum, dsgd::optim::adagrad, dsgd::optim::adam>;

}  // namespace

BOOST_AUTO_TEST_SUITE(optimizers_on_cpu)

BOOST_AUTO_TEST_CASE_TEMPLATE(every_step_matches_the_scalar_reference, O, optimizers) {
  constexpr std::size_t n = 4099;  // not a multiple of any vector width or thread count
  constexpr int steps = 6;
  std::uint32_t seed = 11;
  for (auto [optimizer, reference] : configurations<O>::get()) {
    for (float grad_scale : {1.f, 0.25f}) {
      BOOST_TEST_CONTEXT("seed " << seed << ", grad_scale " << grad_scale) {
        std::vector<float> expected = random_values(n, seed++, -1.f, 1.f);
        cpu_vector w(expected.begin(), expected.end());
        typename O::template state<cpu> state(cpu{}, n);
        auto ref = reference;
        for (int step = 1; step <= steps; ++step) {
          BOOST_TEST_CONTEXT("step " << step) {
            std::vector<float> grad = random_values(n, seed++, -2.f, 2.f);
            cpu_vector g(grad.begin(), grad.end());
            optimizer.apply(cpu{}, state, thrust::raw_pointer_cast(w.data()), thrust::raw_pointer_cast(g.data()), n,
                            grad_scale);
            ref.step(expected, grad, grad_scale);
            BOOST_TEST(to_std(w) == expected, tt::tolerance(1e-6f) << tt::per_element());
            BOOST_TEST(to_std(g) == grad, tt::per_element());  // the gradient is read-only
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_sum_of_k_gradients_scaled_by_1_over_k_is_the_mean, O, optimizers) {
  // The sync rule's two ways to average: accumulate then apply with grad_scale = 1/k, or
  // mean_of then apply. Both compute (sum in order) * (1/k), so they agree exactly.
  constexpr std::size_t n = 777, k = 3;
  std::vector<std::vector<float>> grads;
  for (std::size_t j = 0; j < k; ++j) {
    grads.push_back(random_values(n, 40 + std::uint32_t(j), -1.f, 1.f));
  }
  std::vector<const float*> pointers;
  for (const auto& g : grads) pointers.push_back(g.data());
  std::vector<float> sum(n, 0.f), mean(n);
  for (const auto& g : grads) dsgd::optim::accumulate(cpu{}, sum.data(), g.data(), n);
  dsgd::optim::mean_of(cpu{}, mean.data(), std::span<const float* const>(pointers), n);

  const auto w0 = random_values(n, 39, -1.f, 1.f);
  auto w_sum = w0, w_mean = w0;
  const O optimizer = configurations<O>::get().front().first;
  typename O::template state<cpu> s_sum(cpu{}, n), s_mean(cpu{}, n);
  for (int step = 0; step < 3; ++step) {
    optimizer.apply(cpu{}, s_sum, w_sum.data(), sum.data(), n, 1.f / float(k));
    optimizer.apply(cpu{}, s_mean, w_mean.data(), mean.data(), n);
  }
  BOOST_TEST(w_sum == w_mean, tt::per_element());
  BOOST_TEST(w_sum != w0);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(an_empty_variable_is_a_no_op, O, optimizers) {
  typename O::template state<cpu> state(cpu{}, 0);
  BOOST_CHECK_NO_THROW(O{}.apply(cpu{}, state, nullptr, nullptr, 0, 1.f));
  // With n = 0 nothing at the pointers is read or written, whatever they point to.
  float w[2] = {1.5f, -2.f};
  const float g[2] = {4.f, 8.f};
  BOOST_CHECK_NO_THROW(O{}.apply(cpu{}, state, w, g, 0, 1.f));
  BOOST_TEST(w[0] == 1.5f);
  BOOST_TEST(w[1] == -2.f);
  std::size_t slots = 0;
  state.visit([&](const char* name, auto& slot) {
    if constexpr (!std::is_same_v<std::decay_t<decltype(slot)>, std::uint64_t>) {
      BOOST_TEST_CONTEXT("slot " << name) { BOOST_TEST(slot.size() == 0u); }
      ++slots;
    }
  });
  BOOST_TEST(slots == O::slot_count);
}

// The in-place map (apply()), the out-of-place map over ranges (chunked apply) and the row map
// (sparse apply) run the one element rule, so they end bit for bit in the same place.
BOOST_AUTO_TEST_CASE_TEMPLATE(the_in_place_out_of_place_and_row_maps_agree_bit_for_bit, O, optimizers) {
  constexpr std::size_t dim = 4, rows = 7, n = rows * dim;
  const std::vector<std::uint64_t> order = {3, 0, 6, 1, 5, 2, 4};  // every row once, shuffled
  const std::size_t cuts[] = {0, 5, 17, n};                        // three uneven chunks
  std::uint32_t seed = 101;
  for (auto [optimizer, reference] : configurations<O>::get()) {
    const auto w0 = random_values(n, seed++, -1.f, 1.f);
    cpu_vector w_whole(w0.begin(), w0.end()), w_chunks(w0.begin(), w0.end()), w_rows(w0.begin(), w0.end());
    typename O::template state<cpu> s_whole(cpu{}, n), s_chunks(cpu{}, n), s_rows(cpu{}, n);
    for (int step = 1; step <= 4; ++step) {
      const float scale = step % 2 ? 1.f : 0.5f;
      const auto grad = random_values(n, seed++, -2.f, 2.f);
      optimizer.apply(cpu{}, s_whole, w_whole.data(), grad.data(), n, scale);

      cpu_vector w_next(n);
      typename O::template state<cpu> s_next(cpu{}, n);
      for (std::size_t c = 0; c + 1 < std::size(cuts); ++c)
        dsgd::optim::detail::map_out_of_place(optimizer, cpu{}, s_chunks, s_next, w_chunks.data(), w_next.data(),
                                              grad.data(), cuts[c], cuts[c + 1] - cuts[c], scale);
      dsgd::optim::detail::advance(optimizer, s_chunks, s_next);
      w_chunks = w_next;
      s_chunks = std::move(s_next);

      std::vector<float> packed;
      for (auto r : order) packed.insert(packed.end(), grad.begin() + r * dim, grad.begin() + (r + 1) * dim);
      dsgd::optim::detail::map_rows(optimizer, cpu{}, s_rows, w_rows.data(), order.data(), rows, dim, packed.data(),
                                    scale);

      BOOST_TEST_CONTEXT("step " << step) {
        BOOST_TEST(std::memcmp(w_whole.data(), w_chunks.data(), n * sizeof(float)) == 0);
        BOOST_TEST(std::memcmp(w_whole.data(), w_rows.data(), n * sizeof(float)) == 0);
        const auto a = O::slots_of(s_whole), b = O::slots_of(s_chunks), c = O::slots_of(s_rows);
        for (std::size_t j = 0; j < O::slot_count; ++j) {
          BOOST_TEST(std::memcmp(a[j], b[j], n * sizeof(float)) == 0);
          BOOST_TEST(std::memcmp(a[j], c[j], n * sizeof(float)) == 0);
        }
        std::vector<std::uint64_t> counters[3];
        auto collect = [](auto& s, std::vector<std::uint64_t>& out) {
          s.visit([&](const char*, auto& slot) {
            if constexpr (std::is_same_v<std::decay_t<decltype(slot)>, std::uint64_t>) out.push_back(slot);
          });
        };
        collect(s_whole, counters[0]);
        collect(s_chunks, counters[1]);
        collect(s_rows, counters[2]);
        BOOST_TEST(counters[0] == counters[1], tt::per_element());
        BOOST_TEST(counters[0] == counters[2], tt::per_element());
      }
    }
    BOOST_TEST(to_std(w_whole) != w0);
  }
}

static_assert(dsgd::optim::elementwise<dsgd::optim::sgd> && dsgd::optim::elementwise<dsgd::optim::adam>);
static_assert(!dsgd::optim::counts_updates_v<dsgd::optim::momentum> &&
              dsgd::optim::counts_updates_v<dsgd::optim::adam>);
static_assert(!dsgd::optim::elementwise<dsgd::optim::exponential_decay<dsgd::optim::sgd>>);

BOOST_AUTO_TEST_CASE(a_state_of_the_wrong_size_is_rejected) {
  cpu_vector w(8, 0.f), g(8, 1.f);
  auto is_shape_mismatch = [](const dsgd::error& e) {
    return e.code() == dsgd::errc::shape_mismatch && std::string(e.what()).find("n = 8") != std::string::npos;
  };
  dsgd::optim::momentum::state<cpu> ms(cpu{}, 7);
  BOOST_CHECK_EXCEPTION(dsgd::optim::momentum{}.apply(cpu{}, ms, w.data(), g.data(), 8), dsgd::error,
                        is_shape_mismatch);
  dsgd::optim::adagrad::state<cpu> as(cpu{}, 9);
  BOOST_CHECK_EXCEPTION(dsgd::optim::adagrad{}.apply(cpu{}, as, w.data(), g.data(), 8), dsgd::error, is_shape_mismatch);
  dsgd::optim::adam::state<cpu> ads(cpu{}, 1);
  BOOST_CHECK_EXCEPTION(dsgd::optim::adam{}.apply(cpu{}, ads, w.data(), g.data(), 8), dsgd::error, is_shape_mismatch);
  BOOST_TEST(ads.t == 0u);
  BOOST_TEST(to_std(w) == std::vector<float>(8, 0.f), tt::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
