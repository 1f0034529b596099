// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Conformance of dsgd::Transport: the shipped models satisfy it; a user's transport written from
// the concept alone, with none of the optional capabilities, trains: counted_transport wraps
// the transport it is given (a proxy that counts every frame it carries, as a user's metering or
// tracing layer would) and is all the ps tasks and workers talk over. near_miss_transport.cpp,
// a transport that cannot connect, must fail to compile naming the concept.
#include "user_policy_cluster.hpp"

#include <dsgd/collective/ring.hpp>
#include <dsgd/collective/sharded_update.hpp>
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/model/softmax_regression.hpp>
#include <dsgd/model/train.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/transport/asio_tcp_policy.hpp>
#include <dsgd/transport/concepts.hpp>
#include <dsgd/transport/inproc.hpp>
#include <dsgd/update/sync_average.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/test/unit_test.hpp>

#include <support/inproc_cluster.hpp>
#include <support/run_tasks.hpp>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(conformance_transport_test)

namespace {

// How many messages went out and frames came in, over every connection of a counted transport.
struct frame_counts {
  std::atomic<std::size_t> sent{0};
  std::atomic<std::size_t> received{0};
};

// A connection of Inner's transport, counting what it carries.
template <class Inner>
class counted_connection {
 public:
  counted_connection(std::shared_ptr<Inner> inner, std::shared_ptr<frame_counts> counts)
      : inner_(std::move(inner)), counts_(std::move(counts)) {}

  auto get_executor() const { return inner_->get_executor(); }
  std::string peer_identity() const { return inner_->peer_identity(); }
  bool is_open() const { return inner_->is_open(); }
  std::string close_reason() const { return inner_->close_reason(); }
  void close() { inner_->close(); }
  template <class Buffers, class Token>
  auto async_send(const dsgd::transport::frame_header& h, const Buffers& payload, Token&& token) {
    ++counts_->sent;
    return inner_->async_send(h, payload, std::forward<Token>(token));
  }
  template <class Sink, class Token>
  auto async_receive(Sink sink, Token&& token) {
    return inner_->async_receive(
        [sink = std::move(sink), counts = counts_](const dsgd::transport::frame_header& h,
                                                   dsgd::error_code& ec) mutable {
          ++counts->received;
          return sink(h, ec);
        },
        std::forward<Token>(token));
  }

 private:
  std::shared_ptr<Inner> inner_;
  std::shared_ptr<frame_counts> counts_;
};

// A listener of Inner's transport handing over counted connections.
template <class InnerListener, class InnerConnection>
class counted_listener {
 public:
  using connection = counted_connection<InnerConnection>;
  counted_listener(std::shared_ptr<InnerListener> inner, std::shared_ptr<frame_counts> counts)
      : inner_(std::move(inner)), counts_(std::move(counts)) {}
  template <class F>
  void start(F on_connection) {
    inner_->start([on_connection = std::move(on_connection), counts = counts_](std::shared_ptr<InnerConnection> c) {
      on_connection(std::make_shared<connection>(std::move(c), counts));
    });
  }
  void close() { inner_->close(); }
  const InnerListener& inner() const { return *inner_; }

 private:
  std::shared_ptr<InnerListener> inner_;
  std::shared_ptr<frame_counts> counts_;
};

// The user's transport: whatever Transport it wraps, counted.
template <dsgd::Transport Inner>
class counted_transport {
 public:
  using connection_type = counted_connection<typename Inner::connection_type>;
  using listener_type = counted_listener<typename Inner::listener_type, typename Inner::connection_type>;
  using options_type = typename Inner::options_type;

  counted_transport(Inner inner, std::shared_ptr<frame_counts> counts)
      : inner_(std::move(inner)), counts_(std::move(counts)) {}

  std::shared_ptr<listener_type> listen(boost::asio::any_io_executor ex, const dsgd::cluster::task_address& at,
                                        options_type options) const {
    return std::make_shared<listener_type>(inner_.listen(std::move(ex), at, std::move(options)), counts_);
  }
  static dsgd::cluster::task_address local_address(const listener_type& l) { return Inner::local_address(l.inner()); }
  template <class Token>
  auto async_connect(boost::asio::any_io_executor ex, const dsgd::cluster::task_address& to, options_type options,
                     Token&& token) const {
    using signature = void(dsgd::error_code, std::shared_ptr<connection_type>);
    return boost::asio::async_initiate<Token, signature>(
        [inner = inner_, counts = counts_](auto handler, boost::asio::any_io_executor ex,
                                           dsgd::cluster::task_address to, options_type options) {
          inner.async_connect(ex, to, std::move(options),
                              [handler = std::move(handler), counts](
                                  dsgd::error_code ec, std::shared_ptr<typename Inner::connection_type> c) mutable {
                                std::move(handler)(ec, c ? std::make_shared<connection_type>(std::move(c), counts)
                                                         : std::shared_ptr<connection_type>());
                              });
        },
        token, std::move(ex), to, std::move(options));
  }

 private:
  Inner inner_;
  std::shared_ptr<frame_counts> counts_;
};

namespace t = dsgd::transport;
using user_transport = counted_transport<t::inproc>;

}  // namespace

// The shipped models and the user's; the user's has no optional capability it did not declare.
static_assert(dsgd::Transport<t::asio_tcp> && dsgd::Transport<t::inproc>);
static_assert(dsgd::Transport<user_transport> && dsgd::Transport<counted_transport<t::asio_tcp>>);
static_assert(!t::binds_elsewhere<user_transport> && !t::serves_threads<user_transport> &&
              !t::shares_memory<user_transport::connection_type>);

BOOST_AUTO_TEST_CASE(a_user_transport_carries_a_whole_training_run) {
  using P = dsgd::placement::round_robin;
  using U = dsgd::update::sync_average;
  using O = dsgd::test::decaying_momentum;
  auto counts = std::make_shared<frame_counts>();
  const auto o = dsgd::test::user_policy_options<P, U>(dsgd::test::decaying_momentum_over(469));
  const auto r = dsgd::test::train_softmax<dsgd::device::cpu, P, U, O, user_transport>(
      o, 2, {}, {}, [&](t::inproc inner) { return user_transport(std::move(inner), counts); });
  BOOST_TEST(r.accuracy >= 0.80);
  // Every step is a push and a pull of both variables, one per ps task, from each worker: the
  // user's transport carried them all, each way.
  const std::size_t steps = r.pushes[0] + r.pushes[1];
  BOOST_TEST(counts->sent.load() >= 2 * steps);
  BOOST_TEST(counts->received.load() >= 2 * steps);
}

// The collective rule needs of a transport only the concept too: two replicas in a ring over the
// user's transport train softmax regression for an epoch, each applying the update to its half.
BOOST_AUTO_TEST_CASE(a_user_transport_carries_the_collective_rule) {
  auto counts = std::make_shared<frame_counts>();
  auto hub = t::inproc_hub::create();
  const auto members = dsgd::collective::ring_members(dsgd::test::inproc_cluster(0, 2));
  const auto train_set = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::train);
  const auto test_set = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::test);
  double accuracy = 0;
  std::vector<std::size_t> steps(2);
  std::vector<std::function<void()>> tasks;
  for (std::size_t k = 0; k < 2; ++k)
    tasks.push_back([&, k] {
      dsgd::collective::ring<user_transport> ring(members, k, {.token = "conformance"}, {},
                                                  user_transport(t::inproc{hub}, counts));
      ring.connect();
      dsgd::model::softmax_regression<dsgd::device::cpu> m(dsgd::device::cpu{}, {.seed = 1});
      auto vars = dsgd::views(m.parameters(), m.gradients(), m.names());
      dsgd::collective::sharded_update<dsgd::test::decaying_momentum, user_transport> update(
          ring, dsgd::test::decaying_momentum_over(469), vars);
      update.broadcast_values(vars);
      dsgd::model::shuffled_batches batches(train_set, {.batch = 64, .seed = 10 + k, .shard = k, .shards = 2});
      batches.run_epoch([&](const dsgd::model::batch_view& b) {
        const float loss = m.forward_backward(b.images, b.labels, b.size);
        update.step(vars, steps[k]++);
        return loss;
      });
      if (k == 0) accuracy = m.accuracy(test_set);
    });
  dsgd::test::run_tasks(tasks);
  BOOST_TEST_MESSAGE(steps[0] << " steps, test accuracy " << accuracy);
  BOOST_TEST(accuracy >= 0.80);
  BOOST_TEST(steps[0] == steps[1]);
  // Each step is a reduce-scatter and an all-gather, a message each way per replica.
  BOOST_TEST(counts->sent.load() >= 4 * steps[0]);
  BOOST_TEST(counts->received.load() >= 4 * steps[0]);
}

BOOST_AUTO_TEST_SUITE_END()
