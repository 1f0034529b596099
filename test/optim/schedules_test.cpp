// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/optim/piecewise_constant.hpp> and <dsgd/optim/cosine_decay.hpp> (and the
// state of every schedule, exponential_decay's included): rates against hand-computed values,
// the updates they make, bad settings named, and a state that a shard's checkpoint holds whole
// (the inner optimizer's slots and the schedule's step), so that a restored shard continues
// exactly as one that never stopped.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/cosine_decay.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/piecewise_constant.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>

#include <support/deadline.hpp>
#include <support/error_checks.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

BOOST_AUTO_TEST_SUITE(optim_schedules_test)

namespace {

namespace tt = boost::test_tools;
using cpu = dsgd::device::cpu;
using namespace dsgd::optim;
using dsgd::test::soon;

static_assert(dsgd::Optimizer<piecewise_constant<sgd>, cpu>);
static_assert(dsgd::Optimizer<cosine_decay<adam>, cpu>);
static_assert(dsgd::checkpointable_state<exponential_decay<momentum>::state<cpu>>);
static_assert(dsgd::checkpointable_state<piecewise_constant<sgd>::state<cpu>>);
static_assert(dsgd::checkpointable_state<cosine_decay<adam>::state<cpu>>);

// The names a state visits, "name" for a slot and "name#" for a counter.
template <class S>
std::vector<std::string> visited(S& s) {
  std::vector<std::string> out;
  s.visit([&](const char* name, auto& member) {
    out.push_back(std::string(name) + (std::is_same_v<std::decay_t<decltype(member)>, std::uint64_t> ? "#" : ""));
  });
  return out;
}

// Applies @p opt @p steps times to w = 0 with gradient -1 (SGD inside: w gains the rate of
// each step); @returns w after each.
template <class O>
std::vector<float> sgd_walk(const O& opt, int steps) {
  typename O::template state<cpu> s(cpu{}, 1);
  std::vector<float> w{0.f}, g{-1.f}, out;
  for (int i = 0; i < steps; ++i) {
    opt.apply(cpu{}, s, w.data(), g.data(), 1);
    out.push_back(w[0]);
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(piecewise_constant_takes_values_0_up_to_and_at_the_first_boundary_as_tensorflow) {
  const piecewise_constant<sgd> opt{{}, {3, 6}, {1.f, 0.5f, 0.25f}};
  const std::vector<float> rates{1.f, 1.f, 1.f, 1.f, 0.5f, 0.5f, 0.5f, 0.25f, 0.25f};
  for (std::uint64_t t = 0; t < rates.size(); ++t) BOOST_TEST(opt.learning_rate_at(t) == rates[t], "t = " << t);
  BOOST_TEST(opt.learning_rate_at(1'000'000) == 0.25f);
  BOOST_TEST(sgd_walk(opt, 8) == (std::vector<float>{1, 2, 3, 4, 4.5f, 5, 5.5f, 5.75f}), tt::per_element());
}

BOOST_AUTO_TEST_CASE(piecewise_constant_names_values_and_boundaries_that_do_not_fit) {
  using dsgd::test::contains;
  using dsgd::test::error_of;
  auto msg = error_of(
      [] {
        (void)piecewise_constant<sgd>{{}, {3, 6}, {1.f, 0.5f}}.learning_rate_at(0);
      },
      dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "values holds 2 rates for 2 boundaries"), msg);
  msg = error_of(
      [] {
        (void)piecewise_constant<sgd>{{}, {6, 6}, {1.f, 0.5f, 0.25f}}.learning_rate_at(0);
      },
      dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "boundaries[1] = 6 does not exceed boundaries[0] = 6"), msg);
  // apply() refuses too, before anything changes.
  piecewise_constant<sgd> bad{{}, {}, {}};
  piecewise_constant<sgd>::state<cpu> s(cpu{}, 1);
  std::vector<float> w{1.f}, g{1.f};
  error_of([&] { bad.apply(cpu{}, s, w.data(), g.data(), 1); }, dsgd::errc::invalid_argument);
  BOOST_TEST(w[0] == 1.f);
  BOOST_TEST(s.updates == 0u);
}

BOOST_AUTO_TEST_CASE(cosine_decay_warms_up_linearly_then_follows_half_a_cosine_to_alpha) {
  // Peak 1, warmup from 0.2 over 4 steps, then 6 steps of cosine down to alpha = 0.1:
  // at d steps into the cosine, 0.9 * (1 + cos(pi d / 6)) / 2 + 0.1.
  const cosine_decay<sgd> opt{{1.f}, 6, 0.1f, 4, 0.2f};
  const std::vector<float> rates{0.2f,
                                 0.4f,
                                 0.6f,
                                 0.8f,                                    // warmup
                                 1.f,                                     // d = 0
                                 0.1f + 0.9f * (1.f + 0.8660254f) / 2.f,  // d = 1, cos(pi/6)
                                 0.775f,                                  // d = 2, cos(pi/3) = 1/2
                                 0.55f,                                   // d = 3
                                 0.325f,                                  // d = 4
                                 0.1f + 0.9f * (1.f - 0.8660254f) / 2.f,
                                 0.1f,
                                 0.1f};  // d = 6 and past the end
  for (std::uint64_t t = 0; t < rates.size(); ++t) {
    BOOST_TEST_INFO("t = " << t);
    BOOST_TEST(opt.learning_rate_at(t) == rates[t], tt::tolerance(1e-6f));
  }
  BOOST_TEST(opt.learning_rate_at(1u << 30) == 0.1f, tt::tolerance(1e-6f));
  // Without warmup it starts at the peak: tf.compat.v1.train.cosine_decay(0.5, t, 4).
  const cosine_decay<sgd> plain{{0.5f}, 4};
  BOOST_TEST(plain.learning_rate_at(0) == 0.5f);
  BOOST_TEST(plain.learning_rate_at(2) == 0.25f, tt::tolerance(1e-6f));
  BOOST_TEST(plain.learning_rate_at(4) == 0.f);  // cos(pi) is -1 exactly in double
  const auto walk = sgd_walk(opt, 3);
  BOOST_REQUIRE(walk.size() == 3u);
  BOOST_TEST(walk[0] == 0.2f, tt::tolerance(1e-6f));
  BOOST_TEST(walk[1] == 0.6f, tt::tolerance(1e-6f));
  BOOST_TEST(walk[2] == 1.2f, tt::tolerance(1e-6f));
  auto msg = dsgd::test::error_of(
      [] {
        (void)cosine_decay<sgd>{{1.f}, 0}.learning_rate_at(3);
      },
      dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "decay_steps is 0"), msg);
}

BOOST_AUTO_TEST_CASE(every_schedule_state_holds_the_inner_slots_under_their_names_and_its_step) {
  exponential_decay<momentum>::state<cpu> a(cpu{}, 3);
  cosine_decay<adam>::state<cpu> b(cpu{}, 3);
  piecewise_constant<sgd>::state<cpu> c(cpu{}, 3);
  BOOST_TEST(visited(a) == (std::vector<std::string>{"velocity", "schedule_step#"}), tt::per_element());
  BOOST_TEST(visited(b) == (std::vector<std::string>{"m", "v", "t#", "schedule_step#"}), tt::per_element());
  BOOST_TEST(visited(c) == (std::vector<std::string>{"schedule_step#"}), tt::per_element());
}

// A shard saved after 5 updates and restored into a fresh shard (the ps's restore) goes on
// exactly as the shard that never stopped: velocity, adam's moments and t, and the schedule's
// step all came back. Under sync_average and async alike.
template <class Rule, class O>
void check_shard_round_trip(const O& opt) {
  const std::vector<float> w0{0.5f, -1.f, 2.f, 0.25f};
  auto grad = [](int k) { return std::vector<float>{0.1f * k, -0.3f, 0.7f / (k + 1), 1.f - 0.05f * k}; };
  auto make = [&] { return Rule{}.template make_shard<cpu, O>(cpu{}, w0, opt, 1); };
  auto whole = make(), first = make();
  for (int k = 0; k < 5; ++k) {
    whole->push(0, k, grad(k).data());
    first->push(0, k, grad(k).data());
  }
  const auto saved = first->save();
  BOOST_TEST(saved.counters.size() >= 1u);
  auto resumed = make();
  resumed->restore(saved);
  for (int k = 5; k < 12; ++k) {
    whole->push(0, k, grad(k).data());
    resumed->push(0, k, grad(k).data());
  }
  std::vector<float> a(w0.size()), b(w0.size());
  whole->pull(0, 12, a.data(), soon());
  resumed->pull(0, 12, b.data(), soon());
  BOOST_TEST(a == b, tt::per_element());
  // The step alone is not enough: a shard whose slots and step start afresh ends elsewhere.
  auto values_only = make();
  values_only->assign(saved.values, saved.step);
  for (int k = 5; k < 12; ++k) values_only->push(0, k, grad(k).data());
  std::vector<float> c(w0.size());
  values_only->pull(0, 12, c.data(), soon());
  BOOST_TEST(a != c);
}

BOOST_AUTO_TEST_CASE(a_restored_shard_continues_every_schedule_exactly) {
  check_shard_round_trip<dsgd::update::sync_average>(exponential_decay<momentum>{{0.1f, 0.9f}, 0.5f, 3, true});
  check_shard_round_trip<dsgd::update::sync_average>(cosine_decay<adam>{{0.05f}, 6, 0.f, 3, 0.01f});
  check_shard_round_trip<dsgd::update::async>(piecewise_constant<momentum>{{0.f, 0.5f}, {2, 7}, {0.2f, 0.1f, 0.05f}});
}

BOOST_AUTO_TEST_SUITE_END()
