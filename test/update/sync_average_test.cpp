// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/update/sync_average.hpp>, on threads of this process, and the non-blocking pull
// and pin that every rule's shard offers. async and bounded_staleness have their own files.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/sync_average.hpp>

#include <support/deadline.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <random>
#include <string>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(update_sync_average_test)

using namespace std::chrono_literals;
using dsgd::device::cpu;
using steady = dsgd::update::clock_type;
using dsgd::update::push_outcome;

static_assert(dsgd::UpdateRule<dsgd::update::sync_average>);
static_assert(dsgd::UpdateRule<dsgd::update::async>);
static_assert(dsgd::UpdateRule<dsgd::update::bounded_staleness>);
static_assert(!dsgd::UpdateRule<int>);

using dsgd::test::soon;

namespace {

// Least squares y = X w: the gradient of (1/2b) |X_b w - y_b|^2 over rows [lo, hi).
std::vector<float> gradient(const std::vector<float>& x, const std::vector<float>& y, const std::vector<float>& w,
                            std::size_t lo, std::size_t hi) {
  std::size_t d = w.size();
  std::vector<float> g(d, 0.f);
  for (std::size_t r = lo; r < hi; ++r) {
    float e = -y[r];
    for (std::size_t j = 0; j < d; ++j) e += x[r * d + j] * w[j];
    for (std::size_t j = 0; j < d; ++j) g[j] += e * x[r * d + j] / static_cast<float>(hi - lo);
  }
  return g;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(sync_average)

BOOST_AUTO_TEST_CASE(n_workers_in_sync_equal_single_process_sgd_on_the_concatenated_batch) {
  constexpr std::size_t d = 16, workers = 4, per_worker = 8, steps = 30;
  std::mt19937 rng(7);
  std::normal_distribution<float> n01;
  std::vector<float> x(steps * workers * per_worker * d), y(steps * workers * per_worker);
  for (auto& v : x) v = n01(rng);
  for (auto& v : y) v = n01(rng);
  std::vector<float> w0(d, 0.1f);
  dsgd::optim::momentum opt{0.05f, 0.9f, false};

  // Reference: one process, batch = all workers' rows of the step.
  std::vector<float> ref = w0;
  dsgd::optim::momentum::state<cpu> ref_state(cpu{}, d);
  for (std::size_t s = 0; s < steps; ++s) {
    std::size_t lo = s * workers * per_worker;
    auto g = gradient(x, y, ref, lo, lo + workers * per_worker);
    opt.apply(cpu{}, ref_state, ref.data(), g.data(), d);
  }

  dsgd::update::sync_average::shard<cpu, dsgd::optim::momentum> shard(cpu{}, w0, opt, workers);
  // Boost.Test is not thread-safe: the workers record what went wrong, the test thread checks.
  std::vector<std::string> failures(workers);
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < workers; ++k)
    threads.emplace_back([&, k] {
      try {
        std::vector<float> w(d);
        for (std::uint64_t s = 0; s < steps; ++s) {
          if (auto got = shard.pull(k, s, w.data(), soon()); got != s) {
            failures[k] = "pull at step " + std::to_string(s) + " returned step " + std::to_string(got);
            return;
          }
          std::size_t lo = (s * workers + k) * per_worker;
          auto g = gradient(x, y, w, lo, lo + per_worker);
          shard.push(k, s, g.data());
        }
      } catch (const std::exception& e) {
        failures[k] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (std::size_t k = 0; k < workers; ++k) BOOST_TEST(failures[k].empty(), "worker " << k << ": " << failures[k]);
  std::vector<float> actual(d);
  shard.pull(0, steps, actual.data(), soon());
  BOOST_TEST(shard.step() == steps);
  BOOST_TEST(shard.dropped() == 0u);
  BOOST_TEST(actual == ref, boost::test_tools::tolerance(1e-5f) << boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(backup_workers_are_dropped_as_stale_and_counted) {
  std::vector<float> w0{1.f, 1.f};
  dsgd::update::sync_average::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 3, 2);
  std::vector<float> g1{1.f, 0.f}, g2{3.f, 2.f}, late{100.f, 100.f};
  BOOST_TEST((shard.push(0, 0, g1.data()) == push_outcome::accumulated));
  BOOST_TEST((shard.push(1, 0, g2.data()) == push_outcome::applied));
  BOOST_TEST((shard.push(2, 0, late.data()) == push_outcome::dropped));
  BOOST_TEST(shard.dropped() == 1u);
  std::vector<float> w(2);
  BOOST_TEST(shard.pull(2, 1, w.data(), soon()) == 1u);
  BOOST_TEST(w == (std::vector<float>{-1.f, 0.f}), boost::test_tools::per_element());  // 1 - mean
}

BOOST_AUTO_TEST_CASE(a_second_push_in_the_same_step_is_dropped) {
  std::vector<float> w0{0.f};
  dsgd::update::sync_average::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 2);
  std::vector<float> g{1.f};
  BOOST_TEST((shard.push(0, 0, g.data()) == push_outcome::accumulated));
  BOOST_TEST((shard.push(0, 0, g.data()) == push_outcome::dropped));
  BOOST_TEST(shard.step() == 0u);
}

BOOST_AUTO_TEST_CASE(a_dead_worker_becomes_a_timeout_naming_it_not_a_hang) {
  std::vector<float> w0{0.f};
  dsgd::update::sync_average::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 3);
  std::vector<float> g{1.f}, w(1);
  shard.push(0, 0, g.data());
  shard.push(2, 0, g.data());
  auto start = steady::now();
  BOOST_CHECK_EXCEPTION(shard.pull(0, 1, w.data(), steady::now() + 200ms), dsgd::error, [](const dsgd::error& e) {
    return e.code() == dsgd::errc::timed_out &&
           std::string(e.what()).find("no gradient yet from worker:1") != std::string::npos;
  });
  BOOST_TEST((steady::now() - start < 5s));
}

BOOST_AUTO_TEST_CASE(a_finished_worker_no_longer_holds_the_step_back) {
  std::vector<float> w0{0.f};
  dsgd::update::sync_average::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 2);
  std::vector<float> g{2.f}, w(1);
  BOOST_TEST((shard.push(0, 0, g.data()) == push_outcome::accumulated));
  shard.finish(1);  // worker 1 ran out of data
  BOOST_TEST(shard.pull(0, 1, w.data(), soon()) == 1u);
  BOOST_TEST(w[0] == -2.f);
  BOOST_TEST((shard.push(0, 1, g.data()) == push_outcome::applied));
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_named) {
  std::vector<float> w0{0.f};
  BOOST_CHECK_THROW((dsgd::update::sync_average::shard<cpu, dsgd::optim::sgd>(cpu{}, w0, {}, 2, 3)), dsgd::error);
  dsgd::update::sync_average::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 2);
  std::vector<float> g{1.f};
  BOOST_CHECK_EXCEPTION(shard.push(5, 0, g.data()), dsgd::error, [](const dsgd::error& e) {
    return std::string(e.what()).find("worker 5 is out of range") != std::string::npos;
  });
  BOOST_CHECK_EXCEPTION(shard.push(0, 3, g.data()), dsgd::error,
                        [](const dsgd::error& e) { return std::string(e.what()).find("step 3") != std::string::npos; });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(non_blocking_pull)

BOOST_AUTO_TEST_CASE(try_pull_copies_nothing_until_the_rule_allows_it) {
  std::vector<float> w0{3.f}, g{1.f};
  dsgd::update::sync_average::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 2);
  std::vector<float> w{-7.f};
  BOOST_TEST(!shard.try_pull(0, 1, w.data()).has_value());
  BOOST_TEST(w[0] == -7.f);
  BOOST_TEST(shard.wait_reason(0, 1).find("worker:0, worker:1") != std::string::npos);
  shard.push(0, 0, g.data());
  shard.push(1, 0, g.data());
  BOOST_TEST(shard.try_pull(0, 1, w.data()).value() == 1u);
  BOOST_TEST(w[0] == 2.f);
  BOOST_TEST(shard.wait_reason(0, 1).empty());
}

BOOST_AUTO_TEST_CASE(a_pin_keeps_its_version_while_pushes_land_and_costs_no_copy_without_them) {
  std::vector<float> w0{1.f, 2.f, 3.f}, g{1.f, 1.f, 1.f}, w(3);
  dsgd::update::async::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 2);
  auto pin = shard.try_pin(0, 0);
  BOOST_REQUIRE(pin.has_value());
  BOOST_TEST(pin->step == 0u);
  const float* pinned_at = pin->values->data();
  shard.push(1, 0, g.data());  // lands while the pin lives: written to a copy
  shard.push(1, 1, g.data());
  BOOST_TEST(std::vector<float>(pin->values->begin(), pin->values->end()) == w0, boost::test_tools::per_element());
  BOOST_TEST(shard.pull(0, 0, w.data(), soon()) == 2u);
  BOOST_TEST(w == (std::vector<float>{-1.f, 0.f, 1.f}), boost::test_tools::per_element());
  pin.reset();

  // Pins taken and released between pushes share the shard's own values: no copy at all.
  auto first = shard.try_pin(0, 0);
  const float* shard_at = first->values->data();
  BOOST_TEST(shard_at != pinned_at);
  first.reset();
  shard.push(1, 2, g.data());
  auto second = shard.try_pin(1, 0);
  BOOST_TEST(second->values->data() == shard_at);
  BOOST_TEST(second->step == 3u);
  BOOST_TEST((*second->values)[0] == -2.f);
}

BOOST_AUTO_TEST_CASE(try_pin_pins_nothing_until_the_rule_allows_it) {
  std::vector<float> w0{3.f}, g{1.f};
  dsgd::update::sync_average::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 2);
  BOOST_TEST(!shard.try_pin(0, 1).has_value());
  shard.push(0, 0, g.data());
  BOOST_TEST(!shard.try_pin(0, 1).has_value());
  shard.push(1, 0, g.data());
  auto pin = shard.try_pin(0, 1);
  BOOST_REQUIRE(pin.has_value());
  BOOST_TEST(pin->step == 1u);
  BOOST_TEST((*pin->values)[0] == 2.f);
}

BOOST_AUTO_TEST_CASE(a_departed_worker_is_a_backup_only_within_the_backup_count) {
  std::vector<float> w0{0.f}, g{-1.f}, w(1);
  // 3 workers, 2 aggregated: one backup.
  dsgd::update::sync_average::shard<cpu, dsgd::optim::sgd> backup(cpu{}, w0, {1.f}, 3, 2);
  backup.finish(1);
  backup.depart(2);
  BOOST_TEST((backup.push(0, 0, g.data()) == push_outcome::applied));  // worker 2 was the backup
  backup.rejoin(2);
  BOOST_TEST((backup.push(0, 1, g.data()) == push_outcome::accumulated));  // it counts again
  // Without backups a departed worker is waited for, as before: its deadline names it.
  dsgd::update::sync_average::shard<cpu, dsgd::optim::sgd> none(cpu{}, w0, {1.f}, 2);
  none.depart(1);
  BOOST_TEST((none.push(0, 0, g.data()) == push_outcome::accumulated));
  BOOST_TEST(none.wait_reason(0, 1).find("worker:1") != std::string::npos);
}

// Steps of sparse pushes only are applied to the rows they touched (TensorFlow's sparse apply of
// IndexedSlices, and what async does): with momentum, a row no push of the step named keeps its
// value and its velocity, where a dense apply would move it along its velocity. The oracle is
// lazy momentum by hand on the mean of the step's row gradients (duplicate rows summed, the sum
// over workers divided by the workers). A step with a dense push among its pushes is dense.
BOOST_AUTO_TEST_CASE(sparse_steps_apply_only_the_rows_they_touched) {
  constexpr std::size_t rows = 50, dim = 4, workers = 3, steps = 8;
  const float lr = 0.1f, mu = 0.9f;
  std::mt19937 rng(11);
  std::normal_distribution<float> n01;
  std::uniform_int_distribution<std::uint64_t> pick(0, rows - 1);
  std::vector<float> w0(rows * dim);
  for (auto& v : w0) v = n01(rng);
  dsgd::update::sync_average::shard<cpu, dsgd::optim::momentum> shard(cpu{}, w0, {lr, mu, false}, workers);

  std::vector<float> w = w0, velocity(rows * dim, 0.f);
  for (std::uint64_t s = 0; s < steps; ++s) {
    const bool dense_step = s == 5;  // worker 0 pushes a dense gradient there
    std::vector<float> sum(rows * dim, 0.f);
    std::vector<bool> touched(rows, false);
    for (std::size_t k = 0; k < workers; ++k) {
      if (dense_step && k == 0) {
        std::vector<float> g(rows * dim);
        for (auto& v : g) v = n01(rng);
        for (std::size_t i = 0; i < g.size(); ++i) sum[i] += g[i];
        shard.push(k, s, g.data());
        continue;
      }
      std::vector<std::uint64_t> keys(4);  // 4 rows a push, a repeat likely across workers
      for (auto& r : keys) r = pick(rng);
      keys.push_back(keys.front());  // and one within the push
      std::vector<float> g(keys.size() * dim);
      for (auto& v : g) v = n01(rng);
      for (std::size_t i = 0; i < keys.size(); ++i) {
        touched[keys[i]] = true;
        for (std::size_t c = 0; c < dim; ++c) sum[keys[i] * dim + c] += g[i * dim + c];
      }
      shard.push_rows(k, s, keys, dim, g.data());
    }
    for (std::size_t r = 0; r < rows; ++r) {
      if (!dense_step && !touched[r]) continue;
      for (std::size_t c = 0; c < dim; ++c) {
        const std::size_t i = r * dim + c;
        velocity[i] = mu * velocity[i] + sum[i] / float(workers);
        w[i] -= lr * velocity[i];
      }
    }
  }
  BOOST_TEST(shard.step() == steps);
  std::vector<float> actual(rows * dim);
  shard.pull(0, steps, actual.data(), soon());
  BOOST_TEST(actual == w, boost::test_tools::tolerance(1e-5f) << boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(assign_restores_values_and_step) {
  std::vector<float> w0{0.f, 0.f}, restored{4.f, 5.f}, w(2);
  dsgd::update::sync_average::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 1);
  shard.assign(restored, 40);
  BOOST_TEST(shard.pull(0, 40, w.data(), soon()) == 40u);
  BOOST_TEST(w == restored, boost::test_tools::per_element());
  std::vector<float> wrong(3);
  BOOST_CHECK_THROW(shard.assign(wrong, 1), dsgd::error);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
