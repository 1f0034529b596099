// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support for the conformance tests: softmax regression trained on real Fashion-MNIST by
// train::ps_task and two train::worker threads over transport::inproc, with whatever device,
// placement, update rule and optimizer a test picks (the user types that model only a concept),
// and a look at what each ps task holds once it has served.
#pragma once

#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/model/softmax_regression.hpp>
#include <dsgd/model/train.hpp>
#include <dsgd/optim/cosine_decay.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/placement/plan.hpp>
#include <dsgd/train/ps_task.hpp>
#include <dsgd/train/trainer_options.hpp>
#include <dsgd/train/worker.hpp>
#include <dsgd/transport/inproc.hpp>

#include <support/fashion_mnist_sets.hpp>
#include <support/inproc_cluster.hpp>
#include <support/run_tasks.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string_view>
#include <type_traits>
#include <vector>

namespace dsgd::test {

// The cluster's settings for policies @p P, @p U and @p O, the optimizer's and placement's given:
// a cluster token, no log lines, deadlines long enough for a loaded machine.
template <class P, class U, class O>
trainer_options<P, U, O> user_policy_options(O optimizer, P placement = {}, U rule = {}) {
  using namespace std::chrono_literals;
  trainer_options<P, U, O> o;
  o.connection.token = "secret";
  // DSGD_TEST_LOG=1 shows the tasks' log lines (on stderr).
  if (!std::getenv("DSGD_TEST_LOG")) o.connection.log = [](std::string_view) {};
  o.serving.step_timeout = 60s;
  o.serving.ready_timeout = 60s;
  o.requests.startup_timeout = 30s;
  o.optimizer = std::move(optimizer);
  o.rule = std::move(rule);
  o.placement = std::move(placement);
  return o;
}

// The built-in optimizer of these runs: momentum 0.9 at a rate that decays over a run's
// @p updates (469 for sync: one per step), so that the last values, whose accuracy a test
// checks, are not those of a noisy last few steps (without the decay they vary by 0.02 with the
// order of the batches).
using decaying_momentum = optim::cosine_decay<optim::momentum>;
inline decaying_momentum decaying_momentum_over(std::uint64_t updates) {
  return {.base = {0.03f, 0.9f, false}, .decay_steps = updates, .alpha = 0.05f};
}

// What a training run of train_softmax ended with.
struct softmax_outcome {
  double accuracy = 0;                 // the chief's final values on the 10,000 test images
  std::vector<std::uint64_t> steps;    // each worker's step() at the end
  std::vector<std::size_t> pushes;     // each worker's push_pull() calls
  std::size_t dropped = 0;             // pushes the ps tasks dropped, both workers together
  placement::plan plan;                // the chief's placement
  std::size_t staged_allocations = 0;  // the chief's host staging buffers (none on a host device)
};

// Trains softmax regression (784 -> 10) on @p ps_tasks ps tasks and two workers on device
// @p device, each worker one epoch of its half of the training set in batches of 64 with
// push_pull; then calls @p inspect(ps, i) on ps task i's thread once it has served. The tasks
// talk over transport::inproc, or over the transport T @p over makes of it.
template <Device D, Placement P, UpdateRule U, class O, Transport T = transport::inproc>
softmax_outcome train_softmax(
    const trainer_options<P, U, O>& o, std::size_t ps_tasks, D device = {},
    std::type_identity_t<std::function<void(const train::ps_task<U, O, T>&, std::size_t)>> inspect = {},
    std::type_identity_t<std::function<T(transport::inproc)>> over = {}) {
  using ps_type = train::ps_task<U, O, T>;
  using worker_type = train::worker<D, P, U, T>;
  const auto& train_set = fashion_train();
  const auto& test_set = fashion_test();
  const test_net<transport::inproc> net;
  const auto spec = net.spec(ps_tasks, 2);
  const auto make_transport = [&] {
    if constexpr (std::same_as<T, transport::inproc>) return net.transport();
    else return over(net.transport());
  };
  softmax_outcome out;
  out.steps.resize(2);
  out.pushes.resize(2);
  std::vector<std::size_t> dropped(2);
  std::vector<std::function<void()>> tasks;
  for (std::size_t i = 0; i < ps_tasks; ++i)
    tasks.push_back([&, i] {
      ps_type ps(spec, {"ps", int(i)}, o, make_transport());
      ps.join();
      if (inspect) inspect(ps, i);
    });
  for (std::size_t k = 0; k < 2; ++k)
    tasks.push_back([&, k] {
      worker_type w(spec, {"worker", int(k)}, o, device, make_transport());
      model::softmax_regression<D> m(device, {.seed = 1});
      w.create_variables(m.parameters(), m.names());
      model::shuffled_batches batches(train_set, {.batch = 64, .seed = 10 + k, .shard = k, .shards = 2});
      const auto stats = batches.run_epoch([&](const model::batch_view& b) {
        const float loss = m.forward_backward(b.images, b.labels, b.size);
        dropped[k] += w.push_pull(m.gradients(), m.parameters());
        ++out.pushes[k];
        return loss;
      });
      out.steps[k] = w.step();
      if (w.is_chief()) {
        out.accuracy = m.accuracy(test_set);
        out.plan = w.plan();
        out.staged_allocations = w.staged().allocations();
        std::printf("%zu steps in %.2f s, mean loss %.4f, test accuracy %.4f\n", stats.steps, stats.seconds,
                    stats.mean_loss, out.accuracy);
      }
      w.finish();
    });
  run_tasks(tasks);
  out.dropped = dropped[0] + dropped[1];
  return out;
}

}  // namespace dsgd::test
