// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/train/local_sgd.hpp>: 1 ps and 2 workers (threads, loopback TCP) train a
// quadratic whose minimum differs per worker. Local SGD exchanges once per K steps and the ps
// then holds the mean of the workers' local models; with K = 1 it is synchronous SGD.
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/train/local_sgd.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/sync_average.hpp>

#include <support/loopback_cluster.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(local_sgd_test)

using namespace std::chrono_literals;
using cpu = dsgd::device::cpu;
using trainer_type = dsgd::trainer<cpu, dsgd::placement::round_robin, dsgd::update::sync_average, dsgd::optim::sgd>;

namespace {

const std::vector<std::string> names{"w", "b"};

std::vector<dsgd::tensor<cpu>> start_values() {
  std::vector<dsgd::tensor<cpu>> v;
  v.emplace_back(cpu{}, dsgd::shape{3, 2}, dsgd::init::constant{1.f});
  v.emplace_back(cpu{}, dsgd::shape{2}, dsgd::init::constant{-1.f});
  return v;
}

// Worker k's gradient pulls every value towards k + 1: g = x - (k + 1).
void gradient_of(std::size_t k, const std::vector<dsgd::tensor<cpu>>& values, std::vector<dsgd::tensor<cpu>>& g) {
  for (std::size_t v = 0; v < values.size(); ++v) {
    auto x = values[v].to_host();
    for (auto& e : x) e -= float(k + 1);
    g[v].assign(x);
  }
}

struct outcome {
  std::vector<std::vector<float>> values;                            // worker 0's after the last step
  std::uint64_t global_step = 0;                                     // its trainer's step: the averages made
  std::vector<std::vector<std::vector<float>>> before_last_average;  // each worker's local model then
};

// @p local_steps local steps between averages (0: plain sync SGD with the ps's sgd at @p lr),
// @p steps local steps in all, the local optimizer sgd{lr}.
outcome run(std::size_t local_steps, std::size_t steps, float lr) {
  auto spec = dsgd::test::loopback_cluster(1, 2);
  auto options = [&](float ps_lr) {
    trainer_type::options o;
    o.connection.token = "t";
    o.optimizer = dsgd::optim::sgd{ps_lr};
    o.serving.step_timeout = 30s;
    o.requests.startup_timeout = 30s;
    o.connection.log = [](std::string_view) {};
    return o;
  };
  const float ps_lr = local_steps == 0 ? lr : 1.f;
  outcome out;
  out.before_last_average.resize(2);
  std::exception_ptr failure;
  std::mutex m;
  auto guarded = [&](auto f) {
    try {
      f();
    } catch (...) {
      std::lock_guard lock(m);
      if (!failure) failure = std::current_exception();
    }
  };
  std::thread ps([&] { guarded([&] { trainer_type(spec, {"ps", 0}, options(ps_lr)).join(); }); });
  std::vector<std::thread> workers;
  for (std::size_t k = 0; k < 2; ++k)
    workers.emplace_back([&, k] {
      guarded([&] {
        trainer_type t(spec, {"worker", int(k)}, options(ps_lr));
        auto values = start_values(), grads = start_values();
        t.create_variables(values, names);
        if (local_steps == 0) {
          for (std::size_t i = 0; i < steps; ++i) {
            gradient_of(k, values, grads);
            t.push_pull(grads, values);
          }
        } else {
          dsgd::train::local_sgd local(cpu{}, dsgd::optim::sgd{lr}, local_steps, values);
          for (std::size_t i = 0; i < steps; ++i) {
            gradient_of(k, values, grads);
            if (!local.step(grads, values)) continue;
            {
              std::lock_guard lock(m);
              out.before_last_average[k].clear();
              for (auto& v : values) out.before_last_average[k].push_back(v.to_host());
            }
            t.push_pull(local.deltas(), values);
            local.restart_from(values);
          }
        }
        if (k == 0) {
          for (auto& v : values) out.values.push_back(v.to_host());
          out.global_step = t.step();
        }
        t.finish();
      });
    });
  for (auto& w : workers) w.join();
  ps.join();
  if (failure) std::rethrow_exception(failure);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_local_step_between_averages_is_synchronous_sgd) {
  const auto sync = run(0, 20, 0.1f);
  const auto local = run(1, 20, 0.1f);
  BOOST_TEST(local.global_step == 20u);
  for (std::size_t v = 0; v < 2; ++v)
    for (std::size_t i = 0; i < sync.values[v].size(); ++i)
      BOOST_TEST(local.values[v][i] == sync.values[v][i], boost::test_tools::tolerance(1e-5f));
  // Sync SGD towards the mean minimum 1.5: x_t = 1.5 + (x_0 - 1.5) * 0.9^t.
  BOOST_TEST(sync.values[1][0] == 1.5f + (-1.f - 1.5f) * std::pow(0.9f, 20.f), boost::test_tools::tolerance(1e-4f));
}

BOOST_AUTO_TEST_CASE(every_k_steps_the_workers_go_on_from_the_mean_of_their_models) {
  const auto out = run(4, 20, 0.1f);
  BOOST_TEST(out.global_step == 5u);  // one exchange per 4 local steps
  // After the last average every worker holds the mean of both local models.
  for (std::size_t v = 0; v < 2; ++v)
    for (std::size_t i = 0; i < out.values[v].size(); ++i) {
      const float mean = (out.before_last_average[0][v][i] + out.before_last_average[1][v][i]) / 2;
      BOOST_TEST(out.values[v][i] == mean, boost::test_tools::tolerance(1e-6f));
    }
  // Between averages each worker moved towards its own minimum (1 and 2): the local models differ.
  BOOST_TEST(out.before_last_average[0][1][0] < out.before_last_average[1][1][0] - 0.05f);
}

BOOST_AUTO_TEST_CASE(zero_local_steps_and_other_variables_are_named) {
  auto values = start_values();
  BOOST_CHECK_EXCEPTION(dsgd::train::local_sgd(cpu{}, dsgd::optim::sgd{0.1f}, 0, values), dsgd::error,
                        [](const dsgd::error& e) {
                          return e.code() == dsgd::errc::invalid_argument &&
                                 std::string(e.what()).find("0 local steps") != std::string::npos;
                        });
  dsgd::train::local_sgd local(cpu{}, dsgd::optim::sgd{0.1f}, 2, values);
  auto fewer = start_values();
  fewer.pop_back();
  BOOST_CHECK_EXCEPTION(local.step(fewer, values), dsgd::error, [](const dsgd::error& e) {
    return e.code() == dsgd::errc::shape_mismatch &&
           std::string(e.what()).find("1 gradients, expected 2") != std::string::npos;
  });
}

BOOST_AUTO_TEST_SUITE_END()
