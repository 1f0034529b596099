// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support: clusters whose tasks are threads of this test over one transport::inproc hub
// (no sockets, so no port races), the same over loopback TCP for cases that should hold for
// both (test_net<T>), and serving<Ps>: a ps's join() on a thread, stopped and joined at scope end.
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/transport/asio_tcp_policy.hpp>
#include <dsgd/transport/inproc.hpp>

#include <support/loopback_cluster.hpp>

#include <boost/mpl/list.hpp>

#include <cstddef>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dsgd::test {

// @p ps ps tasks and @p workers worker tasks whose addresses only name them on an inproc hub
// ("ps-0:1", "worker-1:1"): nothing is resolved or bound outside the hub.
inline cluster::cluster_spec inproc_cluster(std::size_t ps, std::size_t workers) {
  std::map<std::string, std::vector<std::string>> jobs;
  for (std::size_t i = 0; i < ps; ++i) jobs["ps"].push_back("ps-" + std::to_string(i) + ":1");
  for (std::size_t i = 0; i < workers; ++i) jobs["worker"].push_back("worker-" + std::to_string(i) + ":1");
  return cluster::cluster_spec(jobs);
}

// A cluster's network for a test over transport @p T: spec() names its tasks, transport() is
// the value every task is given.
template <class T>
struct test_net;

template <>
struct test_net<transport::inproc> {
  std::shared_ptr<transport::inproc_hub> hub = transport::inproc_hub::create();
  cluster::cluster_spec spec(std::size_t ps, std::size_t workers) const { return inproc_cluster(ps, workers); }
  transport::inproc transport() const { return transport::inproc{hub}; }
};

template <>
struct test_net<transport::asio_tcp> {
  cluster::cluster_spec spec(std::size_t ps, std::size_t workers) const { return loopback_cluster(ps, workers); }
  transport::asio_tcp transport() const { return {}; }
};

// The transports a case that should hold for both runs over (BOOST_AUTO_TEST_CASE_TEMPLATE).
using both_transports = boost::mpl::list<transport::inproc, transport::asio_tcp>;

// Runs @p ps.join() on a thread of its own; at scope end stops it (if still serving) and joins
// it. join()'s exception, if any, is kept for rethrow_failure().
template <class Ps>
class serving {
 public:
  explicit serving(Ps& ps)
      : ps_(&ps), thread_([this] {
          try {
            ps_->join();
          } catch (...) {
            failure_ = std::current_exception();
          }
        }) {}
  serving(const serving&) = delete;
  serving& operator=(const serving&) = delete;
  ~serving() { stop_and_join(); }

  // Waits for join() to return by itself (the chief shut the cluster down).
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  // Stops the ps and waits for join() to return.
  void stop_and_join() {
    if (!thread_.joinable()) return;
    ps_->stop();
    thread_.join();
  }
  // Rethrows what join() threw (after join() or stop_and_join()).
  void rethrow_failure() const {
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  Ps* ps_;
  std::exception_ptr failure_;
  std::thread thread_;  // last: it starts once the rest is set
};

}  // namespace dsgd::test
