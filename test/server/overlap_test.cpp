// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for trainer::overlap and trainer::push_pull (<dsgd/trainer.hpp>) and the in-parts pull
// and push of <dsgd/client/ps_client.hpp> behind them: clusters of 2 ps tasks and 2 workers as threads of this
// process, training a small dense network. The trainer's two roles, train::ps_task and
// train::worker, run over transport::inproc (no sockets); dsgd::trainer itself is TCP only.
#include <dsgd/model/feed_forward.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/train/ps_task.hpp>
#include <dsgd/train/worker.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/sync_average.hpp>

#include <support/error_checks.hpp>
#include <support/inproc_cluster.hpp>

#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <exception>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(overlap_test)

using namespace std::chrono_literals;
using cpu = dsgd::device::cpu;

namespace {

constexpr std::size_t batch = 16;
const std::vector<std::size_t> widths{20, 16, 12, 5};

template <class Rule>
using trainer_for = dsgd::trainer<cpu, dsgd::placement::round_robin, Rule, dsgd::optim::momentum>;
using inproc = dsgd::transport::inproc;
// The roles a trainer_for<Rule> holds, over inproc.
template <class Rule>
using ps_for = dsgd::train::ps_task<Rule, dsgd::optim::momentum, inproc>;
template <class Rule>
using worker_for = dsgd::train::worker<cpu, dsgd::placement::round_robin, Rule, inproc>;

// What one worker ended with.
struct outcome {
  std::vector<std::vector<float>> values;  // the parameters after the last pull
  std::uint64_t step = 0;                  // their step
  std::size_t dropped = 0;
  std::uint64_t settled = 0;  // the step of a pull made once both workers' pushes are answered
};

// Worker k's batches: random inputs and labels of its own seed, the same in every run.
struct data {
  std::vector<float> x;
  std::vector<std::int32_t> y;
  data(std::size_t steps, std::uint64_t seed) : x(steps * batch * widths.front()), y(steps * batch) {
    std::mt19937_64 g(seed);
    std::normal_distribution<float> normal(0.f, 1.f);
    for (auto& v : x) v = normal(g);
    for (auto& v : y) v = static_cast<std::int32_t>(g() % widths.back());
  }
};

// How a step exchanges gradients and values.
enum class exchange { push_then_pull, push_pull, overlapped };

// Trains `steps` steps on 2 ps tasks and 2 workers, each step exchanging as @p how says;
// @returns each worker's outcome.
template <class Rule>
std::vector<outcome> train(exchange how, std::size_t steps) {
  using trainer = trainer_for<Rule>;
  dsgd::test::test_net<inproc> network;
  auto spec = network.spec(2, 2);
  typename trainer::options o;
  o.connection.token = "secret";
  o.optimizer = {0.05f, 0.9f, false};
  o.serving.step_timeout = 30s;
  o.serving.ready_timeout = 30s;
  o.requests.startup_timeout = 20s;
  o.connection.log = [](std::string_view) {};
  std::vector<std::exception_ptr> failed(4);
  std::vector<outcome> out(2);
  std::atomic<int> pushed{0};  // workers whose pushes are all answered (or who failed)
  std::vector<std::thread> tasks;
  for (int i = 0; i < 2; ++i)
    tasks.emplace_back([&, i] {
      try {
        ps_for<Rule>(spec, {"ps", i}, o, network.transport()).join();
      } catch (...) {
        failed[2 + i] = std::current_exception();
      }
    });
  for (int k = 0; k < 2; ++k)
    tasks.emplace_back([&, k] {
      bool arrived = false;
      try {
        worker_for<Rule> t(spec, {"worker", k}, o, cpu{}, network.transport());
        dsgd::model::feed_forward<cpu> net({}, widths, 7);
        t.create_variables(net.parameters(), net.names());
        const data d(steps, 100 + std::uint64_t(k));
        auto batch_at = [&](std::size_t s) {
          return std::pair{d.x.data() + s * batch * widths.front(), d.y.data() + s * batch};
        };
        if (how == exchange::overlapped) {
          auto ex = t.overlapped(net.parameters(), net.gradients());
          for (std::size_t s = 0; s < steps; ++s) {
            auto [x, y] = batch_at(s);
            net.forward_backward(x, y, batch, ex);
            out[k].dropped += ex.end_step();
          }
          out[k].step = ex.step();
        } else {
          for (std::size_t s = 0; s < steps; ++s) {
            auto [x, y] = batch_at(s);
            net.forward_backward(x, y, batch);
            if (how == exchange::push_pull) {
              out[k].dropped += t.push_pull(net.gradients(), net.parameters());
            } else {
              out[k].dropped += t.push(net.gradients());
              t.pull(net.parameters());
            }
          }
          out[k].step = t.step();
        }
        for (const auto& p : net.parameters()) out[k].values.push_back(p.to_host());
        arrived = true;
        ++pushed;
        const auto limit = std::chrono::steady_clock::now() + 60s;
        while (pushed < 2) {
          if (std::chrono::steady_clock::now() > limit)
            throw std::runtime_error("worker:" + std::to_string(k) +
                                     ": the other worker's pushes not answered in 60 s");
          std::this_thread::sleep_for(1ms);
        }
        out[k].settled = t.pull(net.parameters());
        t.finish();
      } catch (...) {
        failed[k] = std::current_exception();
        if (!arrived) ++pushed;
      }
    });
  for (auto& t : tasks) t.join();
  for (auto& f : failed)
    if (f) std::rethrow_exception(f);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(overlap)

// Sync averages the same two gradients in either order to the same bits, so a run that
// overlaps or pipelines its exchange must end exactly where push-then-pull ends: both move the
// waiting, not the values.
BOOST_AUTO_TEST_CASE(overlapped_and_pipelined_sync_training_end_on_the_same_bits_as_push_then_pull) {
  const std::size_t steps = 12;
  const auto plain = train<dsgd::update::sync_average>(exchange::push_then_pull, steps);
  for (auto how : {exchange::push_pull, exchange::overlapped}) {
    BOOST_TEST_CONTEXT((how == exchange::push_pull ? "push_pull" : "overlapped")) {
      const auto run = train<dsgd::update::sync_average>(how, steps);
      for (std::size_t k = 0; k < 2; ++k) {
        BOOST_TEST(plain[k].step == steps);
        BOOST_TEST(run[k].step == steps);
        BOOST_TEST(run[k].settled == steps);
        BOOST_TEST(run[k].dropped == 0u);
        BOOST_TEST_REQUIRE(run[k].values.size() == plain[k].values.size());
        for (std::size_t v = 0; v < plain[k].values.size(); ++v)
          BOOST_TEST(run[k].values[v] == plain[0].values[v], boost::test_tools::per_element());
      }
    }
  }
  // And the run did train: the values moved from where they started.
  dsgd::model::feed_forward<cpu> start({}, widths, 7);
  BOOST_TEST(start.parameters()[0].to_host() != plain[0].values[0]);
}

// SSP at a bound of 1 clock.
struct ssp_1 : dsgd::update::bounded_staleness {
  ssp_1() : bounded_staleness{.staleness = 1} {}
};
using independent_rules = boost::mpl::list<dsgd::update::async, ssp_1>;

// Async and SSP apply each push on its own: once both workers' pushes are answered, a pull finds
// every push made (2 workers x steps) applied, each exactly once, through the in-parts pushes.
BOOST_AUTO_TEST_CASE_TEMPLATE(overlapped_and_pipelined_async_and_ssp_apply_every_push_once, Rule, independent_rules) {
  const std::size_t steps = 10;
  for (auto how : {exchange::push_pull, exchange::overlapped}) {
    BOOST_TEST_CONTEXT((how == exchange::push_pull ? "push_pull" : "overlapped")) {
      const auto run = train<Rule>(how, steps);
      for (const auto& o : run) {
        BOOST_TEST(o.step >= steps);  // its own pushes at least
        BOOST_TEST(o.step <= 2 * steps);
        BOOST_TEST(o.settled == 2 * steps);
        for (const auto& v : o.values)
          for (float f : v) BOOST_TEST_REQUIRE(std::isfinite(f));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(gradients_that_do_not_match_the_variables_are_refused) {
  using trainer = trainer_for<dsgd::update::sync_average>;
  auto spec = dsgd::test::inproc_cluster(1, 1);  // names only: the trainer binds nothing here
  typename trainer::options o;
  o.connection.token = "secret";
  o.connection.log = [](std::string_view) {};
  trainer t(spec, {"worker", 0}, o);
  dsgd::model::feed_forward<cpu> net({}, widths, 7);
  std::vector<dsgd::tensor<cpu>> too_few(net.gradients().begin(), net.gradients().begin() + 2);
  const auto msg = dsgd::test::error_of([&] { t.overlapped(net.parameters(), too_few); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(dsgd::test::contains(msg, "2 gradients for 6 variables"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
