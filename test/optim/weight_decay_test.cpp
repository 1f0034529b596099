// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for decoupled weight decay (the weight_decay option of optim::sgd, momentum, adagrad and
// adam; AdamW and SGDW): hand-computed steps, the decay applied outside the slots (an update
// with weight decay is the update without it of w * (1 - lr * wd), bit for bit), the three maps
// of the rule agreeing, and a schedule scaling the decay with its rate as PyTorch's schedulers
// do. Without weight decay the optimizers' own tests (concepts_test) hold unchanged.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/sgd.hpp>
#include <support/reference_optim.hpp>

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

BOOST_AUTO_TEST_SUITE(optim_weight_decay_test)

namespace {

namespace tt = boost::test_tools;
using cpu = dsgd::device::cpu;
using namespace dsgd::optim;

using dsgd::test::random_values;

// One optimizer of each kind, with weight decay and without (otherwise alike).
template <class O>
O with_decay(float wd);
template <>
sgd with_decay<sgd>(float wd) {
  return {.learning_rate = 0.05f, .weight_decay = wd};
}
template <>
momentum with_decay<momentum>(float wd) {
  return {.learning_rate = 0.03f, .momentum = 0.8f, .nesterov = true, .weight_decay = wd};
}
template <>
adagrad with_decay<adagrad>(float wd) {
  return {.learning_rate = 0.1f, .initial_accumulator = 0.25f, .epsilon = 1e-6f, .weight_decay = wd};
}
template <>
adam with_decay<adam>(float wd) {
  return {.learning_rate = 2e-3f, .beta1 = 0.8f, .beta2 = 0.99f, .epsilon = 1e-6f, .weight_decay = wd};
}

using optimizers = std::tuple<sgd, momentum, adagrad, adam>;

}  // namespace

BOOST_AUTO_TEST_CASE(hand_computed_steps_decay_the_weights_outside_the_slots) {
  // SGDW: lr 0.1, wd 0.5, w = 2, g = 1: w = 2 * 0.95 - 0.1 = 1.8.
  std::vector<float> w{2.f}, g{1.f};
  sgd::state<cpu> s0(cpu{}, 1);
  sgd{0.1f, 0.5f}.apply(cpu{}, s0, w.data(), g.data(), 1);
  BOOST_TEST(w[0] == 1.8f, tt::tolerance(1e-6f));

  // Momentum, lr 0.1, m 0.9, wd 0.1, g = 1 twice: v = 1, w = 0.99 - 0.1 = 0.89; v = 1.9,
  // w = 0.89 * 0.99 - 0.19 = 0.6911. The velocity holds no decay.
  w = {1.f};
  momentum::state<cpu> s1(cpu{}, 1);
  const momentum m{0.1f, 0.9f, false, 0.1f};
  m.apply(cpu{}, s1, w.data(), g.data(), 1);
  BOOST_TEST(w[0] == 0.89f, tt::tolerance(1e-6f));
  m.apply(cpu{}, s1, w.data(), g.data(), 1);
  BOOST_TEST(w[0] == 0.6911f, tt::tolerance(1e-6f));
  BOOST_TEST(s1.velocity[0] == 1.9f, tt::tolerance(1e-6f));

  // AdamW (torch.optim.AdamW), lr 0.1, wd 0.1, w = 1, g = 1: m_hat = v_hat = 1, so
  // w = 1 * 0.99 - 0.1 * 1 / (1 + 1e-8) = 0.89.
  w = {1.f};
  adam::state<cpu> s2(cpu{}, 1);
  adam{.learning_rate = 0.1f, .weight_decay = 0.1f}.apply(cpu{}, s2, w.data(), g.data(), 1);
  BOOST_TEST(w[0] == 0.89f, tt::tolerance(1e-6f));
  BOOST_TEST(s2.m[0] == 0.1f, tt::tolerance(1e-6f));

  // Adagrad, lr 0.1, a0 0.1, wd 0.2, w = 1, g = 1: a = 1.1, w = 0.98 - 0.1 / (sqrt(1.1) + 1e-7).
  w = {1.f};
  adagrad::state<cpu> s3(cpu{}, 1);
  adagrad{0.1f, 0.1f, 1e-7f, 0.2f}.apply(cpu{}, s3, w.data(), g.data(), 1);
  BOOST_TEST(w[0] == 0.98f - 0.1f / 1.0488088f, tt::tolerance(1e-6f));

  // With no gradient the weights shrink geometrically: (1 - lr * wd)^k.
  w = {1.f};
  std::vector<float> zero{0.f};
  for (int k = 0; k < 3; ++k) sgd{0.1f, 0.5f}.apply(cpu{}, s0, w.data(), zero.data(), 1);
  BOOST_TEST(w[0] == 0.95f * 0.95f * 0.95f, tt::tolerance(1e-6f));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(an_update_with_decay_is_the_update_without_it_of_the_decayed_weights, O, optimizers) {
  constexpr std::size_t n = 1031;
  const float wd = 0.3f;
  const O decayed = with_decay<O>(wd), plain = with_decay<O>(0.f);
  const float factor = static_cast<float>(1.0 - static_cast<double>(decayed.learning_rate) * wd);
  auto w_a = random_values(n, 5, -1.f, 1.f), w_b = w_a;
  typename O::template state<cpu> s_a(cpu{}, n), s_b(cpu{}, n);
  for (std::uint32_t step = 0; step < 5; ++step) {
    const auto g = random_values(n, 100 + step, -2.f, 2.f);
    decayed.apply(cpu{}, s_a, w_a.data(), g.data(), n, 0.5f);
    for (auto& x : w_b) x *= factor;
    plain.apply(cpu{}, s_b, w_b.data(), g.data(), n, 0.5f);
    BOOST_TEST_INFO("step " << step);
    BOOST_TEST(std::memcmp(w_a.data(), w_b.data(), n * sizeof(float)) == 0);
  }
}

BOOST_AUTO_TEST_CASE(the_three_maps_of_a_decaying_rule_agree_bit_for_bit) {
  constexpr std::size_t dim = 3, rows = 5, n = rows * dim;
  const std::vector<std::uint64_t> order = {4, 1, 3, 0, 2};
  const momentum o = with_decay<momentum>(0.25f);
  const auto w0 = random_values(n, 21, -1.f, 1.f);
  auto w_whole = w0, w_chunks = w0, w_rows = w0;
  momentum::state<cpu> s_whole(cpu{}, n), s_chunks(cpu{}, n), s_rows(cpu{}, n);
  for (std::uint32_t step = 0; step < 3; ++step) {
    const auto g = random_values(n, 30 + step, -2.f, 2.f);
    o.apply(cpu{}, s_whole, w_whole.data(), g.data(), n);
    std::vector<float> w_next(n);
    momentum::state<cpu> s_next(cpu{}, n);
    dsgd::optim::detail::map_out_of_place(o, cpu{}, s_chunks, s_next, w_chunks.data(), w_next.data(), g.data(), 0, 7,
                                          1.f);
    dsgd::optim::detail::map_out_of_place(o, cpu{}, s_chunks, s_next, w_chunks.data(), w_next.data(), g.data(), 7,
                                          n - 7, 1.f);
    w_chunks = w_next;
    s_chunks = std::move(s_next);
    std::vector<float> packed;
    for (auto r : order) packed.insert(packed.end(), g.begin() + r * dim, g.begin() + (r + 1) * dim);
    dsgd::optim::detail::map_rows(o, cpu{}, s_rows, w_rows.data(), order.data(), rows, dim, packed.data(), 1.f);
    BOOST_TEST(std::memcmp(w_whole.data(), w_chunks.data(), n * sizeof(float)) == 0);
    BOOST_TEST(std::memcmp(w_whole.data(), w_rows.data(), n * sizeof(float)) == 0);
  }
}

BOOST_AUTO_TEST_CASE(a_schedule_scales_the_decay_with_its_rate) {
  // exponential_decay halves the rate after 1 update, and with it lr * wd, as PyTorch's
  // schedulers do for AdamW: w = 1 * (1 - 0.1 * 0.5) = 0.95, then 0.95 * (1 - 0.05 * 0.5).
  const dsgd::optim::exponential_decay<sgd> o{{0.1f, 0.5f}, 0.5f, 1, true};
  dsgd::optim::exponential_decay<sgd>::state<cpu> s(cpu{}, 1);
  std::vector<float> w{1.f}, zero{0.f};
  o.apply(cpu{}, s, w.data(), zero.data(), 1);
  BOOST_TEST(w[0] == 0.95f, tt::tolerance(1e-6f));
  o.apply(cpu{}, s, w.data(), zero.data(), 1);
  BOOST_TEST(w[0] == 0.95f * 0.975f, tt::tolerance(1e-6f));
}

BOOST_AUTO_TEST_SUITE_END()
