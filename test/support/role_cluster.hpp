// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support: a cluster of train::ps_task and train::worker threads over transport::inproc
// (no sockets): run_with_ps() runs a test's workers beside ps:0, and train_roles() trains two
// small variables for a few steps on it, each step exchanging the way a test asks.
#pragma once

#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/train/ps_task.hpp>
#include <dsgd/train/worker.hpp>
#include <dsgd/update/sync_average.hpp>

#include <support/inproc_cluster.hpp>
#include <support/run_tasks.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace dsgd::test {

// Runs ps:0 of @p spec on @p net (a train::ps_task of Rule and Optimizer with options @p o) and
// worker(k) for each k < @p workers, every one on a thread of its own, until the chief has shut
// the ps down and every worker returned; rethrows what one of them threw.
template <class Rule = update::sync_average, class Optimizer = optim::sgd, class Options, class Worker>
void run_with_ps(const test_net<transport::inproc>& net, const cluster::cluster_spec& spec, const Options& o,
                 std::size_t workers, Worker worker) {
  std::vector<std::function<void()>> tasks;
  tasks.push_back([&] {
    train::ps_task<Rule, Optimizer, transport::inproc>(spec, {"ps", 0}, o, net.transport()).join();
  });
  for (std::size_t k = 0; k < workers; ++k) tasks.push_back([&, k] { worker(k); });
  run_tasks(tasks);
}

// How a step exchanges gradients and values.
enum class exchange { push_then_pull, push_pull, overlapped, mixed };

// What one worker ended with.
struct worker_outcome {
  std::vector<std::vector<float>> values;  // after the last pull
  std::uint64_t step = 0;
  std::size_t dropped = 0;
  bool buffer_stable = true;  // staged().data() the same after create_variables and every step
  std::size_t allocations = 0;
};

template <class Rule = update::sync_average>
using role_options = trainer_options<placement::round_robin, Rule, optim::sgd>;

template <class Rule = update::sync_average>
role_options<Rule> quiet_options() {
  using namespace std::chrono_literals;
  role_options<Rule> o;
  o.connection.token = "secret";
  o.connection.log = [](std::string_view) {};
  o.optimizer = {0.25f};
  o.serving.step_timeout = 30s;
  o.serving.ready_timeout = 30s;
  o.requests.startup_timeout = 20s;
  return o;
}

// Worker k's gradient of variable v: depends on the values (so stale values would show) and on k.
template <class D>
void gradients_of(const std::vector<tensor<D>>& vars, std::vector<tensor<D>>& grads, std::size_t k) {
  for (std::size_t v = 0; v < vars.size(); ++v) {
    auto host = vars[v].to_host();
    for (auto& x : host) x = 0.5f * x + float(k + 1) + 0.125f * float(v);
    grads[v].assign(host);
  }
}

// Trains @p steps steps on 1 ps task and 2 workers on device @p D, each step exchanging as @p how
// says (mixed: push then pull, push_pull and overlapped in turn).
template <class D, class Rule = update::sync_average>
std::vector<worker_outcome> train_roles(exchange how, std::size_t steps) {
  using worker = train::worker<D, placement::round_robin, Rule, transport::inproc>;
  const test_net<transport::inproc> net;
  const auto spec = net.spec(1, 2);
  const auto o = quiet_options<Rule>();
  std::vector<worker_outcome> out(2);
  run_with_ps<Rule>(net, spec, o, 2, [&](std::size_t k) {
    worker w(spec, {"worker", int(k)}, o, D{}, net.transport());
    std::vector<tensor<D>> vars, grads;
    for (auto s : {shape{3, 4}, shape{5}}) {
      vars.emplace_back(D{}, s, [](std::span<float> x) {
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * float(i);
      });
      grads.emplace_back(D{}, s);
    }
    w.create_variables(vars, {"w", "b"});
    const float* buffer = w.staged().data();
    auto& r = out[k];
    auto step_with = [&](exchange e) {
      if (e == exchange::overlapped) {
        auto ex = w.overlapped(vars, grads);
        for (std::size_t v = 0; v < vars.size(); ++v) ex.parameters_needed(v);
        gradients_of(vars, grads, k);
        for (std::size_t v = vars.size(); v-- > 0;) ex.gradient_ready(v);  // the last layer's first
        r.dropped += ex.end_step();
        ex.step();
        return;
      }
      gradients_of(vars, grads, k);
      if (e == exchange::push_pull) {
        r.dropped += w.push_pull(grads, vars);
      } else {
        r.dropped += w.push(grads);
        w.pull(vars);
      }
    };
    for (std::size_t s = 0; s < steps; ++s) {
      step_with(how == exchange::mixed ? exchange(s % 3) : how);
      r.buffer_stable = r.buffer_stable && w.staged().data() == buffer;
    }
    for (const auto& v : vars) r.values.push_back(v.to_host());
    r.step = w.step();
    r.allocations = w.staged().allocations();
    w.finish();
  });
  return out;
}

}  // namespace dsgd::test
