// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Bringing your own model, written with Eigen: softmax regression on Fashion-MNIST whose
// parameters and gradients are the user's own Eigen::MatrixXf and VectorXf (eigen_softmax.hpp),
// trained by worker processes, the parameters placed on the ps tasks by dsgd. The matrices are
// dsgd variables through <dsgd/adapt/eigen.hpp>: a push reads dw and db where backward() left
// them, a pull writes the next values into w and b; nothing is copied (docs/models.md).
//
//   dsgd-launch --ps 1 --workers 2 -- ./05_eigen_model --rule sync --target 0.83
//
// Options (on Boost.Program_options; --help lists them): --rule sync|async, --epochs N, --batch
//          N (per worker), --lr X, --momentum X (momentum SGD on the ps), --decay X (learning
//          rate multiplier per epoch), --target ACC (the chief exits 1 below it).
// Every task reads its role from TF_CONFIG (dsgd-launch sets it); the chief prints the test
// accuracy after each pass. Usage errors exit 2, naming the option.
#include "eigen_softmax.hpp"

#include <dsgd/cluster/token.hpp>
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>

#include <Eigen/Core>
#include <boost/program_options.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

namespace fm = dsgd::data::fashion_mnist;
using eigen_example::row_major;
using eigen_example::softmax_regression;

struct settings {
  std::string rule = "sync";
  std::size_t epochs = 4;
  std::size_t batch = 64;
  float lr = 0.03f;
  float momentum = 0.9f;
  float decay = 0.5f;
  double target = 0;
};

struct usage_error {
  std::string what;
};

namespace po = boost::program_options;

// The command line, on Boost.Program_options; @returns nothing after --help (the usage printed).
std::optional<settings> parse(int argc, char** argv) {
  settings s;
  // A number of at least @p low into @p field, read as a double as "--epochs 4" or "--lr 0.03".
  auto number = [](const char* name, const char* value_name, double low, auto& field) {
    return po::value<double>()->value_name(value_name)->notifier([name, low, &field](double x) {
      if (!(x >= low))
        throw usage_error{std::string("--") + name + " " + (std::ostringstream() << x).str() +
                          ": expected a number >= " + (std::ostringstream() << low).str()};
      field = static_cast<std::remove_reference_t<decltype(field)>>(x);
    });
  };
  po::options_description d(
      "usage: 05_eigen_model [options]; run every task of a cluster with it:\n"
      "  dsgd-launch --ps 1 --workers 2 -- ./05_eigen_model\noptions");
  auto add = d.add_options();
  add("rule", po::value(&s.rule)->value_name("R"), "sync | async [sync]");
  add("epochs", number("epochs", "N", 1, s.epochs), "passes over the training set, split over the workers [4]");
  add("batch", number("batch", "N", 1, s.batch), "examples per worker and step [64]");
  add("lr", number("lr", "X", 0, s.lr), "learning rate [0.03]");
  add("momentum", number("momentum", "X", 0, s.momentum), "momentum SGD on the ps [0.9]");
  add("decay", number("decay", "X", 0, s.decay), "learning rate multiplier per epoch [0.5]");
  add("target", number("target", "ACC", 0, s.target), "the chief exits 1 below this test accuracy [0]");
  add("help,h", "this text");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, d), vm);
    if (vm.count("help")) {
      std::cout << d;
      return std::nullopt;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw usage_error{e.what()};
  }
  if (s.rule != "sync" && s.rule != "async") throw usage_error{"--rule " + s.rule + ": expected sync or async"};
  return s;
}

template <class Rule>
int train(const settings& s) {
  using optimizer = dsgd::optim::exponential_decay<dsgd::optim::momentum>;
  using trainer = dsgd::trainer<dsgd::device::cpu, dsgd::placement::round_robin, Rule, optimizer>;
  typename trainer::options o;
  o.connection.token = dsgd::cluster::token_from_environment(
      [](std::string_view m) { std::fprintf(stderr, "%.*s\n", static_cast<int>(m.size()), m.data()); });
  // An epoch is one pass over the training set: a global step under sync (a batch of every
  // worker), a push under async; the learning rate decays by s.decay each epoch.
  const auto role = dsgd::cluster::resolve_from_environment();
  const std::size_t replicas = dsgd::cluster::replicas::count(role.cluster);
  const std::size_t batches = fm::train_images.count / replicas / s.batch;
  const std::uint64_t steps_per_epoch = std::is_same_v<Rule, dsgd::update::sync_average> ? batches : batches * replicas;
  o.optimizer = {.base = {.learning_rate = s.lr, .momentum = s.momentum},
                 .decay_rate = s.decay,
                 .decay_steps = steps_per_epoch,
                 .staircase = true};
  trainer t(role.cluster, role.task, o);
  if (t.is_ps()) {
    t.join();
    return 0;
  }
  Eigen::setNbThreads(1);  // one compute thread per task: the tasks share the host's cores
  const auto train_set = fm::load(fm::split::train), test_set = fm::load(fm::split::test);
  softmax_regression model;
  const auto vars = model.views();  // w, b and their gradients, in the model's own matrices
  t.create_variables(vars);         // the chief's values initialise the ps tasks; the others pull them
  // This worker's share of the training set, in a seeded order each pass.
  std::vector<std::size_t> mine;
  for (std::size_t i = t.replica(); i < train_set.size(); i += t.replicas()) mine.push_back(i);
  std::mt19937_64 rng(17 + t.replica());
  row_major x(Eigen::Index(s.batch), Eigen::Index(train_set.features()));
  std::vector<int> y(s.batch);
  double accuracy = 0;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t e = 1; e <= s.epochs; ++e) {
    std::shuffle(mine.begin(), mine.end(), rng);
    double loss = 0;
    for (std::size_t b = 0; b < batches; ++b) {
      softmax_regression::gather(train_set, mine, b * s.batch, x, y);
      loss += model.backward(x, y, 1.f);
      t.push_pull(vars);  // dw and db out, the next w and b into the matrices
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (t.is_chief()) {
      accuracy = model.accuracy(test_set);
      std::printf("epoch %zu  %6.1f s  step %6llu  loss %.4f  test accuracy %.4f\n", e, seconds,
                  static_cast<unsigned long long>(t.step()), loss / double(batches), accuracy);
    } else {
      std::printf("pass %zu over its shard  %6.1f s  loss %.4f\n", e, seconds, loss / double(batches));
    }
    std::fflush(stdout);
  }
  t.finish();
  if (!t.is_chief()) return 0;
  std::printf("final test accuracy %.4f (%s, %zu workers, %zu ps, %llu global steps)\n", accuracy, s.rule.c_str(),
              t.replicas(), t.cluster().num_tasks("ps"), static_cast<unsigned long long>(t.step()));
  return accuracy >= s.target ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<settings> s;
  try {
    s = parse(argc, argv);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "05_eigen_model: %s (05_eigen_model --help lists the options)\n", e.what.c_str());
    return 2;
  }
  if (!s) return 0;
  try {
    return s->rule == "sync" ? train<dsgd::update::sync_average>(*s) : train<dsgd::update::async>(*s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "05_eigen_model: %s\n", e.what());
    return 1;
  }
}
