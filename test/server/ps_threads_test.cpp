// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for serving_options::threads: a ps whose connections are served by several threads of
// its own, over loopback TCP (the socket, shared memory, TLS), with more workers than threads so
// that every thread serves several connections and every connection is served by several threads
// in turn. The shards must come out as they do on one thread: every push applied once, no pull
// torn, sync steps exact; a worker that vanishes costs the others nothing.
#include <dsgd/client/ps_client.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/parameter_server.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>

#include <support/error_checks.hpp>
#include <support/inproc_cluster.hpp>
#include <support/loopback_cluster.hpp>
#include <support/tls_certs.hpp>
#include <support/worker_loops.hpp>

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(ps_threads_test)

using namespace std::chrono_literals;
namespace ds = dsgd::server;
namespace client = dsgd::client;
using tcp = dsgd::transport::asio_tcp;
using async_ps = ds::parameter_server<dsgd::update::async, dsgd::optim::sgd>;
using sync_ps = ds::parameter_server<dsgd::update::sync_average, dsgd::optim::sgd>;

namespace {

enum class link { socket, shared_memory, tls };

std::ostream& operator<<(std::ostream& os, link l) {
  return os << (l == link::socket ? "socket" : l == link::shared_memory ? "shared memory" : "TLS");
}

constexpr std::size_t max_workers = 6;

// A CA, ps:0's certificate and one per worker, made once.
const dsgd::test::cert_dir& certs() {
  static const auto dir = [] {
    auto d = std::make_unique<dsgd::test::cert_dir>();
    d->add_ca("ca");
    d->add_cert("ps0", "ca", "ps:0", "DNS:localhost,IP:127.0.0.1");
    for (std::size_t k = 0; k < max_workers; ++k)
      d->add_cert("worker" + std::to_string(k), "ca", "worker:" + std::to_string(k));
    return d;
  }();
  return *dir;
}

dsgd::transport::tls_options tls_for(const std::string& name) {
  dsgd::transport::tls_options o;
  o.ca_file = certs().cert("ca");
  o.cert_file = certs().cert(name);
  o.key_file = certs().key(name);
  return o;
}

// How a task of these tests connects: the token, shared memory or not, TLS or not.
template <class Options>
void configure(Options& o, link how, const std::string& cert) {
  o.connection.token = "secret";
  o.connection.shared_memory.enabled = how == link::shared_memory;
  if (how == link::tls) o.connection.tls = tls_for(cert);
}

template <class Ps>
typename Ps::options ps_options(std::size_t threads, link how) {
  typename Ps::options o;
  configure(o, how, "ps0");
  o.connection.log = [](std::string_view) {};
  o.serving.threads = threads;
  o.serving.step_timeout = 30s;
  return o;
}

client::client_options client_opts(std::size_t k, link how) {
  client::client_options o;
  configure(o, how, "worker" + std::to_string(k));
  o.connection.chunk_bytes = 16 << 10;  // several chunks per push: reads interleave across threads
  o.requests.startup_timeout = 20s;
  o.requests.request_timeout = 60s;
  o.requests.initial_backoff = 5ms;
  return o;
}

}  // namespace

// Six async workers push all-ones gradients to a ps on four threads and pull after each push:
// every pull is uniform (no push read half applied) and the shard ends with every push applied
// exactly once, over the socket, through shared memory and over TLS.
BOOST_DATA_TEST_CASE(async_pushes_from_many_workers_are_each_applied_once_and_never_read_half_applied,
                     boost::unit_test::data::make({link::socket, link::shared_memory, link::tls}), how) {
  constexpr std::size_t workers = max_workers;
  constexpr int pushes = 40;
  constexpr std::size_t elements = 20'000;  // 80 kB: five chunks of 16 KiB
  auto spec = dsgd::test::loopback_cluster(1, workers);
  auto o = ps_options<async_ps>(4, how);
  o.optimizer = {1.f / 1024.f};  // a power of two: every value below is exact
  async_ps ps(spec, 0, o);
  dsgd::test::serving serving(ps);

  auto run = dsgd::test::run_async_pushes(workers, pushes, elements, [&](std::size_t k) {
    return std::make_unique<client::ps_client>(spec, dsgd::cluster::task_id{"worker", int(k)}, client_opts(k, how));
  });
  serving.join();
  serving.rethrow_failure();
  for (std::size_t k = 0; k < workers; ++k)
    BOOST_TEST(run.failures[k].empty(), "worker " << k << ": " << run.failures[k]);
  const auto* shard = ps.find(0, 0);
  BOOST_REQUIRE(shard != nullptr);
  BOOST_TEST(shard->step() == workers * pushes);
  const float expected = 1.f - float(workers * pushes) / 1024.f;
  BOOST_TEST(std::count(run.final_values.begin(), run.final_values.end(), expected) == std::ptrdiff_t(elements));
}

// Two sync ps tasks on three threads each, five workers: each step's pull returns that step,
// every worker ends on the same values, and they are those of SGD on the mean gradient.
BOOST_DATA_TEST_CASE(sync_steps_across_threaded_ps_tasks_equal_single_process_sgd,
                     boost::unit_test::data::make({link::socket, link::shared_memory}), how) {
  constexpr std::size_t workers = 5;
  constexpr std::uint64_t steps = 12;
  auto spec = dsgd::test::loopback_cluster(2, workers);
  auto o = ps_options<sync_ps>(3, how);
  o.optimizer = {0.1f};
  sync_ps ps0(spec, 0, o), ps1(spec, 1, o);
  dsgd::test::serving serving0(ps0), serving1(ps1);
  auto plan = dsgd::placement::round_robin{}.place({{"w", {300, 40}}, {"b", {40}}, {"v", {7000}}}, 2);
  std::vector<std::vector<float>> init{std::vector<float>(12'000, 1.f), std::vector<float>(40, 2.f),
                                       std::vector<float>(7000, 3.f)};
  auto grad = [](std::size_t k, std::uint64_t s, float w) { return 0.5f * w + float(k) - float(s) * 0.1f; };
  auto expected = dsgd::test::mean_gradient_sgd(init, workers, steps, 0.1f, grad);
  auto run = dsgd::test::run_sync_steps(workers, plan, init, steps, grad, [&](std::size_t k) {
    return std::make_unique<client::ps_client>(spec, dsgd::cluster::task_id{"worker", int(k)}, client_opts(k, how));
  });
  for (std::size_t k = 0; k < workers; ++k)
    BOOST_TEST(run.failures[k].empty(), "worker " << k << ": " << run.failures[k]);
  for (std::size_t k = 1; k < workers; ++k)
    BOOST_TEST((run.finals[k] == run.finals[0]), "worker " << k << " ends elsewhere");
  for (std::size_t v = 0; v < run.finals[0].size(); ++v)
    BOOST_TEST(run.finals[0][v] == expected[v], boost::test_tools::tolerance(1e-4f)
                                                    << boost::test_tools::per_element());
}

// Workers that vanish without finish() (their connections close while the others' pushes are
// being read on other threads): the ps drops them and serves the rest to the end, as it does on
// one thread. The chief's shutdown waits the step timeout for the two that never finish.
BOOST_DATA_TEST_CASE(workers_that_vanish_cost_the_others_nothing, boost::unit_test::data::make({1, 3}), threads) {
  constexpr std::size_t workers = 4;
  constexpr int pushes = 30;
  constexpr std::size_t elements = 50'000;  // 13 chunks a push
  auto spec = dsgd::test::loopback_cluster(1, workers);
  auto o = ps_options<async_ps>(std::size_t(threads), link::socket);
  o.optimizer = {1.f / 1024.f};
  o.serving.step_timeout = 2s;
  async_ps ps(spec, 0, o);
  dsgd::test::serving serving(ps);
  auto plan = dsgd::placement::round_robin{}.place({{"w", {elements}}}, 1);
  std::atomic<std::size_t> survivors_done{0};
  auto failures = dsgd::test::on_threads(workers, [&](std::size_t k) {
    const bool lost = k >= 2;  // workers 2 and 3 vanish
    std::vector<float> w(elements, 1.f), g(elements, 1.f);
    auto c = std::make_unique<client::ps_client>(spec, dsgd::cluster::task_id{"worker", int(k)},
                                                 client_opts(k, link::socket));
    dsgd::test::join_cluster(*c, plan, k, {w});
    for (int i = 0; i < (lost ? pushes / 3 : pushes); ++i) {
      std::vector<std::span<const float>> src{g};
      c->push(plan, 0, src);
    }
    if (lost) return;  // the client goes without finish(): its connection closes
    ++survivors_done;
    std::vector<std::span<float>> dst{w};
    c->pull(plan, 0, dst);
    if (std::any_of(w.begin(), w.end(), [&](float x) { return x != w[0]; }))
      throw std::runtime_error("the last pull is torn");
    if (k == 0) {
      for (auto until = std::chrono::steady_clock::now() + 60s; survivors_done < 2;) {
        if (std::chrono::steady_clock::now() > until) throw std::runtime_error("worker 1 never finished");
        std::this_thread::sleep_for(5ms);
      }
    }
    c->finish();
    if (k == 0) c->shutdown_cluster();
  });
  serving.join();
  serving.rethrow_failure();
  for (std::size_t k = 0; k < workers; ++k) BOOST_TEST(failures[k].empty(), "worker " << k << ": " << failures[k]);
  const auto* shard = ps.find(0, 0);
  BOOST_REQUIRE(shard != nullptr);
  // Every push a client returned from was applied; the lost ones returned from all of theirs.
  BOOST_TEST(shard->step() == std::uint64_t(2 * pushes + 2 * (pushes / 3)));
}

BOOST_AUTO_TEST_CASE(a_bad_thread_count_or_a_transport_served_by_one_thread_is_a_named_error) {
  using dsgd::test::contains;
  auto spec = dsgd::test::loopback_cluster(1, 1);
  for (std::size_t threads : {std::size_t(0), std::size_t(1025)}) {
    auto msg = dsgd::test::error_of([&] { async_ps(spec, 0, ps_options<async_ps>(threads, link::socket)); },
                                    dsgd::errc::invalid_argument);
    BOOST_TEST(contains(msg, "threads"), msg);
    BOOST_TEST(contains(msg, "is " + std::to_string(threads) + "; expected 1 to 1024"), msg);
  }
  dsgd::test::test_net<dsgd::transport::inproc> n;
  using inproc_ps =
      ds::parameter_server<dsgd::update::async, dsgd::optim::sgd, dsgd::device::cpu, dsgd::transport::inproc>;
  auto msg = dsgd::test::error_of(
      [&] { inproc_ps(n.spec(1, 1), 0, ps_options<inproc_ps>(2, link::socket), {}, n.transport()); },
      dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "ps:0: serving.threads 2 is for TCP"), msg);
}

BOOST_AUTO_TEST_SUITE_END()
