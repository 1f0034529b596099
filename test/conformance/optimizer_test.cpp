// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Conformance of the Optimizer family: every shipped optimizer models dsgd::Optimizer on the host
// device, a user optimizer that models only the concept (no dsgd base, no detail::) applies
// through the same calls the ps makes, and near-misses are refused (near_miss_optimizer.cpp checks
// that the trainer's error names the concept); a ps applies a user optimizer with a slot while two
// workers train softmax regression on Fashion-MNIST.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/ftrl.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/sync_average.hpp>

#include "user_policy_cluster.hpp"

#include <boost/test/unit_test.hpp>

#include <thrust/memory.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

BOOST_AUTO_TEST_SUITE(conformance_optimizer_test)

namespace {

// A user's optimizer from the concept alone: sign SGD, w -= lr * sign(g), with no slots.
struct sign_sgd {
  float learning_rate = 0.1f;
  template <class D>
  struct state {
    state(const D&, std::size_t) {}
  };
  template <class D>
  void apply(const D&, state<D>&, float* w, const float* g, std::size_t n, float scale = 1.f) const {
    for (std::size_t i = 0; i < n; ++i)
      w[i] -= learning_rate * (g[i] * scale > 0 ? 1.f : g[i] * scale < 0 ? -1.f : 0.f);
  }
};

// Another, with a per-variable slot and a counter: heavy-ball momentum, v = mu v + g, w -= lr_t v,
// its rate decaying linearly to a twentieth over decay_steps updates (host devices: a plain loop),
// counting its applies.
struct counted_momentum {
  float learning_rate = 0.02f;
  float momentum = 0.9f;
  std::uint64_t decay_steps = 0;  // 0: a constant rate
  std::shared_ptr<std::atomic<std::size_t>> applies = std::make_shared<std::atomic<std::size_t>>(0);  // by every copy

  template <class D>
  struct state {
    typename D::template vector<float> velocity;
    std::uint64_t t = 0;  // updates so far
    state(const D&, std::size_t n) : velocity(n, 0.f) {}
  };

  template <class D>
  void apply(const D&, state<D>& s, float* w, const float* g, std::size_t n, float scale = 1.f) const {
    static_assert(D::is_host, "counted_momentum runs on the host");
    const double left = decay_steps ? 1.0 - double(s.t) / double(decay_steps) : 1.0;
    const float lr = learning_rate * float(std::max(left, 0.05));
    float* v = thrust::raw_pointer_cast(s.velocity.data());
    for (std::size_t i = 0; i < n; ++i) {
      v[i] = momentum * v[i] + scale * g[i];
      w[i] -= lr * v[i];
    }
    ++s.t;
    ++*applies;
  }
};

struct no_state {  // near-miss: no per-variable state
  template <class D>
  void apply(const D&, int&, float*, const float*, std::size_t, float) const {}
};

struct no_apply {  // near-miss: a state but nothing that applies it
  template <class D>
  struct state {
    state(const D&, std::size_t) {}
  };
};

}  // namespace

using cpu = dsgd::device::cpu;
static_assert(dsgd::Optimizer<dsgd::optim::sgd, cpu>);
static_assert(dsgd::Optimizer<dsgd::optim::momentum, cpu>);
static_assert(dsgd::Optimizer<dsgd::optim::adagrad, cpu>);
static_assert(dsgd::Optimizer<dsgd::optim::adam, cpu>);
static_assert(dsgd::Optimizer<dsgd::optim::ftrl, cpu>);
static_assert(dsgd::Optimizer<dsgd::optim::exponential_decay<dsgd::optim::momentum>, cpu>);
static_assert(dsgd::Optimizer<sign_sgd, cpu>);
static_assert(dsgd::Optimizer<counted_momentum, cpu>);
static_assert(!dsgd::Optimizer<no_state, cpu>);
static_assert(!dsgd::Optimizer<no_apply, cpu>);
static_assert(!dsgd::Optimizer<int, cpu>);
static_assert(!dsgd::Optimizer<dsgd::optim::sgd, int>);  // not a device

BOOST_AUTO_TEST_SUITE(conformance_optimizer)

BOOST_AUTO_TEST_CASE(a_user_optimizer_applies_through_the_calls_a_ps_makes) {
  std::vector<float> w{1.f, 1.f, 1.f}, g{2.f, -3.f, 0.f};
  sign_sgd o{0.5f};
  sign_sgd::state<cpu> s(cpu{}, w.size());
  o.apply(cpu{}, s, w.data(), g.data(), w.size(), 1.f);
  BOOST_TEST(w == (std::vector<float>{0.5f, 1.5f, 1.f}), boost::test_tools::per_element());
}

// The user's optimizer in a cluster: the ps applies it once per shard and step (sync: the two
// workers' gradients summed, grad_scale 1/2), and the model trains to its accuracy.
BOOST_AUTO_TEST_CASE(a_ps_applies_a_user_optimizer_while_two_workers_train_softmax_regression) {
  const counted_momentum opt{0.03f, 0.9f, 469};  // decays over the run's 469 updates
  const auto o = dsgd::test::user_policy_options<dsgd::placement::round_robin, dsgd::update::sync_average>(opt);
  const auto r = dsgd::test::train_softmax(o, 1, cpu{});
  BOOST_TEST(r.steps[0] == r.pushes[0]);
  BOOST_TEST(r.dropped == 0u);
  BOOST_TEST(opt.applies->load() == 2 * r.steps[0]);  // two variables, one shard each
  BOOST_TEST(r.accuracy >= 0.80);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()

// dsgd::trainer (over TCP) takes the user type as is: every member of the trainer compiles with it.
template class dsgd::trainer<dsgd::device::cpu, dsgd::placement::round_robin, dsgd::update::sync_average,
                             conformance_optimizer_test::counted_momentum>;
