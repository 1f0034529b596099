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
// Options: --rule sync|async, --epochs N (passes over the training set, split over the
//          workers) [4], --batch N (per worker) [64], --lr X [0.03], --momentum X (momentum SGD
//          on the ps) [0.9], --decay X (learning rate multiplier per epoch) [0.5],
//          --target ACC (the chief exits 1 below it), --help.
// Every task reads its role from TF_CONFIG (dsgd-launch sets it); the chief prints the test
// accuracy after each pass. Usage errors exit 2, naming the option.
#include "eigen_softmax.hpp"

#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>

#include <Eigen/Core>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
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

const char* usage =
    "usage: 05_eigen_model [--rule sync|async] [--epochs N] [--batch N] [--lr X] [--momentum X]\n"
    "                      [--decay X] [--target ACC]\n"
    "  run every task of a cluster with it: dsgd-launch --ps 1 --workers 2 -- ./05_eigen_model\n";

struct usage_error {
  std::string what;
};

settings parse(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) throw usage_error{a + ": needs a value"};
    const std::string v = argv[++i];
    auto number = [&](double low) {
      errno = 0;
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || errno != 0 || !(x >= low))
        throw usage_error{a + " " + v + ": expected a number >= " + std::to_string(low)};
      return x;
    };
    if (a == "--rule") {
      if (v != "sync" && v != "async") throw usage_error{"--rule " + v + ": expected sync or async"};
      s.rule = v;
    } else if (a == "--epochs") {
      s.epochs = static_cast<std::size_t>(number(1));
    } else if (a == "--batch") {
      s.batch = static_cast<std::size_t>(number(1));
    } else if (a == "--lr") {
      s.lr = static_cast<float>(number(0));
    } else if (a == "--momentum") {
      s.momentum = static_cast<float>(number(0));
    } else if (a == "--decay") {
      s.decay = static_cast<float>(number(0));
    } else if (a == "--target") {
      s.target = number(0);
    } else {
      throw usage_error{a + ": unknown option"};
    }
  }
  return s;
}

template <class Rule>
int train(const settings& s) {
  using optimizer = dsgd::optim::exponential_decay<dsgd::optim::momentum>;
  using trainer = dsgd::trainer<dsgd::device::cpu, dsgd::placement::round_robin, Rule, optimizer>;
  typename trainer::options o;
  const char* token = std::getenv("DSGD_CLUSTER_TOKEN");
  o.connection.token = token ? token : "dsgd-example-token";
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
  settings s;
  try {
    s = parse(argc, argv);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "05_eigen_model: %s\n%s", e.what.c_str(), usage);
    return 2;
  }
  try {
    return s.rule == "sync" ? train<dsgd::update::sync_average>(s) : train<dsgd::update::async>(s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "05_eigen_model: %s\n", e.what());
    return 1;
  }
}
