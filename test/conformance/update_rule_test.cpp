// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Conformance of the UpdateRule family (<dsgd/update/concepts.hpp>): a rule written by a user
// against the concept alone (no detail:: base, no dsgd internals) is an UpdateRule, and its shard
// works when driven through exactly the calls the concept names; near misses are refused (here,
// and near_miss_update_rule.cpp checks that the trainer's error names the concept); every
// shipped rule conforms, with the capabilities it declares; a ps runs the user's rule while two
// workers train softmax regression on Fashion-MNIST.
#include <dsgd/device/concepts.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/concepts.hpp>
#include <dsgd/update/sync_average.hpp>

#include <support/shard_table_driver.hpp>

#include "user_policy_cluster.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>

#include <thrust/copy.h>
#include <thrust/memory.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(conformance_update_rule_test)

namespace {

// "Apply every push at once, keep no other bookkeeping": the smallest honest rule, written
// only against Device, Optimizer and UpdateRule.
struct user_rule {
  static constexpr std::uint64_t next_pull(std::uint64_t, std::uint64_t) noexcept { return 0; }

  template <dsgd::Device D, class O>
  class shard {
   public:
    using saved_state = dsgd::update::shard_state;

    shard(D device, std::span<const float> initial, O optimizer, std::size_t)
        : device_(std::move(device)),
          optimizer_(std::move(optimizer)),
          values_(initial.begin(), initial.end()),
          slots_(device_, initial.size()) {}

    std::size_t size() const { return values_.size(); }

    dsgd::update::push_outcome push(std::size_t, std::uint64_t, const float* grad) {
      std::lock_guard lock(mutex_);
      optimizer_.apply(device_, slots_, raw(), grad, values_.size(), 1.f);
      device_.synchronize();
      ++step_;
      return dsgd::update::push_outcome::applied;
    }

    // Rows are applied as a dense gradient that is zero elsewhere.
    dsgd::update::push_outcome push_rows(std::size_t worker, std::uint64_t step, std::span<const std::uint64_t> rows,
                                         std::size_t dim, const float* grads) {
      std::vector<float> dense(values_.size(), 0.f);
      for (std::size_t k = 0; k < rows.size(); ++k)
        for (std::size_t c = 0; c < dim; ++c) dense[rows[k] * dim + c] += grads[k * dim + c];
      typename D::template vector<float> g(dense.begin(), dense.end());
      return push(worker, step, thrust::raw_pointer_cast(g.data()));
    }

    std::optional<std::uint64_t> try_pull(std::size_t, std::uint64_t, float* out) {
      std::lock_guard lock(mutex_);
      ++pulls_;
      thrust::copy(values_.begin(), values_.end(), out);
      return step_;
    }
    std::optional<std::uint64_t> try_pull_rows(std::size_t, std::uint64_t, std::span<const std::uint64_t> rows,
                                               std::size_t dim, float* out) {
      std::lock_guard lock(mutex_);
      ++pulls_;
      for (std::size_t k = 0; k < rows.size(); ++k)
        thrust::copy(values_.begin() + rows[k] * dim, values_.begin() + (rows[k] + 1) * dim, out + k * dim);
      return step_;
    }
    std::string wait_reason(std::size_t, std::uint64_t) const { return {}; }
    void finish(std::size_t) {}
    std::uint64_t step() const { return step_; }
    std::uint64_t dropped() const { return 0; }
    // Not in the concept: how many pulls this shard served (a test's check that it served them).
    std::size_t pulls() const { return pulls_; }

    void assign(std::span<const float> v, std::uint64_t step) {
      saved_state s;
      s.step = step;
      s.values.assign(v.begin(), v.end());
      restore(s);
    }
    saved_state save() {
      std::lock_guard lock(mutex_);
      saved_state s;
      s.step = step_;
      s.values.assign(values_.begin(), values_.end());
      return s;
    }
    void restore(const saved_state& s) {
      std::lock_guard lock(mutex_);
      thrust::copy(s.values.begin(), s.values.end(), values_.begin());
      slots_ = typename O::template state<D>(device_, values_.size());
      step_ = s.step;
    }

   private:
    float* raw() { return thrust::raw_pointer_cast(values_.data()); }

    D device_;
    O optimizer_;
    typename D::template vector<float> values_;
    typename O::template state<D> slots_;
    std::uint64_t step_ = 0;
    std::atomic<std::size_t> pulls_{0};
    std::mutex mutex_;
  };

  template <dsgd::Device D, class O>
  std::unique_ptr<shard<D, O>> make_shard(D device, std::span<const float> initial, O optimizer,
                                          std::size_t workers) const {
    return std::make_unique<shard<D, O>>(std::move(device), initial, std::move(optimizer), workers);
  }
};

// A near miss: everything but a way to checkpoint (no save or restore).
struct rule_without_checkpoints : user_rule {
  template <dsgd::Device D, class O>
  struct shard : user_rule::shard<D, O> {
    using base = user_rule::shard<D, O>;
    using base::base;
    void save() = delete;
    void restore() = delete;
  };
  template <dsgd::Device D, class O>
  std::unique_ptr<shard<D, O>> make_shard(D device, std::span<const float> initial, O optimizer,
                                          std::size_t workers) const {
    return std::make_unique<shard<D, O>>(std::move(device), initial, std::move(optimizer), workers);
  }
};

// Another: a next_pull that answers in the wrong type.
struct rule_with_an_int_next_pull : user_rule {
  static int next_pull(std::uint64_t, std::uint64_t) { return 0; }
};

// No near miss: the core alone, without rows (push_rows and try_pull_rows are a capability).
struct dense_only_rule : user_rule {
  template <dsgd::Device D, class O>
  struct shard : user_rule::shard<D, O> {
    using base = user_rule::shard<D, O>;
    using base::base;
    void push_rows() = delete;
    void try_pull_rows() = delete;
  };
  template <dsgd::Device D, class O>
  std::unique_ptr<shard<D, O>> make_shard(D device, std::span<const float> initial, O optimizer,
                                          std::size_t workers) const {
    return std::make_unique<shard<D, O>>(std::move(device), initial, std::move(optimizer), workers);
  }
};

}  // namespace

static_assert(dsgd::UpdateRule<user_rule>);
static_assert(dsgd::update::checked_rule<user_rule>);
static_assert(!dsgd::UpdateRule<rule_without_checkpoints>);
static_assert(!dsgd::UpdateRule<rule_with_an_int_next_pull>);
static_assert(!dsgd::UpdateRule<int>);

// The optional capabilities are not required: the user rule has but one, rows.
using user_shard = user_rule::shard<dsgd::device::cpu, dsgd::optim::sgd>;
static_assert(dsgd::update::keyed_rows<user_shard>);
static_assert(dsgd::UpdateRule<dense_only_rule>);
static_assert(!dsgd::update::keyed_rows<dense_only_rule::shard<dsgd::device::cpu, dsgd::optim::sgd>>);
static_assert(!dsgd::update::pins_values<user_shard>);
static_assert(!dsgd::update::streams_pushes<user_shard>);
static_assert(!dsgd::update::tracks_departures<user_shard>);

// Every shipped rule conforms, with the capabilities it claims.
static_assert(dsgd::UpdateRule<dsgd::update::sync_average>);
static_assert(dsgd::UpdateRule<dsgd::update::async>);
static_assert(dsgd::UpdateRule<dsgd::update::bounded_staleness>);
static_assert(dsgd::update::keyed_rows<dsgd::update::sync_average::shard<dsgd::device::cpu, dsgd::optim::sgd>>);
static_assert(dsgd::update::keyed_rows<dsgd::update::async::shard<dsgd::device::cpu, dsgd::optim::sgd>>);
static_assert(dsgd::update::keyed_rows<dsgd::update::bounded_staleness::shard<dsgd::device::cpu, dsgd::optim::sgd>>);
static_assert(dsgd::update::pins_values<dsgd::update::async::shard<dsgd::device::cpu, dsgd::optim::sgd>>);
static_assert(dsgd::update::streams_pushes<dsgd::update::async::shard<dsgd::device::cpu, dsgd::optim::sgd>>);
static_assert(
    dsgd::update::streams_pushes<dsgd::update::bounded_staleness::shard<dsgd::device::cpu, dsgd::optim::sgd>>);
static_assert(!dsgd::update::streams_pushes<dsgd::update::sync_average::shard<dsgd::device::cpu, dsgd::optim::sgd>>);
static_assert(dsgd::update::tracks_departures<dsgd::update::sync_average::shard<dsgd::device::cpu, dsgd::optim::sgd>>);
static_assert(!dsgd::update::tracks_departures<dsgd::update::async::shard<dsgd::device::cpu, dsgd::optim::sgd>>);

BOOST_AUTO_TEST_SUITE(user_rule_through_the_concept)

// Exactly the calls update::rule_shard, update::keyed_rows and UpdateRule name, in the order a
// ps makes them.
BOOST_AUTO_TEST_CASE(a_user_rule_serves_every_call_the_concept_names) {
  using cpu = dsgd::device::cpu;
  const user_rule rule;
  const std::vector<float> w0 = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f};
  const auto t = dsgd::update::clock_type::now() + std::chrono::seconds(5);
  auto shard = rule.make_shard<cpu, dsgd::optim::sgd>(cpu{}, w0, dsgd::optim::sgd{0.5f}, 2);
  BOOST_TEST(shard->size() == 6u);

  const std::vector<float> g(6, 2.f);
  BOOST_TEST((shard->push(0, 0, g.data()) == dsgd::update::push_outcome::applied));
  std::vector<float> out(6);
  BOOST_TEST(shard->try_pull(1, user_rule::next_pull(0, 1), out.data()).value() == 1u);
  BOOST_TEST(out == (std::vector<float>{0.f, 1.f, 2.f, 3.f, 4.f, 5.f}), boost::test_tools::per_element());

  const std::vector<std::uint64_t> rows = {2, 0};  // rows of 2 floats
  const std::vector<float> row_grads = {2.f, 4.f, 6.f, 8.f};
  BOOST_TEST((shard->push_rows(1, 1, rows, 2, row_grads.data()) == dsgd::update::push_outcome::applied));
  std::vector<float> picked(4);
  BOOST_TEST(shard->try_pull_rows(0, 0, rows, 2, picked.data()).value() == 2u);
  BOOST_TEST(picked == (std::vector<float>{3.f, 3.f, -3.f, -3.f}), boost::test_tools::per_element());
  BOOST_TEST(shard->try_pull(0, 0, out.data()).value() == 2u);
  BOOST_TEST(out == (std::vector<float>{-3.f, -3.f, 2.f, 3.f, 3.f, 3.f}), boost::test_tools::per_element());
  BOOST_TEST(shard->wait_reason(0, 7).empty());

  const auto saved = shard->save();
  BOOST_TEST(saved.step == 2u);
  shard->assign(w0, 9);
  BOOST_TEST(shard->step() == 9u);
  shard->restore(saved);
  BOOST_TEST(shard->step() == 2u);
  BOOST_TEST(shard->try_pull(0, 0, out.data()).value() == 2u);
  BOOST_TEST(out == saved.values, boost::test_tools::per_element());

  shard->finish(0);
  shard->finish(1);
  BOOST_TEST(shard->dropped() == 0u);
}

// A ps whose rule's shards take no rows serves dense requests and refuses sparse ones, naming
// the capability they lack.
BOOST_AUTO_TEST_CASE(a_rule_without_rows_refuses_sparse_requests_by_name) {
  using table = dsgd::server::shard_table<dense_only_rule, dsgd::optim::sgd>;
  dsgd::test::recording_sink out;
  auto t = dsgd::test::registered_table<table>(
      out, 1, dsgd::test::quiet_options<table>(),
      [](const std::string& task, std::uint32_t r) { return dsgd::test::w_and_b_registration(task, r, true); });
  dsgd::test::init_shards(t, out, {std::vector<float>(12, 1.f), std::vector<float>(3, 1.f)});
  out.take();
  const std::vector<std::uint64_t> keys{1};
  dsgd::test::deliver(t, out, 1, {dsgd::protocol::message::sparse_pull, 0, 0, 0, dsgd::test::bytes_of(keys)});
  auto r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_REQUIRE((r[0].type() == dsgd::protocol::message::reply_error));
  BOOST_TEST(r[0].error().code == static_cast<int>(dsgd::errc::invalid_argument));
  BOOST_TEST(r[0].error().message.find("keyed_rows") != std::string::npos, r[0].error().message);
  dsgd::test::deliver(t, out, 1,
                      {dsgd::protocol::message::push, 0, 0, 0, dsgd::test::bytes_of(std::vector<float>(12, 1.f))});
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST((r[0].type() == dsgd::protocol::message::push_applied));
}

// The user's rule in a cluster: the ps makes its shards, they apply every push of both workers
// (next_pull 0: a worker reads the latest values) and serve every pull, and the model trains to
// its accuracy.
BOOST_AUTO_TEST_CASE(a_ps_runs_a_user_rule_while_two_workers_train_softmax_regression) {
  // Pushes apply one by one in whatever order they arrive: the rate decays over the run's 938
  // updates so that the last values do not depend on that order's last few pushes.
  using ps_type = dsgd::train::ps_task<user_rule, dsgd::test::decaying_momentum, dsgd::transport::inproc>;
  const auto o = dsgd::test::user_policy_options<dsgd::placement::round_robin, user_rule>(
      dsgd::test::decaying_momentum_over(2 * 469));
  std::vector<std::uint64_t> steps;
  std::vector<std::size_t> pulls;
  const auto r = dsgd::test::train_softmax(o, 1, dsgd::device::cpu{}, [&](const ps_type& ps, std::size_t) {
    for (std::uint32_t v = 0; v < 2; ++v) {
      const auto* s = ps.server()->find(v, 0);
      BOOST_TEST_REQUIRE(s);
      steps.push_back(s->step());
      pulls.push_back(s->pulls());
    }
  });
  const std::size_t pushes = r.pushes[0] + r.pushes[1];
  BOOST_TEST(pushes == 2 * 469u);  // one epoch of 60,000 images in batches of 64, half each
  for (std::size_t v = 0; v < 2; ++v) {
    BOOST_TEST(steps[v] == pushes);  // every push applied
    BOOST_TEST(pulls[v] >= pushes);  // and every push_pull's pull served by the user's shard
  }
  BOOST_TEST(r.dropped == 0u);
  BOOST_TEST(r.accuracy >= 0.80);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()

// dsgd::trainer (over TCP) takes the user type as is: every member of the trainer compiles with it.
template class dsgd::trainer<dsgd::device::cpu, dsgd::placement::round_robin, conformance_update_rule_test::user_rule>;
