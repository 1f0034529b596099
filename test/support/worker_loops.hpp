// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support: the workers' loops of the ps tests, each worker a thread of this process; the
// caller runs the ps tasks and checks what they hold.
//  - run_async_pushes: async workers each push an all-ones gradient and pull after every push,
//    against one variable on ps:0 (update::async with a power-of-two rate, so that every value
//    is exact). Every push moves every element alike, so a pull that saw part of one is not
//    uniform; once all are done, worker 0 pulls the end.
//  - run_sync_steps: sync workers pull step s, push a gradient that is a fixed function of
//    (worker, step, value), and end with the values after the last step.
#pragma once

#include <dsgd/client/ps_client.hpp>
#include <dsgd/placement/plan.hpp>
#include <dsgd/placement/round_robin.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace dsgd::test {

// Connects @p c as worker @p k and registers it with @p plan; worker 0 also initialises the
// variables to @p init. Then waits until every ps task is ready.
template <class Client>
void join_cluster(Client& c, const placement::plan& plan, std::size_t k, const std::vector<std::vector<float>>& init) {
  c.connect();
  c.register_worker(plan, k, k == 0);
  if (k == 0) {
    std::vector<std::span<const float>> v(init.begin(), init.end());
    c.initialize(plan, v);
  }
  c.wait_ready();
}

// Runs @p f(k) for k < @p n, each on a thread of its own; @returns what each threw ("":
// nothing), for the test thread to check (Boost.Test is not thread-safe).
template <class F>
std::vector<std::string> on_threads(std::size_t n, F f) {
  std::vector<std::string> failures(n);
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < n; ++k)
    threads.emplace_back([&, k] {
      try {
        f(k);
      } catch (const std::exception& e) {
        failures[k] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return failures;
}

struct async_pushes_result {
  std::vector<std::string> failures;  // per worker: what it threw ("": nothing)
  std::vector<float> final_values;    // worker 0's pull once every worker is done
};

// @p workers threads, each with the client @p make_client(k) (a std::unique_ptr to a connected
// or unconnected client::basic_ps_client, whose identity is worker:k), push @p pushes times a
// variable of @p elements floats initialised to 1 by worker 0; worker 0 shuts the cluster down.
template <class MakeClient>
async_pushes_result run_async_pushes(std::size_t workers, int pushes, std::size_t elements, MakeClient make_client) {
  using namespace std::chrono_literals;
  const auto plan = placement::round_robin{}.place({{"w", {elements}}}, 1);
  async_pushes_result out;
  std::atomic<std::size_t> done_pushing{0};
  out.failures = on_threads(workers, [&](std::size_t k) {
    auto c = make_client(k);
    std::vector<float> w(elements, 1.f), g(elements, 1.f);
    join_cluster(*c, plan, k, {w});
    for (int i = 0; i < pushes; ++i) {
      std::vector<std::span<const float>> src{g};
      c->push(plan, 0, src);
      std::vector<std::span<float>> dst{w};
      c->pull(plan, 0, dst);
      if (auto odd = std::find_if(w.begin(), w.end(), [&](float x) { return x != w[0]; }); odd != w.end())
        throw std::runtime_error("pull " + std::to_string(i) + " is torn: element 0 is " + std::to_string(w[0]) +
                                 ", element " + std::to_string(odd - w.begin()) + " is " + std::to_string(*odd));
    }
    ++done_pushing;
    if (k == 0) {  // once all are done, the shard holds every push exactly once
      for (auto until = std::chrono::steady_clock::now() + 60s; done_pushing < workers;) {
        if (std::chrono::steady_clock::now() > until) throw std::runtime_error("the other workers never finished");
        std::this_thread::sleep_for(5ms);
      }
      std::vector<std::span<float>> dst{w};
      c->pull(plan, 0, dst);
      out.final_values = w;
    }
    c->finish();
    if (k == 0) c->shutdown_cluster();
  });
  return out;
}

// The reference for run_sync_steps: SGD at @p rate on the mean of the @p workers' gradients.
template <class Grad>
std::vector<std::vector<float>> mean_gradient_sgd(std::vector<std::vector<float>> values, std::size_t workers,
                                                  std::uint64_t steps, float rate, Grad grad) {
  for (std::uint64_t s = 0; s < steps; ++s)
    for (auto& var : values)
      for (auto& w : var) {
        float g = 0.f;
        for (std::size_t k = 0; k < workers; ++k) g += grad(k, s, w);
        w -= rate * (g / float(workers));
      }
  return values;
}

struct sync_steps_result {
  std::vector<std::string> failures;                    // per worker: what it threw ("": nothing)
  std::vector<std::vector<std::vector<float>>> finals;  // per worker: its pull after the last step
};

// @p workers threads with clients @p make_client(k) (as for run_async_pushes) train @p plan's
// variables from @p init (worker 0 initialises) for @p steps sync steps: pull step s (which
// must return s), push @p grad(k, s, value) elementwise (which no shard may drop), then pull
// step @p steps and finish.
template <class Grad, class MakeClient>
sync_steps_result run_sync_steps(std::size_t workers, const placement::plan& plan,
                                 const std::vector<std::vector<float>>& init, std::uint64_t steps, Grad grad,
                                 MakeClient make_client) {
  sync_steps_result out;
  out.finals.resize(workers);
  out.failures = on_threads(workers, [&](std::size_t k) {
    auto c = make_client(k);
    join_cluster(*c, plan, k, init);
    auto w = init;
    auto g = init;
    for (std::uint64_t s = 0; s < steps; ++s) {
      std::vector<std::span<float>> dst(w.begin(), w.end());
      if (auto got = c->pull(plan, s, dst); got != s)
        throw std::runtime_error("pull at step " + std::to_string(s) + " returned step " + std::to_string(got));
      for (std::size_t v = 0; v < w.size(); ++v)
        for (std::size_t i = 0; i < w[v].size(); ++i) g[v][i] = grad(k, s, w[v][i]);
      std::vector<std::span<const float>> src(g.begin(), g.end());
      if (auto dropped = c->push(plan, s, src); dropped != 0)
        throw std::runtime_error("push at step " + std::to_string(s) + ": " + std::to_string(dropped) +
                                 " shards dropped it");
    }
    std::vector<std::span<float>> dst(w.begin(), w.end());
    c->pull(plan, steps, dst);
    out.finals[k] = w;
    c->finish();
  });
  return out;
}

}  // namespace dsgd::test
