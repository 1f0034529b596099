// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Single-replica training on real Fashion-MNIST for the accuracy tests: mini-batches of 64 in a
// seeded shuffled order, momentum SGD whose learning rate decays by a factor every epoch, test
// accuracy after every epoch, and the check that a model reaches its accuracy target.
#pragma once

#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/model/feed_forward.hpp>
#include <dsgd/model/train.hpp>
#include <dsgd/optim/momentum.hpp>

#include <support/fashion_mnist_sets.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace dsgd::test {

/// Hyper-parameters of one training run.
struct schedule {
  float learning_rate = 0.05f;  ///< of the first epoch
  float decay = 1.f;            ///< learning rate factor applied after every epoch
  float momentum = 0.9f;
  bool nesterov = false;
  std::size_t batch = 64;
  std::size_t epochs = 1;
  std::uint64_t seed = 1;  ///< of the shuffling order
};

/// Trains @p net for @p s.epochs epochs on @p train, printing a line per epoch; @returns the
/// test accuracy after each epoch.
template <class D>
std::vector<double> train_and_evaluate(model::feed_forward<D>& net, const data::fashion_mnist::dataset& train,
                                       const data::fashion_mnist::dataset& test, const schedule& s) {
  optim::momentum opt{s.learning_rate, s.momentum, s.nesterov};
  std::vector<optim::momentum::state<D>> states;
  for (auto& p : net.parameters()) states.emplace_back(net.device(), p.size());
  model::shuffled_batches batches(train, {.batch = s.batch, .seed = s.seed});
  std::vector<double> accuracy;
  for (std::size_t e = 0; e < s.epochs; ++e) {
    const auto stats = batches.run_epoch([&](const model::batch_view& b) {
      const float loss = net.forward_backward(b.images, b.labels, b.size);
      for (std::size_t i = 0; i < states.size(); ++i)
        opt.apply(net.device(), states[i], net.parameters()[i].data(), net.gradients()[i].data(),
                  net.parameters()[i].size());
      return loss;
    });
    accuracy.push_back(net.accuracy(test));
    std::printf("epoch %2zu  lr %.4f  loss %.4f  %6.0f examples/s  %5.2f s  test accuracy %.4f\n", stats.epoch,
                static_cast<double>(opt.learning_rate), stats.mean_loss, stats.examples_per_second(), stats.seconds,
                accuracy.back());
    std::fflush(stdout);
    opt.learning_rate *= s.decay;
  }
  return accuracy;
}

/// Checks that @p net, untrained (near chance on the test split), trains to a test accuracy of
/// at least @p target by the last epoch of @p s; prints the epoch it first reached it.
template <class D>
void expect_trained_to(model::feed_forward<D>& net, const schedule& s, double target) {
  const auto& train = fashion_train();
  const auto& test = fashion_test();
  BOOST_TEST(net.accuracy(test) < 0.3);  // an untrained model is near chance
  const auto accuracy = train_and_evaluate(net, train, test, s);
  const auto first = std::find_if(accuracy.begin(), accuracy.end(), [&](double a) { return a >= target; });
  std::printf("%.2f first reached after epoch %td\n", target, first - accuracy.begin() + 1);
  BOOST_TEST(accuracy.back() >= target);
}

}  // namespace dsgd::test
