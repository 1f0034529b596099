// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/train/ps_task.hpp>, and for the role holder dsgd::trainer (<dsgd/trainer.hpp>)
// over it: a ps task serves two workers until the chief shuts it down (over loopback TCP, through
// dsgd::trainer, which runs over TCP only, and over transport::inproc with train::worker); stop()
// ends join() (inproc); it refuses a worker task; a trainer refuses worker calls on a ps task and
// join() on a worker, naming the call and the task (specs of inproc names: nothing is bound).
#include <dsgd/train/ps_task.hpp>
#include <dsgd/train/worker.hpp>
#include <dsgd/trainer.hpp>

#include <support/error_checks.hpp>
#include <support/inproc_cluster.hpp>
#include <support/loopback_cluster.hpp>
#include <support/role_cluster.hpp>
#include <support/run_tasks.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(ps_task_test)

using namespace std::chrono_literals;
using cpu = dsgd::device::cpu;
using ps_task = dsgd::train::ps_task<dsgd::update::sync_average, dsgd::optim::sgd>;
using inproc = dsgd::transport::inproc;
using inproc_ps_task = dsgd::train::ps_task<dsgd::update::sync_average, dsgd::optim::sgd, inproc>;
using trainer = dsgd::trainer<cpu, dsgd::placement::round_robin, dsgd::update::sync_average, dsgd::optim::sgd>;

namespace {

// What worker @p k of two does on @p t (a trainer, or a train::worker): creates w [2, 2] and
// b [3] at 1, takes 3 sync steps, each pushing gradients of k + 1 and pulling, and @returns b.
template <class Worker>
std::vector<float> three_steps(Worker& t, int k) {
  std::vector<dsgd::tensor<cpu>> vars{dsgd::tensor<cpu>(cpu{}, {2, 2}), dsgd::tensor<cpu>(cpu{}, {3})};
  for (auto& v : vars) std::fill_n(v.data(), v.size(), 1.f);
  t.create_variables(vars, {"w", "b"});
  for (int s = 0; s < 3; ++s) {
    std::vector<dsgd::tensor<cpu>> grads{dsgd::tensor<cpu>(cpu{}, {2, 2}), dsgd::tensor<cpu>(cpu{}, {3})};
    for (auto& g : grads) std::fill_n(g.data(), g.size(), float(k + 1));
    t.push(grads);
    t.pull(vars);
  }
  return vars[1].to_host();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(train_ps_task)

// TCP: through dsgd::trainer (TCP only) and the TCP-only local_endpoint().
BOOST_AUTO_TEST_CASE(a_ps_task_serves_two_workers_until_the_chief_shuts_the_cluster_down) {
  const auto spec = dsgd::test::loopback_cluster(1, 2);
  const auto o = dsgd::test::quiet_options();
  ps_task ps(spec, {"ps", 0}, o);
  BOOST_TEST(ps.server() == nullptr);  // nothing bound before serve()
  BOOST_TEST(ps.serve().local_endpoint().port() == spec.address("ps", 0).port);
  std::vector<std::vector<float>> final(2);
  // Boost.Test is not thread-safe: the workers record, the test thread checks.
  std::vector<char> is_ps(2, 1);  // not vector<bool>: each thread writes its own element
  std::vector<std::uint64_t> steps(2, 0);
  std::vector<std::function<void()>> tasks{[&] { ps.join(); }};
  for (int k = 0; k < 2; ++k)
    tasks.push_back([&, k] {
      trainer t(spec, {"worker", k}, o);  // the trainer holds a worker
      is_ps[k] = t.is_ps();
      final[k] = three_steps(t, k);
      steps[k] = t.step();
      t.finish();
    });
  dsgd::test::run_tasks(tasks);
  for (int k = 0; k < 2; ++k) {
    BOOST_TEST(!is_ps[k]);
    BOOST_TEST(steps[k] == 3u);
  }
  // Each step the mean gradient is 1.5 and the learning rate 0.25.
  for (const auto& f : final)
    BOOST_TEST(f == std::vector<float>(3, 1.f - 3 * 0.25f * 1.5f), boost::test_tools::per_element());
  BOOST_TEST_REQUIRE(ps.server() != nullptr);
  BOOST_TEST(ps.server()->find(0, 0) != nullptr);  // its shards stay readable after join()
}

// The same over inproc, with train::worker in place of the trainer.
BOOST_AUTO_TEST_CASE(a_ps_task_over_inproc_serves_two_workers_until_the_chief_shuts_the_cluster_down) {
  const dsgd::test::test_net<inproc> net;
  const auto spec = net.spec(1, 2);
  const auto o = dsgd::test::quiet_options();
  inproc_ps_task ps(spec, {"ps", 0}, o, net.transport());
  BOOST_TEST(ps.server() == nullptr);  // nothing bound before serve()
  BOOST_TEST(ps.serve().local_address().to_string() == spec.address("ps", 0).to_string());
  BOOST_TEST(net.hub->listeners() == 1u);
  std::vector<std::vector<float>> final(2);
  std::vector<std::function<void()>> tasks{[&] { ps.join(); }};
  for (int k = 0; k < 2; ++k)
    tasks.push_back([&, k] {
      dsgd::train::worker<cpu, dsgd::placement::round_robin, dsgd::update::sync_average, inproc> t(
          spec, {"worker", k}, o, cpu{}, net.transport());
      final[k] = three_steps(t, k);
      t.finish();
    });
  dsgd::test::run_tasks(tasks);
  for (const auto& f : final)
    BOOST_TEST(f == std::vector<float>(3, 1.f - 3 * 0.25f * 1.5f), boost::test_tools::per_element());
  BOOST_TEST_REQUIRE(ps.server() != nullptr);
  BOOST_TEST(ps.server()->find(0, 0) != nullptr);
}

// join() serves until stop(), from another thread, ends it: it is still serving 200 ms after it
// started, and returns within 10 s of the stop. (A join() that hangs fails here at the deadline
// and leaves its thread behind, detached, rather than hanging the test.)
BOOST_AUTO_TEST_CASE(stop_ends_join) {
  const dsgd::test::test_net<inproc> net;
  const auto spec = net.spec(1, 1);
  auto ps = std::make_shared<inproc_ps_task>(spec, dsgd::cluster::task_id{"ps", 0}, dsgd::test::quiet_options(),
                                             net.transport());
  ps->stop();  // nothing to stop before serve()
  ps->serve();
  auto joined = std::make_shared<std::promise<void>>();
  auto done = joined->get_future();
  std::thread serving([ps, joined] {
    ps->join();
    joined->set_value();
  });
  BOOST_TEST((done.wait_for(200ms) == std::future_status::timeout), "join() returned before stop()");
  ps->stop();
  const bool ended = done.wait_for(10s) == std::future_status::ready;
  BOOST_TEST(ended, "join() did not return within 10 s of stop()");
  if (ended) serving.join();
  else serving.detach();
}

BOOST_AUTO_TEST_CASE(a_ps_task_refuses_a_worker_task_a_task_the_spec_lacks_and_a_bad_option) {
  const auto spec = dsgd::test::inproc_cluster(1, 1);
  auto o = dsgd::test::quiet_options();
  auto msg = dsgd::test::error_of([&] { ps_task(spec, {"worker", 0}, o); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "worker:0 is not a ps task"));
  msg = dsgd::test::error_of([&] { ps_task(spec, {"ps", 1}, o); }, dsgd::errc::bad_cluster_spec);
  BOOST_TEST(dsgd::test::contains(msg, "ps:1 is not in the cluster spec"));
  auto bad = o;
  bad.serving.step_timeout = 0ms;
  msg = dsgd::test::error_of([&] { ps_task(spec, {"ps", 0}, bad); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "trainer_options.serving.step_timeout"));
  auto p = dsgd::ps_options_of(o);
  p.serving.ready_timeout = 0ms;
  msg = dsgd::test::error_of([&] { ps_task(spec, {"ps", 0}, p); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "ps_options.serving.ready_timeout"));
}

BOOST_AUTO_TEST_CASE(a_trainer_refuses_worker_calls_on_a_ps_task_and_join_on_a_worker_naming_both) {
  const auto spec = dsgd::test::inproc_cluster(1, 1);
  const auto o = dsgd::test::quiet_options();
  trainer ps(spec, {"ps", 0}, o);
  BOOST_TEST(ps.is_ps());
  BOOST_TEST(!ps.is_chief());
  BOOST_TEST(ps.step() == 0u);
  BOOST_TEST(ps.plan().shards().empty());
  BOOST_TEST(ps.replicas() == 1u);
  BOOST_TEST(ps.task().to_string() == "ps:0");
  std::vector<dsgd::tensor<cpu>> vars{dsgd::tensor<cpu>(cpu{}, {2})};
  auto msg = dsgd::test::error_of([&] { ps.pull(vars); }, dsgd::errc::invalid_argument);
  BOOST_TEST(msg == "pull(): ps:0 is not a worker task");
  msg = dsgd::test::error_of([&] { ps.create_variables(vars, {"v"}); }, dsgd::errc::invalid_argument);
  BOOST_TEST(msg == "create_variables(): ps:0 is not a worker task");
  msg = dsgd::test::error_of([&] { ps.push_pull(vars, vars); }, dsgd::errc::invalid_argument);
  BOOST_TEST(msg == "push_pull(): ps:0 is not a worker task");
  msg = dsgd::test::error_of([&] { ps.finish(); }, dsgd::errc::invalid_argument);
  BOOST_TEST(msg == "finish(): ps:0 is not a worker task");
  msg = dsgd::test::error_of([&] { (void)ps.overlapped(vars, vars); }, dsgd::errc::invalid_argument);
  BOOST_TEST(msg == "overlapped(): ps:0 is not a worker task");
  BOOST_TEST(&ps.as_ps() != nullptr);

  trainer w(spec, {"worker", 0}, o);
  BOOST_TEST(!w.is_ps());
  BOOST_TEST(w.is_chief());
  msg = dsgd::test::error_of([&] { w.join(); }, dsgd::errc::invalid_argument);
  BOOST_TEST(msg == "join(): worker:0 is not a ps task");
  msg = dsgd::test::error_of([&] { w.as_ps(); }, dsgd::errc::invalid_argument);
  BOOST_TEST(msg == "as_ps(): worker:0 is not a ps task");
  BOOST_TEST(w.as_worker().replica() == 0u);
  trainer moved(std::move(w));  // a role holder moves like the trainer did
  BOOST_TEST(moved.is_chief());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
