// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/optim/rowwise_adagrad.hpp>: a hand-computed step, the dense apply over rows
// of row_width against a scalar reference in double written from FBGEMM's row-wise Adagrad,
// the dense state (each element its row's accumulator), a sparse apply updating its rows and
// no other, a row of width 1 against adagrad, and the shapes it refuses.
#include <dsgd/device/cpu.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/optim/rowwise_adagrad.hpp>

#include <support/error_checks.hpp>
#include <support/host_steps.hpp>
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

BOOST_AUTO_TEST_SUITE(optim_rowwise_adagrad_test)

using cpu = dsgd::device::cpu;
using dsgd::optim::rowwise_adagrad;

static_assert(dsgd::Optimizer<rowwise_adagrad, cpu>);
static_assert(dsgd::optim::row_optimizer<rowwise_adagrad>);
static_assert(dsgd::checkpointable_state<rowwise_adagrad::state<cpu>>);
static_assert(!dsgd::optim::elementwise<rowwise_adagrad>);  // a row's mean is no element rule

namespace {

namespace tt = boost::test_tools;
using dsgd::test::random_values;

std::vector<float> to_std(const cpu::vector<float>& v) { return {v.begin(), v.end()}; }

bool close(const std::vector<float>& w, const std::vector<double>& expected, double tolerance) {
  bool ok = w.size() == expected.size();
  for (std::size_t i = 0; ok && i < w.size(); ++i)
    ok = std::abs(double{w[i]} - expected[i]) <= tolerance * (1.0 + std::abs(expected[i]));
  return ok;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(optimizers_on_cpu)

BOOST_AUTO_TEST_CASE(one_row_by_hand) {
  // Row (1, -1), g = (3, 4), lr = 0.1, a0 = 0.5: a = 0.5 + (9 + 16) / 2 = 13, and each
  // weight moves by 0.1 / (sqrt(13) + 1e-7) times its gradient; then a = 13 + 12.5 = 25.5.
  dsgd::test::host_steps run(rowwise_adagrad{0.1f, 0.5f, 1e-7f}, {1.f, -1.f}, {3.f, 4.f});
  BOOST_TEST(run.s.accumulator[0] == 0.f);  // "never updated": read as initial_accumulator
  run.step();
  const double rate1 = 0.1 / (std::sqrt(13.0) + 1e-7);
  BOOST_TEST(run.s.accumulator[0] == 13.f);
  BOOST_TEST(run.s.accumulator[1] == 13.f);  // every element holds its row's accumulator
  BOOST_TEST(double{run.w[0]} == 1.0 - rate1 * 3.0, tt::tolerance(1e-6));
  BOOST_TEST(double{run.w[1]} == -1.0 - rate1 * 4.0, tt::tolerance(1e-6));
  run.step();
  const double rate2 = 0.1 / (std::sqrt(25.5) + 1e-7);
  BOOST_TEST(run.s.accumulator[0] == 25.5f);
  BOOST_TEST(double{run.w[1]} == -1.0 - rate1 * 4.0 - rate2 * 4.0, tt::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(every_step_matches_a_reference_in_double) {
  constexpr std::size_t n = 4 * 7 * 9;
  std::uint32_t seed = 3;
  for (std::size_t width : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{36}}) {
    for (float grad_scale : {1.f, 0.25f}) {
      BOOST_TEST_CONTEXT("row_width " << width << ", grad_scale " << grad_scale) {
        const rowwise_adagrad o{0.1f, 0.2f, 1e-6f, 0.f, width};
        const std::size_t dim = width == 0 ? n : width;
        std::vector<std::uint64_t> all(n / dim);
        for (std::size_t r = 0; r < all.size(); ++r) all[r] = r;
        const auto w0 = random_values(n, seed++, -1.f, 1.f);
        cpu::vector<float> w(w0.begin(), w0.end());
        rowwise_adagrad::state<cpu> s(cpu{}, n);
        dsgd::test::reference_rowwise_adagrad ref{o.learning_rate, o.initial_accumulator, o.epsilon, {}};
        std::vector<double> expected(w0.begin(), w0.end());
        for (int step = 1; step <= 5; ++step) {
          const auto g = random_values(n, seed++, -2.f, 2.f);
          o.apply(cpu{}, s, w.data(), g.data(), n, grad_scale);
          ref.step(expected, dim, all, g, grad_scale);
          BOOST_TEST_CONTEXT("step " << step) {
            BOOST_TEST(close(to_std(w), expected, 1e-5));
            std::size_t bad = 0;
            for (std::size_t i = 0; i < n; ++i)
              bad +=
                  !(std::abs(double{s.accumulator[i]} - ref.accumulator[i / dim]) <= 1e-5 * ref.accumulator[i / dim]);
            BOOST_TEST(bad == 0u);
          }
        }
      }
    }
  }
}

// A row of width 1 is adagrad's formula (the rounding differs: lr / (sqrt(a) + eps) * g there
// is lr * g / (sqrt(a) + eps) here).
BOOST_AUTO_TEST_CASE(rows_of_one_element_are_adagrad) {
  constexpr std::size_t n = 301;
  const auto w0 = random_values(n, 91, -1.f, 1.f);
  cpu::vector<float> w_rows(w0.begin(), w0.end()), w_adagrad(w0.begin(), w0.end());
  rowwise_adagrad::state<cpu> s_rows(cpu{}, n);
  dsgd::optim::adagrad::state<cpu> s_adagrad(cpu{}, n);
  for (int step = 0; step < 4; ++step) {
    const auto g = random_values(n, 92 + std::uint32_t(step), -2.f, 2.f);
    rowwise_adagrad{0.1f, 0.3f, 1e-6f, 0.f, 1}.apply(cpu{}, s_rows, w_rows.data(), g.data(), n);
    dsgd::optim::adagrad{0.1f, 0.3f, 1e-6f}.apply(cpu{}, s_adagrad, w_adagrad.data(), g.data(), n);
  }
  const auto expected = to_std(w_adagrad);
  BOOST_TEST(close(to_std(w_rows), {expected.begin(), expected.end()}, 1e-6));
  BOOST_TEST(to_std(s_rows.accumulator) == to_std(s_adagrad.accumulator), tt::tolerance(1e-6f) << tt::per_element());
}

// TensorFlow's SparseApply* on a dense variable: the rows given move as the reference moves
// them, every other row and accumulator stays bit for bit, a row first touched late starts
// from the initial accumulator, and the table's row rule (apply_row) agrees bit for bit.
BOOST_AUTO_TEST_CASE(a_sparse_apply_updates_its_rows_and_no_other) {
  constexpr std::size_t dim = 6, rows = 9, n = rows * dim;
  const std::vector<std::vector<std::uint64_t>> pushes = {{4, 1}, {1, 8, 0}, {7, 4}, {5, 2}};  // 3, 6: never
  const rowwise_adagrad o{0.05f, 0.1f, 1e-7f, 0.f, dim};
  const auto w0 = random_values(n, 17, -1.f, 1.f);
  cpu::vector<float> w(w0.begin(), w0.end());
  rowwise_adagrad::state<cpu> s(cpu{}, n);
  dsgd::test::reference_rowwise_adagrad ref{o.learning_rate, o.initial_accumulator, o.epsilon, {}};
  std::vector<double> expected(w0.begin(), w0.end());
  std::vector<float> table_w(w0), table_acc(rows);
  for (std::size_t r = 0; r < rows; ++r) o.init_row_slots(&table_acc[r], dim);
  std::uint32_t seed = 18;
  for (const auto& push : pushes) {
    const auto g = random_values(push.size() * dim, seed++, -2.f, 2.f);
    const auto before = to_std(w);
    const auto acc_before = to_std(s.accumulator);
    o.apply_rows(cpu{}, s, w.data(), push.data(), push.size(), dim, g.data(), 0.5f);
    ref.step(expected, dim, push, g, 0.5);
    for (std::size_t k = 0; k < push.size(); ++k)
      o.apply_row(table_w.data() + push[k] * dim, &table_acc[push[k]], g.data() + k * dim, dim, 0.5f);
    BOOST_TEST(close(to_std(w), expected, 1e-5));
    BOOST_TEST(std::memcmp(w.data(), table_w.data(), n * sizeof(float)) == 0);
    for (std::size_t r = 0; r < rows; ++r) {
      if (std::find(push.begin(), push.end(), r) != push.end()) continue;
      BOOST_TEST_CONTEXT("row " << r) {
        BOOST_TEST(std::memcmp(w.data() + r * dim, before.data() + r * dim, dim * sizeof(float)) == 0);
        BOOST_TEST(std::memcmp(s.accumulator.data() + r * dim, acc_before.data() + r * dim, dim * sizeof(float)) == 0);
      }
    }
  }
  BOOST_TEST(s.accumulator[3 * dim] == 0.f);  // never touched
  for (std::size_t r = 0; r < rows; ++r) BOOST_TEST(table_acc[r] == (r == 3 || r == 6 ? 0.1f : s.accumulator[r * dim]));
}

BOOST_AUTO_TEST_CASE(decoupled_weight_decay_shrinks_the_row_first) {
  // g = 0: the accumulator grows by nothing and only the decay moves w: w (1 - 0.1 * 0.5).
  dsgd::test::host_steps run(rowwise_adagrad{0.1f, 0.5f, 1e-7f, 0.5f, 2}, {2.f, -4.f}, {0.f, 0.f});
  run.step();
  BOOST_TEST(run.weights() == (std::vector<float>{1.9f, -3.8f}), tt::tolerance(1e-6f) << tt::per_element());
  BOOST_TEST(run.s.accumulator[0] == 0.5f);
}

BOOST_AUTO_TEST_CASE(shapes_it_refuses_before_anything_is_written) {
  std::vector<float> w(10, 1.f);
  const std::vector<float> g(10, 1.f);
  rowwise_adagrad::state<cpu> s(cpu{}, 10);
  const std::string tiling = dsgd::test::error_of(
      [&] { rowwise_adagrad{.row_width = 4}.apply(cpu{}, s, w.data(), g.data(), 10); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(dsgd::test::contains(tiling, "row_width = 4"));
  rowwise_adagrad::state<cpu> small(cpu{}, 8);
  dsgd::test::error_of([&] { rowwise_adagrad{}.apply(cpu{}, small, w.data(), g.data(), 10); },
                       dsgd::errc::shape_mismatch);
  const std::uint64_t row = 0;
  const std::string rows = dsgd::test::error_of(
      [&] { rowwise_adagrad{.row_width = 5}.apply_rows(cpu{}, s, w.data(), &row, 1, 2, g.data()); },
      dsgd::errc::shape_mismatch);
  BOOST_TEST(dsgd::test::contains(rows, "rows of 2 floats"));
  BOOST_TEST(w == std::vector<float>(10, 1.f), tt::per_element());
  BOOST_TEST(to_std(s.accumulator) == std::vector<float>(10, 0.f), tt::per_element());
  rowwise_adagrad::state<cpu> empty(cpu{}, 0);
  BOOST_CHECK_NO_THROW(rowwise_adagrad{}.apply(cpu{}, empty, nullptr, nullptr, 0));
  BOOST_CHECK_NO_THROW(rowwise_adagrad{}.apply_rows(cpu{}, empty, nullptr, nullptr, 0, 3, nullptr));
}

BOOST_AUTO_TEST_CASE(a_checkpoint_holds_the_accumulator) {
  rowwise_adagrad::state<cpu> s(cpu{}, 6);
  std::vector<std::string> names;
  s.visit([&](const char* name, auto& slot) {
    names.emplace_back(name);
    if constexpr (!std::is_same_v<std::decay_t<decltype(slot)>, std::uint64_t>) BOOST_TEST(slot.size() == 6u);
  });
  BOOST_TEST(names == std::vector<std::string>{"accumulator"}, tt::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
