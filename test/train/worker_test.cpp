// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/train/worker.hpp>: workers of a ps task over transport::inproc train a few steps,
// on the host (tensors exchanged in place) and off it (one staging buffer, allocated once), to
// the same bits; a worker refuses a ps task and names a bad option.
#include <dsgd/device/cpu.hpp>
#include <dsgd/train/worker.hpp>
#include <dsgd/update/async.hpp>

#include <support/error_checks.hpp>
#include <support/inproc_cluster.hpp>
#include <support/off_host_device.hpp>
#include <support/role_cluster.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <vector>

BOOST_AUTO_TEST_SUITE(worker_test)

using namespace std::chrono_literals;
using cpu = dsgd::device::cpu;
using off_host = dsgd::test::off_host;
using dsgd::test::exchange;

BOOST_AUTO_TEST_SUITE(train_worker)

// Sync averages the same two gradients in either order to the same bits: push then pull,
// push_pull and the overlap, on the host or through the staging buffer, all end alike.
BOOST_AUTO_TEST_CASE(workers_on_and_off_the_host_train_to_the_same_bits_through_one_staging_buffer) {
  const std::size_t steps = 6;
  const auto host = dsgd::test::train_roles<cpu>(exchange::push_then_pull, steps);
  BOOST_TEST_REQUIRE(host.size() == 2u);
  for (const auto& r : host) {
    BOOST_TEST(r.step == steps);
    BOOST_TEST(r.allocations == 0u);  // no staging on the host
    BOOST_TEST(r.values == host[0].values);
  }
  BOOST_TEST(host[0].values[0][1] != 0.1f);  // it trained
  for (auto how : {exchange::push_then_pull, exchange::push_pull, exchange::mixed}) {
    BOOST_TEST_CONTEXT("exchange " << int(how)) {
      const auto off = dsgd::test::train_roles<off_host>(how, steps);
      for (const auto& r : off) {
        BOOST_TEST(r.step == steps);
        BOOST_TEST(r.dropped == 0u);
        BOOST_TEST(r.allocations == 1u);  // allocated once, at create_variables()
        BOOST_TEST(r.buffer_stable);
        BOOST_TEST_REQUIRE(r.values.size() == 2u);
        for (std::size_t v = 0; v < 2; ++v)
          BOOST_TEST(r.values[v] == host[0].values[v], boost::test_tools::per_element());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(async_workers_off_the_host_apply_every_push) {
  const std::size_t steps = 4;
  const auto off = dsgd::test::train_roles<off_host, dsgd::update::async>(exchange::mixed, steps);
  for (const auto& r : off) {
    BOOST_TEST(r.step >= steps);
    BOOST_TEST(r.step <= 2 * steps);
    BOOST_TEST(r.allocations == 1u);
    BOOST_TEST(r.buffer_stable);
  }
}

BOOST_AUTO_TEST_CASE(a_worker_refuses_a_ps_task_a_task_the_spec_lacks_and_a_bad_option) {
  using worker = dsgd::train::worker<cpu>;
  const auto spec = dsgd::test::inproc_cluster(1, 1);
  const auto o = dsgd::test::quiet_options();
  auto msg = dsgd::test::error_of([&] { worker(spec, {"ps", 0}, o); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "ps:0 is a ps task, not a worker"));
  msg = dsgd::test::error_of([&] { worker(spec, {"worker", 3}, o); }, dsgd::errc::bad_cluster_spec);
  BOOST_TEST(dsgd::test::contains(msg, "worker:3 is not in the cluster spec"));
  auto bad = o;
  bad.requests.startup_timeout = 0ms;
  msg = dsgd::test::error_of([&] { worker(spec, {"worker", 0}, bad); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "trainer_options.requests.startup_timeout"));
  dsgd::client::client_options c{o.connection, {.request_timeout = 0ms}};
  msg = dsgd::test::error_of([&] { worker(spec, {"worker", 0}, c); }, dsgd::errc::invalid_argument);
  BOOST_TEST(dsgd::test::contains(msg, "client_options.requests.request_timeout"));
}

BOOST_AUTO_TEST_CASE(a_worker_knows_its_replica_and_derives_its_request_deadline_from_the_ps_deadlines) {
  const auto spec = dsgd::test::inproc_cluster(1, 2);
  auto o = dsgd::test::quiet_options();
  dsgd::train::worker<cpu> w0(spec, {"worker", 0}, o), w1(spec, {"worker", 1}, o);
  BOOST_TEST(w0.is_chief());
  BOOST_TEST(!w1.is_chief());
  BOOST_TEST(w1.replica() == 1u);
  BOOST_TEST(w1.replicas() == 2u);
  BOOST_TEST(w0.step() == 0u);
  o.serving.ready_timeout = 50s;
  BOOST_TEST(dsgd::client_options_of(o).requests.request_timeout == 80s);
  w0.set_sparse(1);
  BOOST_TEST(w0.is_sparse(1));
  BOOST_TEST(!w0.is_sparse(0));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
