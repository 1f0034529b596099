// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Case 3 of the article: several machines. Every process runs this same program; TF_CONFIG
// (set by dsgd-launch, a Kubernetes training operator, or by hand) tells it which task it is:
// a ps task holds variables and applies the gradients pushed to it, a worker computes them.
//
//   worker:0 ─┐                     ┌─ ps:0  (w, ... in creation order, round-robin)
//   worker:1 ─┼── push gradients ──►│
//   worker:2 ─┘◄── pull values ─────┴─ ps:1
//
// --demo: the article literally. w (2x2, all 2) and b (2x2, all 5) live on the ps;
//         worker:0 computes w + b, worker:1 w * b, worker:2 w / b.
//   dsgd-launch --ps 1 --workers 3 -- ./03_cluster --demo
// Expected: "[worker:0] w + b =" then "[[7. 7.]", "[worker:1] [[10. 10.]", "[worker:2] [[0.4 0.4]".
//
// default: softmax regression on Fashion-MNIST, data-parallel: each worker pushes the gradient
//          of a batch of its shard and pulls the values of the next step; the chief prints the
//          test accuracy after each pass.
//   dsgd-launch --ps 1 --workers 2 -- ./03_cluster --rule sync --epochs 3 --target 0.80
// Expected: "final test accuracy 0.8..." from the chief, and exit status 0.
//
// The project's training job, with checkpoints, recovery, summaries, compression and the MLP,
// is the same loop grown up: tools/train/ (dsgd-train --help).
#include <dsgd/cluster/token.hpp>
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/model/softmax_regression.hpp>
#include <dsgd/model/train.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/tensor/ops.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>

#include <boost/program_options.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace {

namespace po = boost::program_options;
using cpu = dsgd::device::cpu;

// The cluster's secret: DSGD_CLUSTER_TOKEN (dsgd-launch draws one), with no default.
std::string token() {
  return dsgd::cluster::token_from_environment(
      [](std::string_view m) { std::fprintf(stderr, "%.*s\n", static_cast<int>(m.size()), m.data()); });
}

// The article's case 3: each worker computes one op on the ps-held w and b.
int run_demo() {
  using trainer = dsgd::trainer<cpu, dsgd::placement::round_robin, dsgd::update::async>;
  auto t = trainer::from_environment({.connection = {.token = token()}});
  if (t.is_ps()) return t.join(), 0;
  std::vector<dsgd::tensor<cpu>> vars;
  vars.emplace_back(cpu{}, dsgd::shape{2, 2}, dsgd::init::constant{2.f});  // w
  vars.emplace_back(cpu{}, dsgd::shape{2, 2}, dsgd::init::constant{5.f});  // b
  t.create_variables(vars, {"w", "b"});                                    // the chief's values win
  const auto &w = vars[0], &b = vars[1];
  switch (t.replica() % 3) {
    case 0:
      std::printf("w + b =\n%s\n", dsgd::to_string(w + b).c_str());
      break;
    case 1:
      std::printf("w * b =\n%s\n", dsgd::to_string(w * b).c_str());
      break;
    default:
      std::printf("w / b =\n%s\n", dsgd::to_string(w / b).c_str());
      break;
  }
  std::fflush(stdout);
  t.finish();
  return 0;
}

struct settings {
  std::size_t epochs = 3;
  std::size_t batch = 64;
  float lr = 0.05f;
  double target = 0;
};

// Plain data-parallel training: every worker runs --epochs passes over its shard, each step one
// push of its gradients and one pull of the next values.
template <class Rule>
int train(const settings& s) {
  using trainer = dsgd::trainer<cpu, dsgd::placement::round_robin, Rule, dsgd::optim::momentum>;
  auto t = trainer::from_environment({.connection = {.token = token()}, .optimizer = {s.lr, 0.9f}});
  if (t.is_ps()) return t.join(), 0;
  dsgd::model::softmax_regression<cpu> net(cpu{});
  t.create_variables(net.parameters(), net.names());  // the chief initialises, the others pull
  namespace fm = dsgd::data::fashion_mnist;
  const auto train_set = fm::load(fm::split::train), test_set = fm::load(fm::split::test);
  dsgd::model::shuffled_batches batches(
      train_set, {.batch = s.batch, .seed = 1000 + t.replica(), .shard = t.replica(), .shards = t.replicas()});
  double accuracy = 0;
  for (std::size_t epoch = 1; epoch <= s.epochs; ++epoch) {
    const auto stats = batches.run_epoch([&](const dsgd::model::batch_view& b) {
      const float loss = net.forward_backward(b.images, b.labels, b.size);
      t.push_pull(net.gradients(), net.parameters());
      return loss;
    });
    if (t.is_chief()) accuracy = net.accuracy(test_set);
    std::printf("pass %zu  step %6llu  loss %.4f  %7.0f examples/s", epoch, static_cast<unsigned long long>(t.step()),
                stats.mean_loss, stats.examples_per_second());
    if (t.is_chief()) std::printf("  test accuracy %.4f", accuracy);
    std::printf("\n");
    std::fflush(stdout);
  }
  t.finish();  // the chief then shuts the cluster down
  if (!t.is_chief()) return 0;
  std::printf("final test accuracy %.4f\n", accuracy);
  return accuracy >= s.target ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  std::string rule = "sync";
  po::options_description options("03_cluster [--demo] [options]; every task of the cluster runs it");
  auto add = options.add_options();
  add("demo", "the article's case 3: w + b, w * b, w / b on ps-held variables");
  add("rule", po::value(&rule)->value_name("R"), "sync | async [sync]");
  add("epochs", po::value(&s.epochs)->value_name("N"), "passes over the training set [3]");
  add("batch", po::value(&s.batch)->value_name("N"), "examples per worker and step [64]");
  add("lr", po::value(&s.lr)->value_name("X"), "learning rate of momentum SGD on the ps [0.05]");
  add("target", po::value(&s.target)->value_name("ACC"), "exit 1 if the chief ends below this accuracy [0]");
  add("help,h", "this text");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    if (vm.count("help")) return std::cout << options, 0;
    po::notify(vm);
    if (rule != "sync" && rule != "async") throw po::error("--rule " + rule + ": expected sync or async");
    if (s.epochs < 1 || s.batch < 1 || !(s.lr > 0)) throw po::error("--epochs, --batch and --lr must be above 0");
  } catch (const po::error& e) {
    std::cerr << "03_cluster: " << e.what() << "\n" << options;
    return 2;
  }
  try {
    if (vm.count("demo")) return run_demo();
    return rule == "sync" ? train<dsgd::update::sync_average>(s) : train<dsgd::update::async>(s);
  } catch (const dsgd::error& e) {
    std::cerr << "03_cluster: " << e.what() << "\n";
    return 1;
  }
}
