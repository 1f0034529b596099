// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/server/parameter_server.hpp> and <dsgd/client/ps_client.hpp>: ps tasks and
// workers as threads of this process. The server and client logic runs over transport::inproc
// (no sockets); cases that should hold for both transports run over each; the cases about TCP
// itself (a ps started after its worker on a real port, raw sockets at the frame deadline, shared
// memory) stay on loopback TCP.
#include <dsgd/client/ps_client.hpp>
#include <dsgd/cluster/endpoint.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/greedy_by_bytes.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/parameter_server.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>

#include <support/inproc_cluster.hpp>
#include <support/loopback_cluster.hpp>
#include <support/worker_loops.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/test_case_template.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>

BOOST_AUTO_TEST_SUITE(ps_test)

using namespace std::chrono_literals;
namespace ds = dsgd::server;
namespace client = dsgd::client;
namespace protocol = dsgd::protocol;
using inproc = dsgd::transport::inproc;
using tcp = dsgd::transport::asio_tcp;
template <class T>
using sync_ps_over = ds::parameter_server<dsgd::update::sync_average, dsgd::optim::sgd, dsgd::device::cpu, T>;
template <class T>
using async_ps_over = ds::parameter_server<dsgd::update::async, dsgd::optim::sgd, dsgd::device::cpu, T>;
using sync_ps = sync_ps_over<tcp>;
using async_ps = async_ps_over<tcp>;
template <class T>
using net = dsgd::test::test_net<T>;

// ps_client is the TCP client; local_endpoint() is TCP's only, local_address() every transport's.
static_assert(std::is_same_v<client::ps_client, client::basic_ps_client<tcp>>);
template <class Ps>
concept has_local_endpoint = requires(const Ps& ps) {
  ps.local_endpoint();
};
static_assert(has_local_endpoint<sync_ps> && !has_local_endpoint<sync_ps_over<inproc>>);
static_assert(requires(const sync_ps_over<inproc>& ps) {
  { ps.local_address() } -> std::same_as<dsgd::cluster::task_address>;
});

namespace {

client::client_options client_opts(std::string token = "secret") {
  client::client_options o;
  o.connection.token = std::move(token);
  o.requests.startup_timeout = 10s;
  o.requests.request_timeout = 30s;
  o.requests.initial_backoff = 5ms;  // retries (a ps not up yet, a rejected token) come quickly
  return o;
}

// Connects each of @p clients, then registers the k-th as replica k of @p plan (replica 0, the
// chief, creates the variables).
void connect_and_register(const dsgd::placement::plan& plan,
                          std::initializer_list<client::basic_ps_client<inproc>*> clients) {
  for (auto* c : clients) c->connect();
  std::uint32_t replica = 0;
  for (auto* c : clients) {
    c->register_worker(plan, replica, replica == 0);
    ++replica;
  }
}

// The options every ps of these tests starts from: the test's token, no log lines.
template <class Ps>
typename Ps::options quiet_options() {
  typename Ps::options o;
  o.connection.token = "secret";
  o.connection.log = [](std::string_view) {};
  return o;
}

// Runs sync ps task i of spec over T on its own thread; stops it (if still serving) on destruction.
template <class T = tcp>
struct running_ps {
  std::unique_ptr<sync_ps_over<T>> ps;
  std::thread thread;
  running_ps(const dsgd::cluster::cluster_spec& spec, int i, T transport = T{},
             std::chrono::milliseconds step_timeout = 20s) {
    auto o = quiet_options<sync_ps_over<T>>();
    o.optimizer = {0.1f};
    o.serving.step_timeout = step_timeout;
    ps = std::make_unique<sync_ps_over<T>>(spec, i, o, dsgd::device::cpu{}, std::move(transport));
    thread = std::thread([this] { ps->join(); });
  }
  ~running_ps() {
    ps->stop();
    thread.join();
  }
};

// Ps task i of spec over T with options o, not yet serving.
template <class Ps>
std::unique_ptr<Ps> make_ps(const dsgd::cluster::cluster_spec& spec, int i, typename Ps::options o,
                            typename Ps::transport_type transport) {
  return std::make_unique<Ps>(spec, i, std::move(o), dsgd::device::cpu{}, std::move(transport));
}

std::vector<dsgd::placement::variable_info> variables() { return {{"w", {4, 3}}, {"b", {3}}, {"v", {5}}}; }

// A ps task of the test's own making on an inproc hub, to put ps tasks in states a real cluster
// passes through only for a moment: it answers register_worker with zero push counts (one per
// layout, @p layouts of them) and each wait_ready with the next session stamp of its script,
// the last one again once the script has run out. Everything runs on its own thread.
class scripted_ps {
 public:
  scripted_ps(inproc& net, int index, std::size_t layouts, std::vector<std::uint64_t> stamps)
      : counts_(layouts * sizeof(std::uint64_t)), stamps_(std::move(stamps)) {
    dsgd::transport::tcp_options o;
    o.identity = "ps:" + std::to_string(index);
    o.token = "secret";
    o.log = [](std::string_view) {};
    listener_ = net.listen(ioc_.get_executor(), "ps-" + std::to_string(index) + ":1", o);
    listener_->start([this](std::shared_ptr<dsgd::transport::inproc_connection> c) {
      connections_.push_back(c);
      serve(std::move(c), std::make_shared<std::vector<std::byte>>());
    });
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~scripted_ps() {
    boost::asio::post(ioc_, [this] {
      listener_->close();
      for (auto& c : connections_) c->close();
    });
    work_.reset();
    thread_.join();
  }
  /// @returns how many wait_ready requests it has answered.
  std::size_t wait_readies() const { return answered_; }

 private:
  // Answers @p c's requests in turn; @p payload (the connection's own) receives what they carry.
  void serve(std::shared_ptr<dsgd::transport::inproc_connection> c, std::shared_ptr<std::vector<std::byte>> payload) {
    c->async_receive(
        [payload](const dsgd::transport::frame_header& h, dsgd::error_code&) {
          payload->resize(h.payload_length);
          return boost::asio::buffer(*payload);
        },
        [this, c, payload](dsgd::error_code ec, dsgd::transport::frame_header h) {
          if (ec) return;
          const auto kind = static_cast<protocol::message>(h.type);
          auto reply = ds::detail::reply_header(h, protocol::message::reply_ok);
          if (kind == protocol::message::wait_ready) {
            reply.step = stamps_[std::min(answered_.load(), stamps_.size() - 1)];
            ++answered_;
          }
          const auto counts =
              kind == protocol::message::register_worker ? boost::asio::buffer(counts_) : boost::asio::const_buffer{};
          c->async_send(reply, counts, [](dsgd::error_code) {});
          serve(c, payload);
        });
  }

  boost::asio::io_context ioc_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_ = boost::asio::make_work_guard(ioc_);
  std::shared_ptr<dsgd::transport::inproc_listener> listener_;
  std::vector<std::shared_ptr<dsgd::transport::inproc_connection>> connections_;
  const std::vector<std::byte> counts_;
  const std::vector<std::uint64_t> stamps_;
  std::atomic<std::size_t> answered_{0};
  std::thread thread_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(parameter_server_over_tcp)

// The whole path, on both transports.
BOOST_AUTO_TEST_CASE_TEMPLATE(sync_workers_equal_single_process_sgd, T, dsgd::test::both_transports) {
  net<T> n;
  auto spec = n.spec(2, 3);
  running_ps<T> ps0(spec, 0, n.transport()), ps1(spec, 1, n.transport());
  auto plan = dsgd::placement::round_robin{}.place(variables(), 2);
  std::vector<std::vector<float>> init{std::vector<float>(12, 1.f), std::vector<float>(3, 2.f),
                                       std::vector<float>(5, 3.f)};
  constexpr std::uint64_t steps = 10;
  // Worker k's gradient at step s is a fixed function of (k, s) and the pulled values.
  auto grad = [](std::size_t k, std::uint64_t s, float w) { return 0.5f * w + float(k) - float(s) * 0.1f; };

  // Reference: SGD with the mean of the three workers' gradients.
  auto expected = dsgd::test::mean_gradient_sgd(init, 3, steps, 0.1f, grad);
  auto run = dsgd::test::run_sync_steps(3, plan, init, steps, grad, [&](std::size_t k) {
    return std::make_unique<client::basic_ps_client<T>>(spec, dsgd::cluster::task_id{"worker", int(k)}, client_opts(),
                                                        n.transport());
  });
  for (std::size_t k = 0; k < 3; ++k) BOOST_TEST(run.failures[k].empty(), "worker " << k << ": " << run.failures[k]);
  for (const auto& f : run.finals)
    for (std::size_t v = 0; v < f.size(); ++v)
      BOOST_TEST(f[v] == expected[v], boost::test_tools::tolerance(1e-5f) << boost::test_tools::per_element());
}

// TCP: a real port, held by a stand-in acceptor. Until the ps is up, its address belongs to a stand-in that cuts every
// connection at once (as a ps that is still starting, or restarting, does): connect() must retry. The stand-in gives
// way to the real ps only after it has cut two attempts, so connect() can succeed only through
// its retries, and the test waits on those attempts, not on a sleep.
BOOST_AUTO_TEST_CASE(a_worker_started_before_its_ps_waits_for_it) {
  auto spec = dsgd::test::loopback_cluster(1, 1);
  boost::asio::io_context ctx;
  boost::asio::ip::tcp::acceptor standin(ctx, dsgd::cluster::endpoint_of(spec.address("ps", 0), "ps:0"));
  constexpr int cut_attempts = 2;  // fewer than the 3 failed handshakes connect() takes as a rejection
  int cut = 0;                     // written by `late` only, read after it joined
  std::unique_ptr<running_ps<>> ps;
  std::thread late([&] {
    boost::asio::steady_timer give_up(ctx, 20s);  // the test fails, not hangs, without attempts
    give_up.async_wait([&](boost::system::error_code ec) {
      if (!ec) standin.close();
    });
    std::function<void()> accept_next = [&] {
      standin.async_accept([&](boost::system::error_code ec, boost::asio::ip::tcp::socket s) {
        if (ec) return;
        s.set_option(boost::asio::socket_base::linger(true, 0));  // a reset, and no TIME_WAIT on the port
        s.close();
        if (++cut < cut_attempts) return accept_next();
        standin.close();
        give_up.cancel();
        ps = std::make_unique<running_ps<>>(spec, 0);
      });
    };
    accept_next();
    ctx.run();
  });
  client::ps_client c(spec, {"worker", 0}, client_opts());
  BOOST_CHECK_NO_THROW(c.connect());
  late.join();
  BOOST_TEST(cut == cut_attempts, "connect() succeeded after " << cut << " cut attempts, not through its retries");
  BOOST_TEST(ps != nullptr);
}

// The client's retry loop and its message (inproc refuses a missing address at once, as TCP does).
BOOST_AUTO_TEST_CASE(the_startup_deadline_names_every_missing_ps) {
  net<inproc> n;
  auto spec = n.spec(2, 1);
  auto o = client_opts();
  o.requests.startup_timeout = 250ms;
  client::basic_ps_client<inproc> c(spec, {"worker", 0}, o, n.transport());
  auto start = std::chrono::steady_clock::now();
  BOOST_CHECK_EXCEPTION(c.connect(), dsgd::error, [&](const dsgd::error& e) {
    std::string w = e.what();
    return e.code() == dsgd::errc::peer_unreachable &&
           w.find("ps:0 (" + spec.address("ps", 0).to_string()) != std::string::npos &&
           w.find("ps:1 (") != std::string::npos;
  });
  BOOST_TEST((std::chrono::steady_clock::now() - start < 10s));
}

// The handshake's token check, on both transports (TCP: the real handshake).
BOOST_AUTO_TEST_CASE_TEMPLATE(a_wrong_token_is_rejected_and_the_ps_keeps_serving, T, dsgd::test::both_transports) {
  net<T> n;
  auto spec = n.spec(1, 2);
  running_ps<T> ps(spec, 0, n.transport());
  client::basic_ps_client<T> bad(spec, {"worker", 1}, client_opts("wrong"), n.transport());
  BOOST_CHECK_EXCEPTION(bad.connect(), dsgd::error,
                        [](const dsgd::error& e) { return e.code() == dsgd::errc::handshake_failed; });
  client::basic_ps_client<T> good(spec, {"worker", 0}, client_opts(), n.transport());
  BOOST_CHECK_NO_THROW(good.connect());
}

BOOST_AUTO_TEST_CASE(a_placement_mismatch_is_detected_at_connect_time_naming_both) {
  net<inproc> n;
  auto spec = n.spec(2, 2);
  running_ps<inproc> ps0(spec, 0, n.transport()), ps1(spec, 1, n.transport());
  std::vector<dsgd::placement::variable_info> big_first{{"w", {100}}, {"b", {1}}, {"c", {1}}};
  auto mine = dsgd::placement::round_robin{}.place(big_first, 2);
  auto theirs = dsgd::placement::greedy_by_bytes{}.place(big_first, 2);
  client::basic_ps_client<inproc> a(spec, {"worker", 0}, client_opts(), n.transport()),
      b(spec, {"worker", 1}, client_opts(), n.transport());
  a.connect();
  b.connect();
  a.register_worker(mine, 0, true);
  BOOST_CHECK_EXCEPTION(b.register_worker(theirs, 1, false), dsgd::error, [&](const dsgd::error& e) {
    std::string w = e.what();
    return e.code() == dsgd::errc::placement_mismatch && w.find(mine.describe()) != std::string::npos &&
           w.find(theirs.describe()) != std::string::npos;
  });
}

// The ps's step deadline (worker 1 stays connected but never pushes): server logic, over inproc.
BOOST_AUTO_TEST_CASE(a_dead_worker_in_sync_is_a_named_error_within_the_step_deadline) {
  net<inproc> n;
  auto spec = n.spec(1, 2);
  running_ps<inproc> ps(spec, 0, n.transport(), 200ms);
  auto plan = dsgd::placement::round_robin{}.place({{"w", {2}}}, 1);
  client::basic_ps_client<inproc> a(spec, {"worker", 0}, client_opts(), n.transport()),
      b(spec, {"worker", 1}, client_opts(), n.transport());
  connect_and_register(plan, {&a, &b});
  std::vector<float> w{1.f, 1.f};
  std::vector<std::span<const float>> init{w};
  a.initialize(plan, init);
  a.wait_ready();
  std::vector<std::span<const float>> g{w};
  a.push(plan, 0, g);  // worker 1 never pushes
  std::vector<std::span<float>> dst{w};
  auto start = std::chrono::steady_clock::now();
  BOOST_CHECK_EXCEPTION(a.pull(plan, 1, dst), dsgd::error, [](const dsgd::error& e) {
    return e.code() == dsgd::errc::timed_out && std::string(e.what()).find("worker:1") != std::string::npos;
  });
  BOOST_TEST((std::chrono::steady_clock::now() - start < 10s));
}

namespace {

// A sync step over two ps tasks (a on ps:0, b on ps:1, 20 s step deadlines) that ps:1 cannot
// complete: worker 1 pushes a but never b. Worker 0 pushes both and pulls the next step, which
// waits on ps:1; `held_too` makes ps:0 hold it as well (worker 1 pushes nothing). Then ps task
// `dies` stops. Worker 0's pull cannot complete whatever the other ps does, so it must fail at
// once with that loss, not at the step deadline. (In a job, worker 1 may be waiting for this
// very worker, the chief, to restore the lost ps: waiting for the other would stall the job for
// the deadline; the soak found it, docs/reliability.md.)
void a_ps_lost_while_its_step_is_held(int dies, bool held_too) {
  net<inproc> n;
  auto spec = n.spec(2, 2);
  std::array<std::unique_ptr<running_ps<inproc>>, 2> ps{
      std::make_unique<running_ps<inproc>>(spec, 0, n.transport(), 20s),
      std::make_unique<running_ps<inproc>>(spec, 1, n.transport(), 20s)};
  auto plan = dsgd::placement::round_robin{}.place({{"a", {2}}, {"b", {2}}}, 2);  // a on ps:0, b on ps:1
  client::basic_ps_client<inproc> w0(spec, {"worker", 0}, client_opts(), n.transport()),
      w1(spec, {"worker", 1}, client_opts(), n.transport());
  connect_and_register(plan, {&w0, &w1});
  std::vector<float> va(2, 1.f), vb(2, 1.f);
  std::vector<std::span<const float>> both{va, vb}, only_a{va, {}};
  w0.initialize(plan, both);
  w0.wait_ready();
  w0.push(plan, 0, both);
  if (!held_too) w1.push(plan, 0, only_a);  // ps:0's step 1 is complete, ps:1's is not
  std::vector<std::span<float>> dst{va, vb};
  std::thread loss([&] {
    std::this_thread::sleep_for(300ms);
    ps[dies].reset();  // stops that ps, closing its connections
  });
  const auto start = std::chrono::steady_clock::now();
  BOOST_CHECK_EXCEPTION(w0.pull(plan, 1, dst), dsgd::error, [&](const dsgd::error& e) {
    BOOST_TEST_MESSAGE(e.what());
    return e.code() == dsgd::errc::peer_lost &&
           std::string(e.what()).find("ps:" + std::to_string(dies) + " lost") != std::string::npos;
  });
  const auto took = std::chrono::steady_clock::now() - start;
  loss.join();
  BOOST_TEST((took < 10s), "the pull failed after "
                               << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                               << " ms; the step deadline is 20 s");
}

}  // namespace

// Its part to the lost ps was still pending, but the part before it, to ps:0, waits.
BOOST_AUTO_TEST_CASE(a_ps_lost_during_a_step_fails_it_at_once_while_another_ps_holds_it) {
  a_ps_lost_while_its_step_is_held(1, true);
}

// Its part to the lost ps was answered: the loss fails the wait for the other ps all the same.
BOOST_AUTO_TEST_CASE(a_ps_lost_after_answering_fails_the_step_another_ps_still_holds) {
  a_ps_lost_while_its_step_is_held(0, false);
}

namespace {

// Over the socket (or inproc) a ps applies a push chunk by chunk as it arrives; through shared
// memory (TCP's default between tasks on one host) it applies it whole. Either way no pull sees
// half of one.
template <class T>
void async_pushes_in_many_chunks(bool through_shared_memory) {
  net<T> n;
  auto spec = n.spec(1, 2);
  auto o = quiet_options<async_ps_over<T>>();
  o.connection.shared_memory.enabled = through_shared_memory;
  o.optimizer = {1.f / 1024.f};  // a power of two: every value below is exact
  auto ps_owner = make_ps<async_ps_over<T>>(spec, 0, o, n.transport());
  auto& ps = *ps_owner;
  std::thread serving([&] { ps.join(); });

  constexpr std::size_t elements = 50'000;  // 200 kB: 13 chunks of 16 KiB per push
  constexpr int pushes = 30;
  auto run = dsgd::test::run_async_pushes(2, pushes, elements, [&](std::size_t k) {
    auto co = client_opts();
    co.connection.chunk_bytes = 16 << 10;
    co.connection.shared_memory.enabled = through_shared_memory;
    return std::make_unique<client::basic_ps_client<T>>(spec, dsgd::cluster::task_id{"worker", int(k)}, co,
                                                        n.transport());
  });
  serving.join();
  for (std::size_t k = 0; k < 2; ++k) BOOST_TEST(run.failures[k].empty(), "worker " << k << ": " << run.failures[k]);
  const auto* shard = ps.find(0, 0);
  BOOST_REQUIRE(shard != nullptr);
  BOOST_TEST(shard->step() == 2u * pushes);
  if (through_shared_memory) BOOST_TEST(shard->streamed() == 0u);
  else BOOST_TEST(shard->streamed() > 0u);  // two workers contend, so not every push streams
  const float expected = 1.f - 2.f * pushes / 1024.f;
  BOOST_TEST(std::count(run.final_values.begin(), run.final_values.end(), expected) == std::ptrdiff_t(elements));
}

}  // namespace

// 0: inproc; 1: TCP over the socket; 2: TCP through shared memory.
BOOST_DATA_TEST_CASE(async_pushes_in_many_chunks_are_applied_as_they_arrive_and_never_read_half_applied,
                     boost::unit_test::data::make({0, 1, 2}), how) {
  if (how == 0) async_pushes_in_many_chunks<inproc>(false);
  else async_pushes_in_many_chunks<tcp>(how == 2);
}

BOOST_AUTO_TEST_CASE(a_worker_registering_again_learns_which_pushes_arrived_and_completes_a_partial_one) {
  net<inproc> n;
  auto spec = n.spec(2, 1);
  auto o = quiet_options<async_ps_over<inproc>>();
  o.optimizer = {1.f};
  async_ps_over<inproc> ps0(spec, 0, o, {}, n.transport()), ps1(spec, 1, o, {}, n.transport());
  dsgd::test::serving serving0(ps0), serving1(ps1);
  auto plan = dsgd::placement::round_robin{}.place({{"a", {2}}, {"b", {2}}}, 2);  // a on ps:0, b on ps:1
  std::vector<float> a(2, 0.f), b(2, 0.f), g(2, -1.f);
  {
    client::basic_ps_client<inproc> first(spec, {"worker", 0}, client_opts(), n.transport());
    first.connect();
    first.register_worker(plan, 0, true);
    BOOST_TEST(first.pushes_received() == 0u);
    std::vector<std::span<const float>> init{a, b};
    first.initialize(plan, init);
    std::vector<std::span<const float>> both{g, g}, only_a{g, {}};
    first.push(plan, 0, both, true);
    first.push(plan, 0, only_a, true);  // as if the process died between its two shards

    // A second process of the same task: the ps tasks close the first one's connections and
    // report what arrived.
    client::basic_ps_client<inproc> second(spec, {"worker", 0}, client_opts(), n.transport());
    second.connect();
    second.register_worker(plan, 0, true);
    BOOST_TEST(second.pushes_received() == 1u);  // push 1 reached a only
    BOOST_CHECK_EXCEPTION(first.push(plan, 0, both, true), dsgd::error,
                          [](const dsgd::error& e) { return e.code() == dsgd::errc::peer_lost; });
    second.push(plan, 0, both, true);  // push 1 again: only b lacks it
    second.push(plan, 0, both, true);  // push 2: both
    std::vector<std::span<float>> dst{a, b};
    second.pull(plan, 0, dst);
    BOOST_TEST(a == (std::vector<float>{3.f, 3.f}), boost::test_tools::per_element());
    BOOST_TEST(b == (std::vector<float>{3.f, 3.f}), boost::test_tools::per_element());
    second.register_worker(plan, 0, true);  // again on the same connections: nothing closed
    BOOST_TEST(second.pushes_received() == 3u);
    BOOST_TEST(second.dropped_pushes() == 0u);  // async applies each, and the resent one was skipped
    second.finish();
    second.shutdown_cluster();
  }
  serving0.join();  // the shutdown ends join()
  serving1.join();
  BOOST_CHECK_NO_THROW(serving0.rethrow_failure());
  BOOST_CHECK_NO_THROW(serving1.rethrow_failure());
}

BOOST_AUTO_TEST_CASE(a_chief_that_never_initialises_is_a_named_error_at_the_ready_deadline) {
  net<inproc> n;
  auto spec = n.spec(1, 2);
  auto o = quiet_options<sync_ps_over<inproc>>();
  o.serving.ready_timeout = 200ms;
  sync_ps_over<inproc> ps(spec, 0, o, {}, n.transport());
  dsgd::test::serving serving(ps);
  {
    client::basic_ps_client<inproc> c(spec, {"worker", 1}, client_opts(), n.transport());
    c.connect();
    c.register_worker(dsgd::placement::round_robin{}.place({{"w", {3}}}, 1), 1, false);
    const auto start = std::chrono::steady_clock::now();
    BOOST_CHECK_EXCEPTION(c.wait_ready(), dsgd::error, [](const dsgd::error& e) {
      return e.code() == dsgd::errc::timed_out &&
             std::string(e.what()).find(
                 "variables not initialised before the deadline (0 of 1 shards created; is "
                 "the chief running?)") != std::string::npos;
    });
    BOOST_TEST((std::chrono::steady_clock::now() - start < 10s));
  }
  serving.stop_and_join();
  BOOST_CHECK_NO_THROW(serving.rethrow_failure());
}

// TCP: a raw socket that passes the handshake by hand, and the transport's frame deadline.
BOOST_AUTO_TEST_CASE(a_header_whose_payload_never_follows_is_dropped_at_the_frame_deadline) {
  namespace t = dsgd::transport;
  auto spec = dsgd::test::loopback_cluster(1, 1);
  auto o = quiet_options<sync_ps>();
  o.connection.frame_timeout = 500ms;
  sync_ps ps(spec, 0, o);
  std::thread serving([&] { ps.join(); });
  {
    // A peer that passes the handshake, then sends a header announcing 100 bytes and stops.
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::socket sock(ioc);
    sock.connect(ps.local_endpoint());
    t::handshake hs(t::handshake::role::initiator, "worker:0", "secret");
    boost::asio::write(sock, boost::asio::buffer(hs.hello()));
    t::handshake::hello_bytes peer_hello;
    boost::asio::read(sock, boost::asio::buffer(peer_hello));
    std::string why;
    BOOST_REQUIRE(!hs.receive_hello(peer_hello, why));
    boost::asio::write(sock, boost::asio::buffer(hs.proof()));
    t::handshake::proof_bytes peer_proof;
    boost::asio::read(sock, boost::asio::buffer(peer_proof));
    BOOST_REQUIRE(!hs.verify_proof(peer_proof, why));
    // No shared-memory ring offered; the ps's declined.
    t::detail::ring_offer::bytes_type ps_offer;
    t::detail::ring_answer::bytes_type ps_answer;
    boost::asio::write(sock, boost::asio::buffer(t::detail::ring_offer{}.encode()));
    boost::asio::read(sock, boost::asio::buffer(ps_offer));
    boost::asio::write(sock, boost::asio::buffer(t::detail::ring_answer::encode(false)));
    boost::asio::read(sock, boost::asio::buffer(ps_answer));
    t::frame_header h;
    h.type = static_cast<std::uint16_t>(protocol::message::register_worker);
    h.flags = t::frame_flags::control;
    h.payload_length = h.total_length = 100;
    boost::asio::write(sock, boost::asio::buffer(t::encode(h)));
    const auto sent = std::chrono::steady_clock::now();
    std::array<char, 1> byte;
    boost::system::error_code ec;
    boost::asio::read(sock, boost::asio::buffer(byte), ec);  // returns when the ps closes
    const auto after = std::chrono::steady_clock::now() - sent;
    BOOST_TEST((ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset), ec.message());
    BOOST_TEST((after >= 400ms), "closed before the frame deadline");
    BOOST_TEST((after < 10s));
  }
  client::ps_client good(spec, {"worker", 0}, client_opts());  // the ps still serves
  BOOST_CHECK_NO_THROW(good.connect());
  ps.stop();
  serving.join();
}

// wait_ready goes on only once every ps task answers the same session stamp: while a chief
// re-creating the session has reached some ps tasks and not yet the others (protocol/messages.hpp,
// "Sessions"), it asks again.
BOOST_AUTO_TEST_CASE(wait_ready_asks_again_until_every_ps_task_answers_the_same_session) {
  net<inproc> n;
  auto spec = n.spec(2, 1);
  auto transport = n.transport();
  scripted_ps ps0(transport, 0, 1, {5, 5, 7});  // still the old session twice, then the new
  scripted_ps ps1(transport, 1, 1, {7});
  client::basic_ps_client<inproc> c(spec, {"worker", 0}, client_opts(), n.transport());
  c.connect();
  c.register_worker(dsgd::placement::round_robin{}.place({{"w", {4}}, {"b", {3}}}, 2), 0, false);
  c.wait_ready();
  BOOST_TEST(ps0.wait_readies() == 3u);
  BOOST_TEST(ps1.wait_readies() == 3u);
}

// Sessions that never agree end at the startup deadline, naming each ps task's stamp.
BOOST_AUTO_TEST_CASE(wait_ready_names_each_stamp_when_the_sessions_never_agree) {
  net<inproc> n;
  auto spec = n.spec(2, 1);
  auto transport = n.transport();
  scripted_ps ps0(transport, 0, 1, {5});
  scripted_ps ps1(transport, 1, 1, {7});
  auto o = client_opts();
  o.requests.startup_timeout = 300ms;
  client::basic_ps_client<inproc> c(spec, {"worker", 0}, o, n.transport());
  c.connect();
  c.register_worker(dsgd::placement::round_robin{}.place({{"w", {4}}, {"b", {3}}}, 2), 0, false);
  const auto start = std::chrono::steady_clock::now();
  BOOST_CHECK_EXCEPTION(c.wait_ready(), dsgd::error, [](const dsgd::error& e) {
    BOOST_TEST(e.what() == std::string("worker:0: the ps tasks still hold different sessions at the deadline (ps:0 "
                                       "(ps-0:1) 5, ps:1 (ps-1:1) 7): a chief's restore or initialisation reached "
                                       "only some of them"));
    return e.code() == dsgd::errc::timed_out;
  });
  const auto took = std::chrono::steady_clock::now() - start;
  BOOST_TEST((took >= 300ms && took < 5s));
  BOOST_TEST(ps0.wait_readies() >= 2u);
}

BOOST_AUTO_TEST_CASE(the_chiefs_shutdown_makes_join_return) {
  net<inproc> n;
  auto spec = n.spec(1, 1);
  auto o = quiet_options<sync_ps_over<inproc>>();
  sync_ps_over<inproc> ps(spec, 0, o, {}, n.transport());
  std::atomic<bool> returned{false};
  std::thread serving([&] {
    ps.join();
    returned = true;
  });
  client::basic_ps_client<inproc> c(spec, {"worker", 0}, client_opts(), n.transport());
  c.connect();
  c.register_worker(dsgd::placement::round_robin{}.place({{"w", {1}}}, 1), 0, true);
  c.finish();
  c.shutdown_cluster();
  for (int i = 0; i < 5000 && !returned; ++i) std::this_thread::sleep_for(1ms);
  BOOST_TEST(returned.load());
  serving.join();
}

// Each ps answers the chief's shutdown and then closes its connection, while the chief may still
// wait for another's answer: an expected close, not a loss that fails the shutdown (an operation
// gives up when a connection is lost while it waits: a_ps_lost_while_its_step_is_held). The
// same holds for a worker's finish, which a ps may answer and then shut down (overlap_test's
// runs end so).
BOOST_AUTO_TEST_CASE(the_chiefs_shutdown_of_many_ps_completes_as_each_closes_after_answering) {
  constexpr int tasks = 8;
  for (int rep = 0; rep < 10; ++rep) {
    net<inproc> n;
    auto spec = n.spec(tasks, 1);
    std::vector<std::unique_ptr<running_ps<inproc>>> ps;
    std::vector<dsgd::placement::variable_info> vars;
    for (int i = 0; i < tasks; ++i) {
      ps.push_back(std::make_unique<running_ps<inproc>>(spec, i, n.transport()));
      vars.push_back({"v" + std::to_string(i), {1}});
    }
    client::basic_ps_client<inproc> c(spec, {"worker", 0}, client_opts(), n.transport());
    c.connect();
    c.register_worker(dsgd::placement::round_robin{}.place(vars, tasks), 0, true);
    c.finish();
    BOOST_CHECK_NO_THROW(c.shutdown_cluster());
  }
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
