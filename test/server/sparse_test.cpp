// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for the sparse rows of <dsgd/server/parameter_server.hpp> and
// <dsgd/client/ps_client.hpp> (pull_rows, push_rows: embedding tables): ps tasks and workers as
// threads of this process over transport::inproc (no sockets), dsgd::trainer's among them.
#include <dsgd/client/ps_client.hpp>
#include <dsgd/embedding/initializer.hpp>
#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/partitioned.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/parameter_server.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/sync_average.hpp>

#include <support/inproc_cluster.hpp>
#include <support/reference_optim.hpp>
#include <support/table_model.hpp>
#include <support/worker_loops.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>
#include <type_traits>

BOOST_AUTO_TEST_SUITE(sparse_test)

using namespace std::chrono_literals;
namespace ds = dsgd::server;
namespace client = dsgd::client;
namespace dp = dsgd::placement;
namespace protocol = dsgd::protocol;
using inproc = dsgd::transport::inproc;
using client_type = client::basic_ps_client<inproc>;

static_assert(dsgd::update::sparse_apply<dsgd::optim::sgd>::available);
static_assert(dsgd::update::sparse_apply<dsgd::optim::momentum>::available);
static_assert(dsgd::update::sparse_apply<dsgd::optim::adagrad>::available);  // no step counter
// adam's bias correction counts the variable's updates: a push of some rows is no update of its
// own (lazy Adam, optim::lazy_adam, is another optimizer).
static_assert(!dsgd::update::sparse_apply<dsgd::optim::adam>::available);

namespace {

client::client_options client_opts() {
  client::client_options o;
  o.connection.token = "secret";
  o.requests.startup_timeout = 10s;
  o.requests.request_timeout = 30s;
  return o;
}

// Every case's network: one inproc hub.
struct inproc_net {
  dsgd::test::test_net<inproc> net;
};

// Runs ps task i of spec over @p net on its own thread; stops it on destruction.
template <class U, class O>
struct running_ps {
  using ps_type = ds::parameter_server<U, O, dsgd::device::cpu, inproc>;
  std::unique_ptr<ps_type> ps;
  std::thread thread;
  running_ps(const dsgd::cluster::cluster_spec& spec, int i, const dsgd::test::test_net<inproc>& net, O optimizer,
             std::size_t max_rows = 1 << 22, U rule = {}) {
    typename ps_type::options o;
    o.connection.token = "secret";
    o.optimizer = optimizer;
    o.rule = rule;
    o.serving.step_timeout = 20s;
    o.serving.max_rows_per_request = max_rows;
    o.connection.log = [](std::string_view) {};
    ps = std::make_unique<ps_type>(spec, i, o, dsgd::device::cpu{}, net.transport());
    thread = std::thread([this] { ps->join(); });
  }
  ~running_ps() {
    ps->stop();
    thread.join();
  }
};

// A worker connected, registered and (as chief) having initialised the variables.
std::unique_ptr<client_type> join_cluster(const dsgd::test::test_net<inproc>& net,
                                          const dsgd::cluster::cluster_spec& spec, const dp::plan& plan, std::size_t k,
                                          const std::vector<std::vector<float>>& init) {
  auto c =
      std::make_unique<client_type>(spec, dsgd::cluster::task_id{"worker", int(k)}, client_opts(), net.transport());
  dsgd::test::join_cluster(*c, plan, k, init);
  return c;
}

using dsgd::test::random_values;

// The dense gradient a sparse one stands for: rows of duplicate keys added in key order.
std::vector<float> scatter(std::size_t rows, std::size_t dim, const std::vector<std::uint64_t>& keys,
                           const std::vector<float>& grads) {
  std::vector<float> dense(rows * dim, 0.f);
  for (std::size_t i = 0; i < keys.size(); ++i)
    for (std::size_t c = 0; c < dim; ++c) dense[keys[i] * dim + c] += grads[i * dim + c];
  return dense;
}

std::vector<float> pull_all(client_type& c, const dp::plan& plan, std::size_t v, std::uint64_t step = 0) {
  std::vector<std::vector<float>> all;
  for (const auto& info : plan.variables()) all.emplace_back(info.shape.elements());
  std::vector<std::span<float>> dst(all.begin(), all.end());
  c.pull(plan, step, dst);
  return all[v];
}

// Boost.Test is not thread-safe: worker threads check with this and the test thread rethrows.
void expect(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("expected ") + what);
}

bool mentions(const dsgd::error& e, dsgd::errc code, std::initializer_list<const char*> parts) {
  if (e.code() != code) return false;
  std::string w = e.what();
  for (auto p : parts)
    if (w.find(p) == std::string::npos) {
      BOOST_TEST_MESSAGE("missing \"" << p << "\" in: " << w);
      return false;
    }
  return true;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(sparse_rows, inproc_net)

BOOST_AUTO_TEST_CASE(an_async_sparse_push_changes_only_its_rows_exactly_as_the_equivalent_dense_push) {
  auto spec = net.spec(1, 1);
  running_ps<dsgd::update::async, dsgd::optim::sgd> ps(spec, 0, net, {0.1f});
  constexpr std::size_t rows = 50, dim = 4;
  // "emb" gets the sparse push, "ref" the dense gradient it stands for.
  auto plan = dp::round_robin{}.place({{"emb", {rows, dim}}, {"ref", {rows, dim}}}, 1);
  auto init = random_values(rows * dim, 1);
  auto c = join_cluster(net, spec, plan, 0, {init, init});

  std::vector<std::uint64_t> keys{3, 7, 3, 49, 0};
  auto grads = random_values(keys.size() * dim, 2);
  auto dense = scatter(rows, dim, keys, grads);
  BOOST_TEST(c->push_rows(plan, 0, keys, grads, 0) == 0u);
  std::vector<std::span<const float>> g{std::span<const float>(), std::span<const float>(dense)};
  BOOST_TEST(c->push(plan, 0, g) == 0u);

  auto emb = pull_all(*c, plan, 0), ref = pull_all(*c, plan, 1);
  BOOST_TEST(emb == ref, boost::test_tools::per_element());
  for (std::size_t r = 0; r < rows; ++r) {
    bool touched = r == 3 || r == 7 || r == 49 || r == 0;
    for (std::size_t k = 0; k < dim; ++k) {
      float expected = touched ? init[r * dim + k] - 0.1f * dense[r * dim + k] : init[r * dim + k];
      BOOST_TEST(emb[r * dim + k] == expected);
    }
  }

  std::vector<std::uint64_t> wanted{49, 3, 10, 3};
  std::vector<float> out(wanted.size() * dim, -99.f);
  BOOST_TEST(c->pull_rows(plan, 0, wanted, out, 0) == 1u);  // async: the shard's step, one push
  for (std::size_t i = 0; i < wanted.size(); ++i)
    for (std::size_t k = 0; k < dim; ++k) BOOST_TEST(out[i * dim + k] == emb[wanted[i] * dim + k]);
}

BOOST_AUTO_TEST_CASE(async_sparse_momentum_moves_only_the_pushed_rows_and_their_velocities) {
  auto spec = net.spec(1, 1);
  const float lr = 0.1f, m = 0.9f;
  running_ps<dsgd::update::async, dsgd::optim::momentum> ps(spec, 0, net, {lr, m});
  auto plan = dp::round_robin{}.place({{"emb", {6, 2}}}, 1);
  std::vector<float> init{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5};
  auto c = join_cluster(net, spec, plan, 0, {init});
  std::vector<float> ones(2, 1.f);
  std::vector<std::uint64_t> row1{1}, row2{2};
  c->push_rows(plan, 0, row1, ones, 0);  // v1 = 1,   w1 = 1 - 0.1
  c->push_rows(plan, 0, row2, ones, 0);  // v2 = 1,   w2 = 2 - 0.1; row 1 must not move (dense would)
  c->push_rows(plan, 0, row1, ones, 0);  // v1 = 1.9, w1 -= 0.19
  auto w = pull_all(*c, plan, 0);
  float v1 = m * 1.f + 1.f;
  std::vector<float> expected = init;
  for (std::size_t k = 0; k < 2; ++k) {
    expected[2 + k] = (1.f - lr * 1.f) - lr * v1;
    expected[4 + k] = 2.f - lr * 1.f;
  }
  BOOST_TEST(w == expected, boost::test_tools::tolerance(1e-6f) << boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_partitioned_embedding_serves_keys_spanning_both_shards_with_duplicates) {
  auto spec = net.spec(2, 1);
  using ps_t = running_ps<dsgd::update::async, dsgd::optim::sgd>;
  ps_t ps0(spec, 0, net, {0.5f}), ps1(spec, 1, net, {0.5f});
  constexpr std::size_t rows = 1000, dim = 16;
  auto plan = dp::partitioned::fixed_size(2).place({{"emb", {rows, dim}}}, 2);
  BOOST_REQUIRE_EQUAL(plan.shards().size(), 2u);
  BOOST_REQUIRE_EQUAL(plan.shards()[1].ps_task, 1u);
  BOOST_REQUIRE_EQUAL(plan.shards()[1].offset, 500 * dim);
  std::vector<float> init(rows * dim);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t k = 0; k < dim; ++k) init[r * dim + k] = float(r) + float(k) / 100.f;
  auto c = join_cluster(net, spec, plan, 0, {init});

  // Interleaved shards (staged and scattered) and one run per shard (straight into out).
  for (std::vector<std::uint64_t> keys :
       {std::vector<std::uint64_t>{999, 0, 500, 499, 0, 750}, std::vector<std::uint64_t>{1, 2, 3, 600, 601}}) {
    std::vector<float> out(keys.size() * dim, -1.f);
    c->pull_rows(plan, 0, keys, out, 0);
    for (std::size_t i = 0; i < keys.size(); ++i)
      for (std::size_t k = 0; k < dim; ++k) BOOST_TEST(out[i * dim + k] == init[keys[i] * dim + k]);
  }

  std::vector<std::uint64_t> keys{10, 900, 10, 499, 500};
  std::vector<float> grads(keys.size() * dim);
  for (std::size_t i = 0; i < grads.size(); ++i) grads[i] = float(i % 7) - 3.f;
  BOOST_TEST(c->push_rows(plan, 0, keys, grads, 0) == 0u);
  // Only shard 0's rows: shard 1 still gets an (empty) push, so both shards count two.
  std::vector<std::uint64_t> low{5};
  std::vector<float> low_grad(dim, 1.f);
  c->push_rows(plan, 0, low, low_grad, 0);

  auto dense = scatter(rows, dim, keys, grads);
  auto dense_low = scatter(rows, dim, low, low_grad);
  std::vector<float> all(rows * dim);
  std::vector<std::span<float>> dst{all};
  BOOST_TEST(c->pull(plan, 0, dst) == 2u);  // the smaller of the two shards' steps
  for (std::size_t i = 0; i < all.size(); ++i) {
    float expected = init[i] - 0.5f * dense[i];
    expected = expected - 0.5f * dense_low[i];
    BOOST_TEST(all[i] == expected);
  }
}

BOOST_AUTO_TEST_CASE(sync_sparse_pushes_of_two_workers_are_averaged_and_applied_once_per_step) {
  auto spec = net.spec(2, 2);
  using ps_t = running_ps<dsgd::update::sync_average, dsgd::optim::sgd>;
  const float lr = 0.5f;
  ps_t ps0(spec, 0, net, {lr}), ps1(spec, 1, net, {lr});
  constexpr std::size_t rows = 20, dim = 3;
  auto plan = dp::partitioned::fixed_size(2).place({{"emb", {rows, dim}}}, 2);
  auto init = random_values(rows * dim, 3);
  // Step 0: both sparse. Step 1: worker 0 sparse, worker 1 dense. Step 2: worker 1 pushes no
  // rows at all, which still counts as its (zero) gradient for the mean.
  std::vector<std::vector<std::uint64_t>> keys0{{1, 15, 1}, {0, 19}, {7}};
  std::vector<std::vector<std::uint64_t>> keys1{{1, 4}, {}, {}};
  auto grad = [&](std::size_t k, std::size_t s, std::size_t n) {
    return random_values(n * dim, unsigned(10 + 3 * s + k));
  };
  auto dense1 = random_values(rows * dim, 99);

  auto expected = init;
  for (std::size_t s = 0; s < 3; ++s) {
    auto a = scatter(rows, dim, keys0[s], grad(0, s, keys0[s].size()));
    auto b = s == 1 ? dense1 : scatter(rows, dim, keys1[s], grad(1, s, keys1[s].size()));
    for (std::size_t i = 0; i < expected.size(); ++i) expected[i] -= lr * (0.5f * (a[i] + b[i]));
  }

  std::vector<std::vector<float>> finals(2);
  std::vector<std::exception_ptr> failed(2);
  std::vector<std::thread> workers;
  for (std::size_t k = 0; k < 2; ++k)
    workers.emplace_back([&, k] {
      try {
        auto c = join_cluster(net, spec, plan, k, {init});
        for (std::uint64_t s = 0; s < 3; ++s) {
          const auto& keys = k == 0 ? keys0[s] : keys1[s];
          std::vector<float> rows_out(keys.size() * dim);
          // Also with no keys: every shard answers once step s exists.
          expect(c->pull_rows(plan, 0, keys, rows_out, s) == s, "c->pull_rows(plan, 0, keys, rows_out, s) == s");
          if (k == 1 && s == 1) {
            std::vector<std::span<const float>> g{dense1};
            expect(c->push(plan, s, g) == 0u, "c->push(plan, s, g) == 0u");
          } else {
            expect(c->push_rows(plan, 0, keys, grad(k, s, keys.size()), s) == 0u, "push_rows dropped nothing");
          }
        }
        std::vector<float> all(rows * dim);
        std::vector<std::span<float>> dst{all};
        expect(c->pull(plan, 3, dst) == 3u, "c->pull(plan, 3, dst) == 3u");
        finals[k] = all;
        c->finish();
      } catch (...) {
        failed[k] = std::current_exception();
      }
    });
  for (auto& t : workers) t.join();
  for (auto& f : failed)
    if (f) std::rethrow_exception(f);
  for (const auto& f : finals)
    BOOST_TEST(f == expected, boost::test_tools::tolerance(1e-6f) << boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(bad_sparse_requests_are_named_errors_and_the_connection_keeps_serving) {
  auto spec = net.spec(2, 1);
  using ps_t = running_ps<dsgd::update::async, dsgd::optim::sgd>;
  ps_t ps0(spec, 0, net, {0.1f}, 4), ps1(spec, 1, net, {0.1f}, 4);  // at most 4 keys per request
  auto plan = dp::partitioned::fixed_size(2).place({{"emb", {1000, 16}}, {"b", {3}}}, 2);
  std::vector<float> emb(1000 * 16, 1.f), b(3, 2.f);
  auto c = join_cluster(net, spec, plan, 0, {emb, b});
  std::vector<float> out(2 * 16);

  std::vector<std::uint64_t> far{600, 1200};
  BOOST_CHECK_EXCEPTION(c->pull_rows(plan, 0, far, out, 0), dsgd::error, [](const dsgd::error& e) {
    return mentions(e, dsgd::errc::invalid_argument,
                    {"ps:1: ", "row 1200", "out of range for emb [1000, 16] on ps:1 (holds rows 500-999)"});
  });
  std::vector<float> g(2 * 16, 1.f);
  BOOST_CHECK_EXCEPTION(c->push_rows(plan, 0, far, g, 0), dsgd::error, [](const dsgd::error& e) {
    return mentions(e, dsgd::errc::invalid_argument, {"sparse_push", "row 1200", "holds rows 500-999"});
  });

  std::vector<std::uint64_t> one{0};
  std::vector<float> b_out(1);
  BOOST_CHECK_EXCEPTION(c->pull_rows(plan, 1, one, b_out, 0), dsgd::error, [](const dsgd::error& e) {
    return mentions(e, dsgd::errc::invalid_argument, {"b [3]", "rank 2 or more", "rank 1"});
  });

  std::vector<std::uint64_t> five{1, 2, 3, 4, 5};
  std::vector<float> five_out(5 * 16);
  BOOST_CHECK_EXCEPTION(c->pull_rows(plan, 0, five, five_out, 0), dsgd::error, [](const dsgd::error& e) {
    return mentions(e, dsgd::errc::invalid_argument, {"5 keys exceed the cap of 4"});
  });

  BOOST_CHECK_EXCEPTION(c->pull_rows(plan, 0, far, std::span<float>(out).first(16), 0), dsgd::error,
                        [](const dsgd::error& e) {
                          return mentions(e, dsgd::errc::shape_mismatch, {"2 keys need 32 floats", "holds 16"});
                        });
  BOOST_CHECK_EXCEPTION(c->pull_rows(plan, 7, far, out, 0), dsgd::error, [](const dsgd::error& e) {
    return mentions(e, dsgd::errc::invalid_argument, {"variable 7 is not in the placement"});
  });

  // No keys: every shard is still asked (async: any step will do) and answers with no rows.
  BOOST_TEST(c->pull_rows(plan, 0, {}, {}, 5) == 0u);

  // Both ps tasks still serve this connection after the errors.
  std::vector<std::uint64_t> good{999, 0};
  BOOST_REQUIRE_NO_THROW(c->pull_rows(plan, 0, good, out, 0));
  for (float x : out) BOOST_TEST(x == 1.f);
}

BOOST_AUTO_TEST_CASE(an_optimizer_without_a_sparse_apply_is_refused_under_async_and_kept_under_sync) {
  auto spec = net.spec(1, 1);
  auto plan = dp::round_robin{}.place({{"emb", {4, 2}}}, 1);
  std::vector<float> init(8, 1.f);
  std::vector<std::uint64_t> keys{2};
  std::vector<float> g{1.f, 1.f};
  {
    running_ps<dsgd::update::async, dsgd::optim::adam> ps(spec, 0, net, {});
    auto c = join_cluster(net, spec, plan, 0, {init});
    BOOST_CHECK_EXCEPTION(c->push_rows(plan, 0, keys, g, 0), dsgd::error, [](const dsgd::error& e) {
      return mentions(e, dsgd::errc::invalid_argument, {"no sparse apply", "sync_average"});
    });
    BOOST_TEST(pull_all(*c, plan, 0) == init, boost::test_tools::per_element());
  }
  {
    running_ps<dsgd::update::sync_average, dsgd::optim::adam> ps(spec, 0, net, {});
    auto c = join_cluster(net, spec, plan, 0, {init});
    BOOST_TEST(c->push_rows(plan, 0, keys, g, 0) == 0u);
    auto w = pull_all(*c, plan, 0, 1);
    BOOST_TEST(w[4] < 1.f);   // row 2 moved down the gradient
    BOOST_TEST(w[0] == 1.f);  // a zero gradient leaves adam's other rows alone at its first step
  }
}

BOOST_AUTO_TEST_CASE(bounded_staleness_counts_a_sparse_push_on_the_workers_clock) {
  auto spec = net.spec(1, 1);
  running_ps<dsgd::update::bounded_staleness, dsgd::optim::sgd> ps(spec, 0, net, {1.f}, 1 << 22, {.staleness = 0});
  auto plan = dp::round_robin{}.place({{"emb", {3, 1}}}, 1);
  auto c = join_cluster(net, spec, plan, 0, {{0.f, 0.f, 0.f}});
  std::vector<std::uint64_t> keys{2, 2};
  std::vector<float> g{1.f, 2.f};
  c->push_rows(plan, 0, keys, g, 0);
  std::vector<float> out(1);
  std::vector<std::uint64_t> row{2};
  BOOST_TEST(c->pull_rows(plan, 0, row, out, 1) == 1u);  // clock 1 is readable at once
  BOOST_TEST(out[0] == -3.f);
}

BOOST_AUTO_TEST_CASE(a_trainer_reads_and_updates_an_embedding_by_rows_next_to_dense_variables) {
  using cpu = dsgd::device::cpu;
  using trainer = dsgd::trainer<cpu, dp::round_robin, dsgd::update::sync_average, dsgd::optim::sgd, inproc>;
  dsgd::test::test_net<inproc> net;  // the trainer's tasks as threads, without a socket
  auto spec = net.spec(1, 2);
  trainer::options o;
  o.connection.token = "secret";
  o.optimizer = {0.5f};
  o.serving.step_timeout = 20s;
  o.serving.ready_timeout = 20s;
  o.requests.startup_timeout = 10s;
  o.connection.log = [](std::string_view) {};
  std::exception_ptr ps_failed;
  std::thread ps([&] {
    try {
      trainer(spec, {"ps", 0}, o, cpu{}, net.transport()).join();
    } catch (...) {
      ps_failed = std::current_exception();
    }
  });
  std::vector<std::vector<float>> emb_final(2), b_final(2), emb_local(2);
  std::vector<std::exception_ptr> failed(2);
  std::vector<std::thread> workers;
  for (int k = 0; k < 2; ++k)
    workers.emplace_back([&, k] {
      try {
        trainer t(spec, {"worker", k}, o, cpu{}, net.transport());
        std::vector<dsgd::tensor<cpu>> vars{dsgd::tensor<cpu>(cpu{}, {10, 2}), dsgd::tensor<cpu>(cpu{}, {2})};
        std::fill_n(vars[0].data(), 20, 1.f);
        t.create_variables(vars, {"emb", "b"});
        t.set_sparse(0);
        std::vector<std::uint64_t> keys{std::uint64_t(k), 5};
        std::vector<float> rows(4);
        for (std::uint64_t s = 0; s < 3; ++s) {
          expect(t.pull(vars) == s, "t.pull(vars) == s");
          expect(t.pull_rows(0, keys, rows) == s, "t.pull_rows(0, keys, rows) == s");
          std::vector<float> g(4, float(s + 1));
          expect(t.push_rows(0, keys, g) == 0u, "t.push_rows(0, keys, g) == 0u");
          std::vector<dsgd::tensor<cpu>> grads{dsgd::tensor<cpu>(cpu{}, {10, 2}), dsgd::tensor<cpu>(cpu{}, {2})};
          std::fill_n(grads[1].data(), 2, float(k + 1));
          expect(t.push(grads) == 0u, "t.push(grads) == 0u");
        }
        t.pull(vars);
        std::vector<std::uint64_t> all(10);
        std::iota(all.begin(), all.end(), std::uint64_t{0});
        emb_final[k].resize(20);
        expect(t.pull_rows(0, all, emb_final[k]) == 3u, "t.pull_rows(0, all, emb_final[k]) == 3u");
        b_final[k] = vars[1].to_host();
        emb_local[k] = vars[0].to_host();
        t.finish();
      } catch (...) {
        failed[k] = std::current_exception();
      }
    });
  for (auto& w : workers) w.join();
  ps.join();
  for (auto& f : failed)
    if (f) std::rethrow_exception(f);
  if (ps_failed) std::rethrow_exception(ps_failed);
  // Row 5: both workers, mean s + 1; rows 0 and 1: one worker, mean (s + 1) / 2; lr 0.5.
  std::vector<float> emb(20, 1.f);
  for (int c = 0; c < 2; ++c) {
    emb[0 * 2 + c] = emb[1 * 2 + c] = 1.f - 0.5f * (0.5f + 1.f + 1.5f);
    emb[5 * 2 + c] = 1.f - 0.5f * (1.f + 2.f + 3.f);
  }
  for (int k = 0; k < 2; ++k) {
    BOOST_TEST(emb_final[k] == emb, boost::test_tools::tolerance(1e-6f) << boost::test_tools::per_element());
    BOOST_TEST(b_final[k] == std::vector<float>(2, -3 * 0.5f * 1.5f), boost::test_tools::tolerance(1e-6f)
                                                                          << boost::test_tools::per_element());
    BOOST_TEST(emb_local[k] == std::vector<float>(20, 1.f), boost::test_tools::per_element());  // pull() skipped it
  }
}

// A peer that speaks the protocol by hand (on an inproc connection), to send what ps_client
// never would.
struct raw_peer {
  boost::asio::io_context ioc;
  std::shared_ptr<dsgd::transport::inproc_connection> conn;

  raw_peer(const dsgd::cluster::cluster_spec& spec, const dsgd::test::test_net<inproc>& net) {
    dsgd::transport::tcp_options t;
    t.identity = "worker:0";
    t.token = "secret";
    t.log = [](std::string_view) {};
    for (int attempt = 0; attempt < 100 && !conn; ++attempt) {
      bool done = false;
      net.transport().async_connect(ioc.get_executor(), spec.address("ps", 0), t,
                                    [&](dsgd::error_code ec, std::shared_ptr<dsgd::transport::inproc_connection> c) {
                                      if (!ec) conn = c;
                                      done = true;
                                    });
      while (!done && ioc.run_one_for(10s)) {
      }
      ioc.restart();
      if (!conn) std::this_thread::sleep_for(50ms);
    }
    BOOST_REQUIRE(conn);
  }

  std::pair<dsgd::transport::frame_header, std::string> call(dsgd::transport::frame_header h,
                                                             std::vector<boost::asio::const_buffer> payload) {
    h.request_id = ++id;
    conn->async_send(h, payload, [](dsgd::error_code) {});
    std::string body;
    dsgd::transport::frame_header got;
    dsgd::error_code err;
    bool done = false;
    conn->async_receive(
        [&](const dsgd::transport::frame_header& rh, dsgd::error_code&) {
          body.resize(rh.payload_length);
          return boost::asio::buffer(body);
        },
        [&](dsgd::error_code ec, dsgd::transport::frame_header rh) {
          err = ec;
          got = rh;
          done = true;
        });
    while (!done && ioc.run_one_for(10s)) {
    }
    ioc.restart();
    BOOST_REQUIRE(done);
    BOOST_REQUIRE(!err);
    BOOST_REQUIRE_EQUAL(got.request_id, h.request_id);
    return {got, body};
  }

  std::uint64_t id = 0;
};

dsgd::transport::frame_header request(protocol::message m, std::uint32_t variable = 0) {
  dsgd::transport::frame_header h;
  h.type = static_cast<std::uint16_t>(m);
  h.variable = variable;
  return h;
}

std::string error_of(const std::pair<dsgd::transport::frame_header, std::string>& reply) {
  if (reply.first.type != static_cast<std::uint16_t>(protocol::message::reply_error)) return "(no error)";
  return protocol::decode_control<protocol::error_reply>(reply.second, "reply_error").message;
}

BOOST_AUTO_TEST_CASE(the_ps_checks_every_sparse_request_itself_and_answers_with_the_reason) {
  auto spec = net.spec(1, 1);
  running_ps<dsgd::update::async, dsgd::optim::sgd> ps(spec, 0, net, {1.f}, 8);
  raw_peer peer(spec, net);
  protocol::shard_layout layout{0, 0, "emb", {10, 4}, 0, 10};
  auto reg =
      protocol::encode_control(protocol::register_request{"worker:0", 0, true, 1, "emb[10, 4]@0+0:40", 1, {layout}});
  auto h = request(protocol::message::register_worker);
  h.flags = dsgd::transport::frame_flags::control;
  BOOST_REQUIRE_EQUAL(peer.call(h, {boost::asio::buffer(reg)}).first.type, std::uint16_t(protocol::message::reply_ok));
  std::vector<float> init(40);
  for (std::size_t i = 0; i < init.size(); ++i) init[i] = float(i);
  BOOST_REQUIRE_EQUAL(peer.call(request(protocol::message::init_shard), {boost::asio::buffer(init)}).first.type,
                      std::uint16_t(protocol::message::reply_ok));

  // Keys then rows of 4 floats: 8 + 16 bytes per key. 30 bytes is not a whole number of them.
  std::vector<char> ragged(30, 0);
  auto e = error_of(peer.call(request(protocol::message::sparse_push), {boost::asio::buffer(ragged)}));
  BOOST_TEST(e.find("30 payload bytes are not a whole number of keys with their rows (8 + 4 x 4 bytes each)") !=
                 std::string::npos,
             e);
  std::vector<std::uint64_t> key{3};
  e = error_of(peer.call(request(protocol::message::sparse_pull, 5), {boost::asio::buffer(key)}));
  BOOST_TEST(e.find("sparse_pull of variable 5 shard 0, which ps:0 does not hold") != std::string::npos, e);
  std::vector<std::uint64_t> nine(9, 1);
  e = error_of(peer.call(request(protocol::message::sparse_pull), {boost::asio::buffer(nine)}));
  BOOST_TEST(e.find("9 keys exceed the cap of 8") != std::string::npos, e);
  std::vector<std::uint64_t> past{2, 10};
  e = error_of(peer.call(request(protocol::message::sparse_pull), {boost::asio::buffer(past)}));
  BOOST_TEST(e.find("row 10 (key 1 of 2) out of range for emb [10, 4] on ps:0 (holds rows 0-9)") != std::string::npos,
             e);

  // A good push (key 3 twice: the rows add up) and pull on the same connection.
  std::vector<std::uint64_t> keys{3, 3};
  std::vector<float> rows{1, 1, 1, 1, 2, 2, 2, 2};
  auto pushed =
      peer.call(request(protocol::message::sparse_push), {boost::asio::buffer(keys), boost::asio::buffer(rows)});
  BOOST_TEST(pushed.first.type == std::uint16_t(protocol::message::push_applied));
  auto pulled = peer.call(request(protocol::message::sparse_pull), {boost::asio::buffer(key)});
  BOOST_REQUIRE_EQUAL(pulled.first.type, std::uint16_t(protocol::message::pull_reply));
  BOOST_REQUIRE_EQUAL(pulled.second.size(), 4 * sizeof(float));
  float row3[4];
  std::memcpy(row3, pulled.second.data(), sizeof row3);
  for (int k = 0; k < 4; ++k) BOOST_TEST(row3[k] == float(12 + k) - 3.f);
}

BOOST_AUTO_TEST_SUITE_END()

// Dynamic embedding tables (update::table_shard on each ps task, keys routed by
// placement::hash_keys): create_table, pull_table, read_table, push_table.
BOOST_FIXTURE_TEST_SUITE(dynamic_tables, inproc_net)

namespace emb = dsgd::embedding;
constexpr std::size_t table_dim = 4;
const emb::initializer::uniform table_init{-0.1f, 0.1f, 7};

emb::table_spec ids_table(emb::table_rule rule, std::uint32_t admit_after = 2) {
  return {.name = "ids",
          .dim = table_dim,
          .rule = rule,
          .optimizer = emb::row_optimizer_spec::adagrad(0.5f, 0.1f),
          .initializer = emb::initializer_spec::of(table_init),
          .admission = emb::admission_spec::by_count(admit_after)};
}

// Three workers over two ps tasks: the table's keys split between them by hash, a sync step of
// each ps task completing with every worker's push. The rows equal one process on the
// concatenated batch (dsgd::test::sync_oracle), the keys the second step they are pushed in
// admitted; the keys never admitted read their initial rows; the pushes' dropped counts add up
// to the oracle's.
BOOST_AUTO_TEST_CASE(a_sync_table_over_two_ps_tasks_equals_one_process_on_the_concatenated_batch) {
  constexpr std::size_t workers = 3, steps = 6;
  auto spec = net.spec(2, workers);
  using ps_t = running_ps<dsgd::update::sync_average, dsgd::optim::sgd>;
  ps_t ps0(spec, 0, net, {0.1f}), ps1(spec, 1, net, {0.1f});
  auto plan = dp::round_robin{}.place({{"b", {1}}}, 2);

  std::vector<std::uint64_t> keys;  // every key of the batches
  for (std::uint64_t k = 1000; k < 1030; ++k) keys.push_back(k);
  std::vector<float> rows(keys.size() * table_dim);
  std::vector<std::uint64_t> dropped(workers, 0);
  std::vector<std::exception_ptr> failed(workers);
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < workers; ++k)
    threads.emplace_back([&, k] {
      try {
        auto c = join_cluster(net, spec, plan, k, {{0.f}});
        c->create_table(0, ids_table(emb::table_rule::sync()));  // every worker: the same spec
        for (std::uint64_t s = 0; s < steps; ++s) {
          auto step = dsgd::test::table_worker_step(k, s, table_dim, [&](auto keys, auto out) {
            expect(c->pull_table(0, table_dim, keys, out, s) == s, "pull_table(..., s) == s");
          });
          dropped[k] += c->push_table(0, table_dim, step.keys, step.grads, s);
        }
        if (k == 0) {  // once the last step is applied on both ps tasks, every key's row
          expect(c->pull_table(0, table_dim, {}, {}, steps) == steps, "pull_table(..., steps) == steps");
          c->read_table(0, table_dim, keys, rows);
        }
        c->finish();
      } catch (...) {
        failed[k] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& f : failed)
    if (f) std::rethrow_exception(f);

  std::size_t oracle_dropped = 0;
  auto w = dsgd::test::sync_oracle(workers, steps, table_dim, 2, 0.5f, 0.1f, table_init, oracle_dropped);
  BOOST_TEST(dropped[0] + dropped[1] + dropped[2] == oracle_dropped);
  BOOST_TEST(oracle_dropped > 0u);
  std::size_t admitted = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::vector<float> expected(table_dim);
    if (auto it = w.find(keys[i]); it != w.end()) {
      expected = it->second;
      ++admitted;
    } else {
      table_init(keys[i], expected);
    }
    for (std::size_t d = 0; d < table_dim; ++d)
      BOOST_TEST(rows[i * table_dim + d] == expected[d], "key " << keys[i] << boost::test_tools::tolerance(1e-5f));
  }
  BOOST_TEST(admitted == w.size());
}

// Hybrid: the dense variables sync, the table async. A table push is applied at once, before
// the dense step it belongs to completes; the dense step still waits for both workers.
BOOST_AUTO_TEST_CASE(hybrid_dense_variables_sync_and_a_table_async_in_one_job) {
  auto spec = net.spec(1, 2);
  running_ps<dsgd::update::sync_average, dsgd::optim::sgd> ps(spec, 0, net, {1.f});
  auto plan = dp::round_robin{}.place({{"b", {1}}}, 1);
  auto c0 = join_cluster(net, spec, plan, 0, {{0.f}});
  auto c1 = join_cluster(net, spec, plan, 1, {{0.f}});
  c0->create_table(0, ids_table(emb::table_rule::async(), 1));
  std::vector<std::uint64_t> key{77};
  std::vector<float> before(table_dim), after(table_dim), g(table_dim, 1.f);
  c0->pull_table(0, table_dim, key, before, 0);  // admits key 77 (admission after 1 sighting)
  BOOST_TEST(c0->push_table(0, table_dim, key, g, 0) == 0u);
  BOOST_TEST(c0->pull_table(0, table_dim, key, after, 0) == 1u);  // one update of the table
  for (std::size_t d = 0; d < table_dim; ++d) BOOST_TEST(after[d] < before[d]);
  std::vector<float> one{1.f};
  std::vector<std::span<const float>> grad{one};
  BOOST_TEST(c0->push(plan, 0, grad) == 0u);
  BOOST_TEST(c1->push(plan, 0, grad) == 0u);
  BOOST_TEST(pull_all(*c0, plan, 0, 1)[0] == -1.f);             // the dense step: the mean of both
  c1->create_table(0, ids_table(emb::table_rule::async(), 1));  // the same spec again: fine
}

// pull_tables and push_tables: two tables (rows of 4 and of 1 float) over two ps tasks read and
// updated in one round trip each end bit for bit where the same steps table by table leave a
// second pair, and report the same steps and dropped counts.
BOOST_AUTO_TEST_CASE(tables_read_and_pushed_together_end_as_table_by_table) {
  auto spec = net.spec(2, 1);
  using ps_t = running_ps<dsgd::update::sync_average, dsgd::optim::sgd>;
  ps_t ps0(spec, 0, net, {0.1f}), ps1(spec, 1, net, {0.1f});
  auto plan = dp::round_robin{}.place({{"b", {1}}}, 2);
  auto c = join_cluster(net, spec, plan, 0, {{0.f}});
  auto wide_spec = ids_table(emb::table_rule::async());
  wide_spec.dim = 1;
  for (std::uint32_t pair : {0u, 2u}) {  // tables 0 and 1 together, 2 and 3 one by one
    c->create_table(pair, ids_table(emb::table_rule::async()));
    c->create_table(pair + 1, wide_spec);
  }
  using client_t = std::remove_cvref_t<decltype(*c)>;
  for (std::uint64_t s = 0; s < 5; ++s) {
    std::vector<std::uint64_t> deep_keys, wide_keys;
    for (std::uint64_t k = 0; k < 12; ++k) deep_keys.push_back(1000 + (k * 7 + s * 3) % 20);
    for (std::uint64_t k = 0; k < 9; ++k) wide_keys.push_back(5000 + (k * 5 + s) % 11);
    std::sort(deep_keys.begin(), deep_keys.end());
    deep_keys.erase(std::unique(deep_keys.begin(), deep_keys.end()), deep_keys.end());
    std::sort(wide_keys.begin(), wide_keys.end());
    wide_keys.erase(std::unique(wide_keys.begin(), wide_keys.end()), wide_keys.end());
    std::vector<float> deep(deep_keys.size() * table_dim), wide(wide_keys.size()), deep2(deep.size()),
        wide2(wide.size());
    const std::vector<typename client_t::table_lookup> lookups{{0, table_dim, deep_keys, deep, s},
                                                               {1, 1, wide_keys, wide, s}};
    const auto step = c->pull_tables(std::span(lookups));
    const auto step2 =
        std::min(c->pull_table(2, table_dim, deep_keys, deep2, s), c->pull_table(3, 1, wide_keys, wide2, s));
    BOOST_TEST(step == step2);
    BOOST_TEST(deep == deep2, boost::test_tools::per_element());
    BOOST_TEST(wide == wide2, boost::test_tools::per_element());
    std::vector<float> dg(deep.size()), wg(wide.size());
    for (std::size_t i = 0; i < dg.size(); ++i) dg[i] = deep[i] + 0.01f * float(i % 5);
    for (std::size_t i = 0; i < wg.size(); ++i) wg[i] = 1.f - wide[i];
    const std::vector<typename client_t::table_update> updates{{0, table_dim, deep_keys, dg, s},
                                                               {1, 1, wide_keys, wg, s}};
    const auto dropped = c->push_tables(std::span(updates));
    const auto dropped2 = c->push_table(2, table_dim, deep_keys, dg, s) + c->push_table(3, 1, wide_keys, wg, s);
    BOOST_TEST(dropped == dropped2);
    if (s == 0) BOOST_TEST(dropped > 0u);  // admission after 2 sightings: the first step's are dropped
  }
  std::vector<std::uint64_t> all;
  for (std::uint64_t k = 1000; k < 1020; ++k) all.push_back(k);
  std::vector<float> a(all.size() * table_dim), b(a.size());
  c->read_table(0, table_dim, all, a);
  c->read_table(2, table_dim, all, b);
  BOOST_TEST(a == b, boost::test_tools::per_element());
  all.clear();
  for (std::uint64_t k = 5000; k < 5011; ++k) all.push_back(k);
  std::vector<float> wa(all.size()), wb(all.size()), init(all.size());
  c->read_table(1, 1, all, wa);
  c->read_table(3, 1, all, wb);
  BOOST_TEST(wa == wb, boost::test_tools::per_element());
  for (std::size_t i = 0; i < all.size(); ++i) table_init(all[i], std::span(init).subspan(i, 1));
  BOOST_TEST(wa != init, "the wide table's rows did not change");
  c->finish();
}

// Bad requests are named errors, and the connection keeps serving.
BOOST_AUTO_TEST_CASE(bad_table_requests_are_named_errors) {
  auto spec = net.spec(1, 1);
  running_ps<dsgd::update::async, dsgd::optim::sgd> ps(spec, 0, net, {1.f});
  auto plan = dp::round_robin{}.place({{"b", {1}}}, 1);
  auto c = join_cluster(net, spec, plan, 0, {{0.f}});
  c->create_table(0, ids_table(emb::table_rule::async()));
  BOOST_CHECK_EXCEPTION(c->create_table(0, ids_table(emb::table_rule::sync())), dsgd::error, [](const dsgd::error& e) {
    return mentions(e, dsgd::errc::invalid_argument, {"ids: dim 4, async", "ids: dim 4, sync"});
  });
  std::vector<std::uint64_t> key{5};
  std::vector<float> row(table_dim), bad(table_dim, 1.f);
  BOOST_CHECK_EXCEPTION(c->pull_table(3, table_dim, key, row, 0), dsgd::error, [](const dsgd::error& e) {
    return mentions(e, dsgd::errc::invalid_argument, {"table_pull", "no table 3"});
  });
  bad[2] = std::nanf("");
  BOOST_CHECK_EXCEPTION(c->push_table(0, table_dim, key, bad, 0), dsgd::error, [](const dsgd::error& e) {
    return mentions(e, dsgd::errc::invalid_argument, {"ids", "key 5", "column 2"});
  });
  BOOST_CHECK_EXCEPTION(c->push_table(0, table_dim, key, std::vector<float>(3), 0), dsgd::error,
                        [](const dsgd::error& e) { return e.code() == dsgd::errc::shape_mismatch; });
  // Evaluation reads do not count as sightings: after two, the first training pull still does
  // not admit (admission after 2), and the gradient of key 5 is dropped.
  c->read_table(0, table_dim, key, row);
  c->read_table(0, table_dim, key, row);
  std::vector<float> initial(table_dim);
  table_init(5, initial);
  BOOST_TEST(row == initial, boost::test_tools::per_element());
  c->pull_table(0, table_dim, key, row, 0);
  BOOST_TEST(c->push_table(0, table_dim, key, std::vector<float>(table_dim, 1.f), 0) == 1u);
  c->pull_table(0, table_dim, key, row, 0);  // the second sighting admits
  BOOST_TEST(c->push_table(0, table_dim, key, std::vector<float>(table_dim, 1.f), 0) == 0u);
  // The ps's counts: one row, admitted at the second training lookup; the first refused, its
  // gradient dropped; two pushes applied (the NaN one was refused whole).
  const auto counts = c->table_stats(0);
  BOOST_TEST(counts.rows == 1u);
  BOOST_TEST(counts.admitted == 1u);
  BOOST_TEST(counts.rejected == 1u);
  BOOST_TEST(counts.dropped == 1u);
  BOOST_TEST(counts.evicted == 0u);
  BOOST_TEST(counts.step == 2u);
  BOOST_TEST(counts.bytes > 0u);
  BOOST_TEST(counts.scalars("ids/").front().first == "ids/rows");
  BOOST_CHECK_EXCEPTION(c->table_stats(9), dsgd::error, [](const dsgd::error& e) {
    return mentions(e, dsgd::errc::invalid_argument, {"table_stats", "no table 9"});
  });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
