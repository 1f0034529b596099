// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/optim/adagrad.hpp>: hand-computed steps from the initial accumulator, and
// a sparse apply (rows first touched at any time start from the initial accumulator).
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/update/chunked_apply.hpp>

#include <support/host_steps.hpp>
#include <support/reference_optim.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

BOOST_AUTO_TEST_SUITE(optim_adagrad_test)

static_assert(dsgd::Optimizer<dsgd::optim::adagrad, dsgd::device::cpu>);
// The initial accumulator is per element (0 reads as initial_accumulator), no step counter:
// a part of an update is an update, so adagrad has chunked and sparse applies.
static_assert(!dsgd::optim::counts_updates_v<dsgd::optim::adagrad>);
static_assert(dsgd::update::sparse_apply<dsgd::optim::adagrad>::available);
static_assert(dsgd::update::chunked_apply<dsgd::optim::adagrad>::available);

BOOST_AUTO_TEST_SUITE(optimizers_on_cpu)

BOOST_AUTO_TEST_CASE(adagrad_starts_from_the_initial_accumulator) {
  namespace tt = boost::test_tools;
  // a = 0.5 + 2^2 = 4.5, w = 1 - 0.1 * 2 / (sqrt(4.5) + 1e-7); then a = 8.5.
  dsgd::test::host_steps run(dsgd::optim::adagrad{0.1f, 0.5f, 1e-7f}, {1.f}, {2.f});
  run.step();
  const double w1 = 1.0 - 0.2 / (std::sqrt(4.5) + 1e-7);
  BOOST_TEST(run.s.accumulator[0] == 4.5f);
  BOOST_TEST(run.s.accumulator[0] == 4.5f, tt::tolerance(1e-6f));
  BOOST_TEST(double{run.w[0]} == w1, tt::tolerance(1e-6));
  run.step();
  BOOST_TEST(run.s.accumulator[0] == 8.5f, tt::tolerance(1e-6f));
  BOOST_TEST(double{run.w[0]} == w1 - 0.2 / (std::sqrt(8.5) + 1e-7), tt::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(an_initial_accumulator_of_0_is_exact_sums_of_squares) {
  // initial_accumulator = 0: the stored 0 of a fresh element and the true sum 0 after a zero
  // gradient are one value, and both read as 0.
  dsgd::test::host_steps zero(dsgd::optim::adagrad{0.1f, 0.f, 1e-7f}, {1.f, 1.f}, {0.f, 2.f});
  zero.step();
  BOOST_TEST(zero.s.accumulator[0] == 0.f);
  BOOST_TEST(zero.w[0] == 1.f);
  BOOST_TEST(zero.s.accumulator[1] == 4.f);
}

// TensorFlow's SparseApplyAdagrad: the rows of a sparse push are updated as the dense apply
// would update them, each row a variable of its own, however late a row is first touched (it
// starts from the initial accumulator, where a step counter would have let only the first
// push's rows start there); every other row and accumulator stays as it is.
BOOST_AUTO_TEST_CASE(a_sparse_apply_updates_its_rows_as_the_dense_apply_and_no_other) {
  using cpu = dsgd::device::cpu;
  using dsgd::optim::adagrad;
  constexpr std::size_t dim = 3, rows = 8, n = rows * dim;
  const std::vector<std::vector<std::uint64_t>> pushes = {{4, 1}, {1, 5, 0}, {7, 4}, {5, 2}};  // 3, 6: never
  const adagrad optimizer{0.1f, 0.3f, 1e-6f};
  const auto w0 = dsgd::test::random_values(n, 5, -1.f, 1.f);
  cpu::vector<float> w(w0.begin(), w0.end());
  adagrad::state<cpu> s(cpu{}, n);
  std::vector<cpu::vector<float>> row_w;
  std::vector<adagrad::state<cpu>> row_s;
  for (std::size_t r = 0; r < rows; ++r) {
    row_w.emplace_back(w0.begin() + std::ptrdiff_t(r * dim), w0.begin() + std::ptrdiff_t((r + 1) * dim));
    row_s.emplace_back(cpu{}, dim);
  }
  std::uint32_t seed = 6;
  for (const auto& push : pushes) {
    const auto packed = dsgd::test::random_values(push.size() * dim, seed++, -2.f, 2.f);
    dsgd::update::sparse_apply<adagrad>::apply(optimizer, cpu{}, s, w.data(), push.data(), push.size(), dim,
                                               packed.data(), 0.5f);
    for (std::size_t k = 0; k < push.size(); ++k)
      optimizer.apply(cpu{}, row_s[push[k]], row_w[push[k]].data(), packed.data() + k * dim, dim, 0.5f);
    for (std::size_t r = 0; r < rows; ++r) {
      BOOST_TEST_CONTEXT("row " << r) {
        BOOST_TEST(std::memcmp(w.data() + r * dim, row_w[r].data(), dim * sizeof(float)) == 0);
        BOOST_TEST(std::memcmp(s.accumulator.data() + r * dim, row_s[r].accumulator.data(), dim * sizeof(float)) == 0);
      }
    }
  }
  for (std::size_t c = 0; c < dim; ++c) {
    BOOST_TEST(w[3 * dim + c] == w0[3 * dim + c]);
    BOOST_TEST(s.accumulator[6 * dim + c] == 0.f);
  }
  // Row 2, first touched by the last push, started from 0.3: a = 0.3 + g^2.
  BOOST_TEST(row_s[2].accumulator[0] > 0.3f);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
