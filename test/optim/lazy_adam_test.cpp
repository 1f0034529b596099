// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/optim/lazy_adam.hpp>: dense it is optim::adam bit for bit; a sparse update
// (apply_rows) changes only its rows' weights and moments, with the bias corrections of the
// global step, against a scalar reference written from TF1's LazyAdamOptimizer, where dense
// Adam on the same (densified) gradient moves the other rows too; a table's rows agree with it
// bit for bit; and what a checkpoint holds.
#include <dsgd/device/cpu.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/lazy_adam.hpp>

#include <support/error_checks.hpp>
#include <support/reference_optim.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

BOOST_AUTO_TEST_SUITE(optim_lazy_adam_test)

using cpu = dsgd::device::cpu;
using dsgd::optim::adam;
using dsgd::optim::lazy_adam;

static_assert(dsgd::Optimizer<lazy_adam, cpu>);
static_assert(dsgd::optim::row_optimizer<lazy_adam>);
static_assert(dsgd::checkpointable_state<lazy_adam::state<cpu>>);
static_assert(dsgd::optim::elementwise<lazy_adam> && dsgd::optim::counts_updates_v<lazy_adam>);
static_assert(std::is_same_v<lazy_adam::state<cpu>, adam::state<cpu>>);

namespace {

namespace tt = boost::test_tools;
using dsgd::test::random_values;

std::vector<float> to_std(const cpu::vector<float>& v) { return {v.begin(), v.end()}; }
bool same_bits(const float* a, const float* b, std::size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

const lazy_adam settings{2e-2f, 0.8f, 0.99f, 1e-6f};

}  // namespace

BOOST_AUTO_TEST_SUITE(optimizers_on_cpu)

BOOST_AUTO_TEST_CASE(dense_it_is_adam_bit_for_bit) {
  constexpr std::size_t n = 1031;
  for (float wd : {0.f, 0.1f}) {
    lazy_adam lazy = settings;
    lazy.weight_decay = wd;
    const adam dense = lazy.dense();
    BOOST_TEST(dense.beta2 == lazy.beta2);
    const auto w0 = random_values(n, 1, -1.f, 1.f);
    cpu::vector<float> w_lazy(w0.begin(), w0.end()), w_adam(w0.begin(), w0.end());
    lazy_adam::state<cpu> s_lazy(cpu{}, n);
    adam::state<cpu> s_adam(cpu{}, n);
    for (int step = 0; step < 4; ++step) {
      const auto g = random_values(n, 2 + std::uint32_t(step), -2.f, 2.f);
      lazy.apply(cpu{}, s_lazy, w_lazy.data(), g.data(), n, 0.5f);
      dense.apply(cpu{}, s_adam, w_adam.data(), g.data(), n, 0.5f);
    }
    BOOST_TEST(same_bits(w_lazy.data(), w_adam.data(), n));
    BOOST_TEST(same_bits(s_lazy.m.data(), s_adam.m.data(), n));
    BOOST_TEST(same_bits(s_lazy.v.data(), s_adam.v.data(), n));
    BOOST_TEST(s_lazy.t == 4u);
  }
}

// TF1's LazyAdamOptimizer: each push advances the global step once; only its rows' m, v and w
// change. Dense Adam on the densified push (zeros elsewhere) keeps moving the other rows
// through their momentum, which is what lazy Adam is for.
BOOST_AUTO_TEST_CASE(a_sparse_update_changes_its_rows_only_where_dense_adam_changes_all) {
  constexpr std::size_t dim = 4, rows = 7, n = rows * dim;
  const std::vector<std::vector<std::uint64_t>> pushes = {{0, 1, 2, 3, 4, 5, 6}, {4, 1}, {1, 5, 0}, {6}, {3, 4}};
  const auto w0 = random_values(n, 21, -1.f, 1.f);
  cpu::vector<float> w(w0.begin(), w0.end()), w_dense(w0.begin(), w0.end());
  lazy_adam::state<cpu> s(cpu{}, n);
  adam::state<cpu> s_dense(cpu{}, n);
  dsgd::test::reference_lazy_adam ref{
      settings.learning_rate, settings.beta1, settings.beta2, settings.epsilon, false, {}, {}, 0};
  std::vector<double> expected(w0.begin(), w0.end());
  std::vector<float> table(rows * (dim + settings.row_slots(dim)));  // a table's rows: weights, m, v
  const std::size_t stride = dim + settings.row_slots(dim);
  for (std::size_t r = 0; r < rows; ++r) {
    std::memcpy(table.data() + r * stride, w0.data() + r * dim, dim * sizeof(float));
    settings.init_row_slots(table.data() + r * stride + dim, dim);
  }
  std::uint32_t seed = 22;
  for (std::size_t p = 0; p < pushes.size(); ++p) {
    const auto& push = pushes[p];
    const auto g = random_values(push.size() * dim, seed++, -2.f, 2.f);
    std::vector<float> densified(n, 0.f);
    for (std::size_t k = 0; k < push.size(); ++k)
      std::copy(g.begin() + std::ptrdiff_t(k * dim), g.begin() + std::ptrdiff_t((k + 1) * dim),
                densified.begin() + std::ptrdiff_t(push[k] * dim));
    const auto w_before = to_std(w), m_before = to_std(s.m), v_before = to_std(s.v), dense_before = to_std(w_dense);

    settings.apply_rows(cpu{}, s, w.data(), push.data(), push.size(), dim, g.data());
    settings.dense().apply(cpu{}, s_dense, w_dense.data(), densified.data(), n);
    ref.step(expected, dim, push, g, 1.0);
    for (std::size_t k = 0; k < push.size(); ++k) {
      float* row = table.data() + push[k] * stride;
      settings.apply_row(row, row + dim, g.data() + k * dim, dim, 1.f, {p + 1});
    }

    BOOST_TEST_CONTEXT("push " << p) {
      BOOST_TEST(s.t == p + 1);
      BOOST_TEST(to_std(w) == expected, tt::tolerance(1e-5) << tt::per_element());
      for (std::size_t r = 0; r < rows; ++r) {
        BOOST_TEST_CONTEXT("row " << r) {
          const float* row = table.data() + r * stride;
          BOOST_TEST(same_bits(row, w.data() + r * dim, dim));  // the table's rows: the same rule
          BOOST_TEST(same_bits(row + dim, s.m.data() + r * dim, dim));
          BOOST_TEST(same_bits(row + 2 * dim, s.v.data() + r * dim, dim));
          if (std::find(push.begin(), push.end(), r) != push.end()) continue;
          BOOST_TEST(same_bits(w.data() + r * dim, w_before.data() + r * dim, dim));
          BOOST_TEST(same_bits(s.m.data() + r * dim, m_before.data() + r * dim, dim));
          BOOST_TEST(same_bits(s.v.data() + r * dim, v_before.data() + r * dim, dim));
          // Dense Adam moves a row left out of a push once its momentum is non-zero (after
          // the first push, which has every row).
          if (p > 0) BOOST_TEST(!same_bits(w_dense.data() + r * dim, dense_before.data() + r * dim, dim));
        }
      }
    }
  }
  // The first push had every row: lazy and dense were the same update then; they part after.
  BOOST_TEST(!same_bits(w.data(), w_dense.data(), n));
}

BOOST_AUTO_TEST_CASE(rows_that_do_not_tile_the_state_are_refused) {
  lazy_adam::state<cpu> s(cpu{}, 10);
  std::vector<float> w(10, 1.f);
  const std::vector<float> g(4, 1.f);
  const std::uint64_t row = 0;
  const std::string message = dsgd::test::error_of(
      [&] { settings.apply_rows(cpu{}, s, w.data(), &row, 1, 4, g.data()); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(dsgd::test::contains(message, "rows of 4 floats"));
  BOOST_TEST(s.t == 0u);
  BOOST_TEST(w == std::vector<float>(10, 1.f), tt::per_element());
}

BOOST_AUTO_TEST_CASE(a_checkpoint_holds_the_moments_and_the_step) {
  lazy_adam::state<cpu> s(cpu{}, 3);
  std::vector<std::string> names;
  s.visit([&](const char* name, auto&) { names.emplace_back(name); });
  BOOST_TEST(names == (std::vector<std::string>{"m", "v", "t"}), tt::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
