// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/update/table_shard.hpp>: a dynamic embedding table under sync_average, async
// and bounded_staleness, with workers on threads of this process. The sync oracle is one
// process by hand (a std::map of rows, Adagrad's formula, count-based admission) on the
// concatenated batch.
#include <dsgd/embedding/admission.hpp>
#include <dsgd/embedding/eviction.hpp>
#include <dsgd/embedding/initializer.hpp>
#include <dsgd/embedding/row_table.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/update/table_shard.hpp>

#include <support/deadline.hpp>
#include <support/table_model.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(update_table_shard_test)

namespace emb = dsgd::embedding;
namespace up = dsgd::update;
using dsgd::test::soon;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t dim = 4;
const emb::initializer::uniform init{-0.1f, 0.1f, 7};

using counted_table = emb::row_table<emb::initializer::uniform, emb::admission::by_count, emb::eviction::none>;

template <class U, class O>
auto make_shard(O opt, std::size_t workers, U rule = {}, std::uint32_t admit_after = 2) {
  auto options = up::table_shard<U, O, counted_table>::prepare({.name = "ids", .dim = dim}, opt);
  return up::table_shard<U, O, counted_table>(
      counted_table(options, init, emb::admission::by_count({.count = admit_after})), opt, workers, rule);
}

}  // namespace

// W workers in sync, each pulling its batch's unique keys, computing its gradient and pushing
// it, equal one process on the concatenated batch: the rows of step s read (a row, or the key's
// initial row), the workers' gradients summed by key and divided by W, admission (the second
// step a key is pushed in) and Adagrad applied in ascending key order.
BOOST_AUTO_TEST_CASE(sync_equals_one_process_on_the_concatenated_batch_with_count_admission) {
  constexpr std::size_t workers = 3, steps = 8;
  const dsgd::optim::adagrad opt{.learning_rate = 0.5f, .initial_accumulator = 0.1f};
  auto shard = make_shard<up::sync_average>(opt, workers);

  std::vector<std::string> failures(workers);
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < workers; ++k)
    threads.emplace_back([&, k] {
      try {
        for (std::uint64_t s = 0; s < steps; ++s) {
          auto step = dsgd::test::table_worker_step(k, s, dim, [&](auto keys, auto out) {
            if (shard.pull(k, s, keys, out, soon()) != s) throw std::runtime_error("pull returned another step");
          });
          shard.push(k, s, step.keys, step.grads);
        }
      } catch (const std::exception& e) {
        failures[k] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (std::size_t k = 0; k < workers; ++k) BOOST_TEST(failures[k].empty(), "worker " << k << ": " << failures[k]);

  std::size_t dropped = 0;
  auto w = dsgd::test::sync_oracle(workers, steps, dim, 2, 0.5f, 0.1f, init, dropped);
  BOOST_TEST(shard.step() == steps);
  BOOST_TEST(shard.dropped_keys() == dropped);
  BOOST_TEST(dropped > 0u);  // the rare keys: admission had keys to refuse
  BOOST_TEST(shard.stats().admitted == w.size());
  shard.with_table([&](const counted_table& t) {
    BOOST_TEST(t.size() == w.size());
    for (const auto& [key, expected] : w) {
      auto r = t.find(key);
      BOOST_REQUIRE(r.has_value());
      for (std::size_t c = 0; c < dim; ++c)
        BOOST_TEST(r->weights()[c] == expected[c], boost::test_tools::tolerance(1e-5f));
    }
  });
}

// Async admits on the training pull: a key not admitted reads its initial row and its gradient
// is dropped and counted; an evaluation read never admits.
BOOST_AUTO_TEST_CASE(async_admits_at_the_pull_and_drops_the_gradient_of_a_key_without_a_row) {
  auto shard = make_shard<up::async>(dsgd::optim::sgd{1.f}, 1);
  std::vector<std::uint64_t> key{42};
  std::vector<float> row(dim), initial(dim), g(dim, 1.f);
  init(42, initial);

  shard.read(key, row);  // evaluation: no sighting
  BOOST_TEST(row == initial, boost::test_tools::per_element());
  BOOST_TEST(shard.stats().rejected == 0u);

  shard.pull(0, 0, key, row, soon());  // first sighting: not admitted
  BOOST_TEST(row == initial, boost::test_tools::per_element());
  auto r = shard.push(0, 0, key, g);
  BOOST_TEST(r.dropped_keys == 1u);
  BOOST_TEST(shard.dropped_keys() == 1u);

  shard.pull(0, 0, key, row, soon());  // second sighting: a row
  BOOST_TEST(shard.stats().admitted == 1u);
  r = shard.push(0, 0, key, g);
  BOOST_TEST(r.dropped_keys == 0u);
  shard.read(key, row);
  for (std::size_t c = 0; c < dim; ++c) BOOST_TEST(row[c] == initial[c] - 1.f);
  BOOST_TEST(shard.updates() == 2u);
}

// A push to a row evicted since its pull is dropped and counted, not applied to a new row.
BOOST_AUTO_TEST_CASE(a_push_to_a_row_evicted_since_its_pull_is_dropped) {
  using capped = emb::row_table<emb::initializer::uniform, emb::admission::always, emb::eviction::least_frequent>;
  using shard_type = up::table_shard<up::async, dsgd::optim::sgd, capped>;
  auto options = shard_type::prepare({.name = "capped", .dim = dim, .max_rows = 2, .evict_fraction = 0.5}, {1.f});
  shard_type shard(capped(options, init), {1.f}, 1);
  std::vector<float> row(dim), g(dim, 1.f);
  const std::vector<std::uint64_t> one{1}, two{2}, three{3};
  shard.pull(0, 0, one, row, soon());  // row 1, then update 1 touches it
  shard.push(0, 0, one, g);
  shard.pull(0, 0, two, row, soon());  // row 2, then update 2 touches it
  shard.push(0, 0, two, g);
  shard.pull(0, 0, three, row, soon());  // at the cap: row 1, untouched since update 1, goes
  BOOST_TEST(shard.stats().evicted == 1u);
  auto r = shard.push(0, 0, std::vector<std::uint64_t>{1, 3}, std::vector<float>(2 * dim, 1.f));
  BOOST_TEST(r.dropped_keys == 1u);  // key 1's row was evicted after its pull
  BOOST_TEST(shard.dropped_keys() == 1u);
  shard.with_table([&](const capped& t) {
    BOOST_TEST(t.size() == 2u);
    BOOST_TEST(!t.contains(1));
  });
}

// SSP: a worker more than S clocks ahead of the slowest waits, and its deadline names whom it
// waits for; the slowest worker's pushes (or its finish) let it through.
BOOST_AUTO_TEST_CASE(bounded_staleness_holds_a_worker_within_s_clocks_of_the_slowest) {
  auto shard = make_shard<up::bounded_staleness>(dsgd::optim::sgd{0.1f}, 2, up::bounded_staleness{.staleness = 1}, 1);
  std::vector<std::uint64_t> key{5};
  std::vector<float> row(dim), g(dim, 1.f);
  for (int i = 0; i < 2; ++i) shard.push(0, 0, key, g);  // worker 0 at clock 2, worker 1 at 0
  BOOST_CHECK_EXCEPTION(
      shard.pull(0, 2, key, row, up::clock_type::now() + 50ms), dsgd::error, [](const dsgd::error& e) {
        return e.code() == dsgd::errc::timed_out && std::string(e.what()).find("worker:1") != std::string::npos;
      });
  shard.push(1, 0, key, g);  // worker 1 at clock 1: clock 2 is within S = 1
  BOOST_TEST(shard.pull(0, 2, key, row, soon()) == 2u);
  shard.finish(1);
  shard.push(0, 0, key, g);
  BOOST_TEST(shard.pull(0, 3, key, row, soon()) == 3u);  // a finished worker holds nobody back
}

// Bad input is a named error and changes nothing.
BOOST_AUTO_TEST_CASE(bad_pushes_are_named_errors_that_apply_nothing) {
  auto shard = make_shard<up::sync_average>(dsgd::optim::sgd{1.f}, 2, {}, 1);
  std::vector<std::uint64_t> keys{7, 8};
  std::vector<float> g(2 * dim, 1.f);
  g[dim + 2] = std::nanf("");
  BOOST_CHECK_EXCEPTION(shard.push(0, 0, keys, g), dsgd::error, [](const dsgd::error& e) {
    const std::string m = e.what();
    return e.code() == dsgd::errc::invalid_argument && m.find("ids") != std::string::npos &&
           m.find("key 8") != std::string::npos && m.find("column 2") != std::string::npos;
  });
  std::vector<float> short_grads(dim);
  BOOST_CHECK_EXCEPTION(shard.push(0, 0, keys, short_grads), dsgd::error,
                        [](const dsgd::error& e) { return e.code() == dsgd::errc::shape_mismatch; });
  std::vector<float> ok(2 * dim, 1.f);
  BOOST_CHECK_EXCEPTION(shard.push(0, 1, keys, ok), dsgd::error, [](const dsgd::error& e) {
    return std::string(e.what()).find("pushed for step 1 but the shard is at step 0") != std::string::npos;
  });
  BOOST_CHECK_THROW(shard.push(2, 0, keys, ok), dsgd::error);  // no worker 2
  BOOST_TEST(shard.step() == 0u);
  BOOST_TEST(shard.with_table([](const counted_table& t) { return t.size(); }) == 0u);

  // try_pull (a ps parks the request instead of waiting): nothing until step 1 exists.
  std::vector<float> rows(2 * dim, -1.f);
  BOOST_TEST(!shard.try_pull(0, 1, keys, rows).has_value());
  BOOST_TEST(rows[0] == -1.f);  // nothing written
  BOOST_TEST(shard.wait_reason(0, 1).find("waiting for worker:0, worker:1") != std::string::npos);

  // A second push of one worker in a step is dropped whole; the step still completes.
  BOOST_TEST((shard.push(0, 0, keys, ok).outcome == up::push_outcome::accumulated));
  BOOST_TEST((shard.push(0, 0, keys, ok).outcome == up::push_outcome::dropped));
  BOOST_TEST(shard.dropped_pushes() == 1u);
  BOOST_TEST((shard.push(1, 0, keys, ok).outcome == up::push_outcome::applied));
  BOOST_TEST(shard.step() == 1u);
  BOOST_TEST(shard.wait_reason(0, 1).empty());
  BOOST_TEST((shard.try_pull(0, 1, keys, rows) == std::optional<std::uint64_t>(1)));
  BOOST_TEST(rows[0] != -1.f);
}

// An async push's duplicate keys are summed before the one update of their row (under Adagrad,
// not the same as two updates), whether the duplicate comes first or last and whatever the
// push's size; a push of distinct keys is applied as it is. The oracle: a map of rows, each
// push's gradients summed by key in push order, optim::adagrad::apply_row once a key.
BOOST_AUTO_TEST_CASE(an_async_push_sums_its_duplicate_keys_before_one_update_of_their_row) {
  const dsgd::optim::adagrad opt{.learning_rate = 0.5f, .initial_accumulator = 0.1f};
  auto shard = make_shard<up::async>(opt, 1, {}, /*admit_after=*/1);
  std::vector<std::uint64_t> every(100);
  std::iota(every.begin(), every.end(), std::uint64_t{0});
  std::vector<float> rows(every.size() * dim);
  shard.pull(0, 0, every, rows, soon());  // admits every key

  struct row_state {
    std::vector<float> w, slots;
  };
  std::map<std::uint64_t, row_state> oracle;
  for (std::size_t i = 0; i < every.size(); ++i) {
    row_state r{{rows.begin() + i * dim, rows.begin() + (i + 1) * dim}, std::vector<float>(opt.row_slots(dim))};
    opt.init_row_slots(r.slots.data(), dim);
    oracle.emplace(every[i], std::move(r));
  }
  std::vector<std::uint64_t> with_last_twice = every;
  with_last_twice.push_back(5);
  const std::vector<std::vector<std::uint64_t>> pushes{{7, 9, 7, 11}, {9, 11, 7}, every, with_last_twice, {3, 3}};
  float x = 0.f;
  for (const auto& keys : pushes) {
    std::vector<float> g(keys.size() * dim);
    for (float& v : g) v = (x += 0.37f) - std::floor(x) - 0.5f;  // varied, finite
    std::map<std::uint64_t, std::vector<float>> sums;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      auto [it, fresh] = sums.try_emplace(keys[i], g.begin() + i * dim, g.begin() + (i + 1) * dim);
      if (!fresh)
        for (std::size_t c = 0; c < dim; ++c) it->second[c] += g[i * dim + c];
    }
    for (auto& [key, sum] : sums) opt.apply_row(oracle[key].w.data(), oracle[key].slots.data(), sum.data(), dim);
    BOOST_TEST(shard.push(0, 0, keys, g).dropped_keys == 0u);
  }
  BOOST_TEST(shard.updates() == pushes.size());
  shard.read(every, rows);
  for (std::size_t i = 0; i < every.size(); ++i)
    for (std::size_t c = 0; c < dim; ++c)
      BOOST_TEST(rows[i * dim + c] == oracle[every[i]].w[c], "key " << every[i] << boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_SUITE_END()
