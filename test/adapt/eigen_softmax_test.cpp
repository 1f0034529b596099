// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// A model written with Eigen trains through dsgd: softmax regression on real Fashion-MNIST
// (Debian's dataset-fashion-mnist) whose forward and backward passes are Eigen expressions on
// the user's own Eigen::MatrixXf and VectorXf, viewed by <dsgd/adapt/eigen.hpp>, across a ps task
// (momentum SGD, sync) and two workers over transport::inproc, each on its half of the training
// set, to the test accuracy of model/softmax_regression (0.83; published logistic regression
// baselines are around 0.84). Both workers end with the same values, pulled into their matrices.
#include <eigen_softmax.hpp>  // examples/: the model, shared with 05_eigen_model

#include <dsgd/adapt/eigen.hpp>
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/train/ps_task.hpp>
#include <dsgd/train/worker.hpp>

#include <support/inproc_cluster.hpp>
#include <support/role_cluster.hpp>

#include <Eigen/Core>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <string_view>
#include <vector>

BOOST_AUTO_TEST_SUITE(adapt_eigen_softmax_test)

namespace fm = dsgd::data::fashion_mnist;

namespace {

using eigen_example::row_major;
using eigen_example::softmax_regression;

using options = dsgd::trainer_options<dsgd::placement::round_robin, dsgd::update::sync_average, dsgd::optim::momentum>;

options quiet() {
  using namespace std::chrono_literals;
  options o;
  o.connection.token = "secret";
  o.connection.log = [](std::string_view) {};
  o.optimizer = {.learning_rate = 0.03f, .momentum = 0.9f};
  o.serving.step_timeout = 60s;
  o.serving.ready_timeout = 60s;
  o.requests.startup_timeout = 30s;
  return o;
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_eigen_softmax_regression_trains_across_a_ps_and_two_workers_to_0_83) {
  const auto train = fm::load(fm::split::train), test = fm::load(fm::split::test);
  const std::size_t batch = 64, epochs = 4, workers = 2;
  // The learning rate halves every epoch, by scaling the gradients (the ps runs plain momentum
  // SGD, whose update is linear in them), as model/softmax_regression's accuracy test decays it.
  const float decay = 0.5f;
  Eigen::setNbThreads(1);  // one compute thread per worker: they share the cores
  const dsgd::test::test_net<dsgd::transport::inproc> net;
  const auto spec = net.spec(1, workers);
  const auto o = quiet();
  std::vector<std::vector<double>> accuracy(workers);
  double untrained = 1;
  std::vector<softmax_regression> models(workers);
  dsgd::test::run_with_ps<dsgd::update::sync_average, dsgd::optim::momentum>(net, spec, o, workers, [&](std::size_t k) {
    dsgd::train::worker<dsgd::device::cpu, dsgd::placement::round_robin, dsgd::update::sync_average,
                        dsgd::transport::inproc>
        w(spec, {"worker", int(k)}, o, {}, net.transport());
    auto& model = models[k];
    const auto vars = model.views();
    w.create_variables(vars);
    if (k == 0) untrained = model.accuracy(test);
    // This worker's half of the training set, in a seeded order each epoch.
    std::vector<std::size_t> mine;
    for (std::size_t i = k; i < train.size(); i += workers) mine.push_back(i);
    std::mt19937_64 rng(17 + k);
    row_major x(Eigen::Index(batch), Eigen::Index(train.features()));
    std::vector<int> y(batch);
    const auto start = std::chrono::steady_clock::now();
    float scale = 1.f;
    for (std::size_t e = 0; e < epochs; ++e, scale *= decay) {
      std::shuffle(mine.begin(), mine.end(), rng);
      for (std::size_t first = 0; first + batch <= mine.size(); first += batch) {
        softmax_regression::gather(train, mine, first, x, y);
        model.backward(x, y, scale);
        w.push_pull(vars);  // the gradients leave dw and db, the new values land in w and b
      }
      accuracy[k].push_back(model.accuracy(test));
      if (k == 0)
        std::printf(
            "epoch %zu  step %llu  %.2f s  test accuracy %.4f\n", e + 1, static_cast<unsigned long long>(w.step()),
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), accuracy[k].back());
    }
    w.finish();
  });
  BOOST_TEST(untrained < 0.3);  // chance before training
  for (std::size_t k = 0; k < workers; ++k) BOOST_TEST(accuracy[k].back() >= 0.83);
  BOOST_TEST(accuracy[0] == accuracy[1], boost::test_tools::per_element());  // sync: the same values
  BOOST_TEST((models[0].w.array() == models[1].w.array()).all());
}

BOOST_AUTO_TEST_SUITE_END()
