// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Case 3 of the article: several machines. Every process runs this same program; TF_CONFIG
// (set by dsgd-launch, a Kubernetes training operator, or by hand) tells it which task it is.
//
//   worker:0 ─┐                     ┌─ ps:0  (w, ... in creation order, round-robin)
//   worker:1 ─┼── push gradients ──►│
//   worker:2 ─┘◄── pull values ─────┴─ ps:1
//
// --demo: the article literally. w (2x2, all 2) and b (2x2, all 5) live on the ps;
//         worker:0 computes w + b, worker:1 w * b, worker:2 w / b.
//   dsgd-launch --ps 1 --workers 3 -- ./03_cluster --demo
//
// default: the Fashion-MNIST MLP 784-256-128-10, data-parallel over the workers, variables on
//          the ps tasks; the chief prints progress and the test accuracy.
//   dsgd-launch --ps 2 --workers 2 -- ./03_cluster --rule sync --epochs 12
//
// Options: --rule sync|async|ssp (bounded staleness 2), --model mlp|softmax, --epochs N,
//          --batch N, --lr X, --momentum X, --decay X (rate multiplier per epoch),
//          --target ACC (exit 1 if the chief ends below it).
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/model/mlp.hpp>
#include <dsgd/model/softmax_regression.hpp>
#include <dsgd/model/train.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/placement/greedy_by_bytes.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/tensor/ops.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/sync_average.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

namespace {

using cpu = dsgd::device::cpu;

struct settings {
  bool demo = false;
  std::string rule = "sync";
  std::string model = "mlp";
  std::size_t epochs = 12;
  std::size_t batch = 64;
  float lr = 0.05f;
  float momentum = 0.9f;
  float decay = 0.7f;  // learning rate multiplier per epoch
  double target = 0;
};

std::string token() {
  const char* t = std::getenv("DSGD_CLUSTER_TOKEN");
  return t ? t : "dsgd-example-token";
}

// The article's case 3: each worker computes one op on the ps-held w and b.
int run_demo() {
  using trainer = dsgd::trainer<cpu, dsgd::placement::round_robin, dsgd::update::async>;
  auto t = trainer::from_environment({.token = token()});
  if (t.is_ps()) {
    t.join();
    return 0;
  }
  std::vector<dsgd::tensor<cpu>> vars;
  vars.emplace_back(cpu{}, dsgd::shape{2, 2}, dsgd::init::constant{2.f});  // w
  vars.emplace_back(cpu{}, dsgd::shape{2, 2}, dsgd::init::constant{5.f});  // b
  t.create_variables(vars, {"w", "b"});
  const auto& w = vars[0];
  const auto& b = vars[1];
  std::fflush(stdout);
  switch (t.replica() % 3) {
    case 0: std::printf("w + b =\n%s\n", dsgd::to_string(w + b).c_str()); break;
    case 1: std::printf("w * b =\n%s\n", dsgd::to_string(w * b).c_str()); break;
    default: std::printf("w / b =\n%s\n", dsgd::to_string(w / b).c_str()); break;
  }
  std::fflush(stdout);
  t.finish();
  return 0;
}

template <class Model, class Rule>
int train(const settings& s) {
  using optimizer = dsgd::optim::exponential_decay<dsgd::optim::momentum>;
  using trainer = dsgd::trainer<cpu, dsgd::placement::greedy_by_bytes, Rule, optimizer>;
  auto role = dsgd::cluster::resolve_from_environment();
  // The ps decays the rate once per epoch: an epoch is one step per batch of a worker under
  // sync, and one applied gradient per batch of every worker otherwise.
  const std::size_t replicas = dsgd::server::replicas::count(role.cluster);
  const std::size_t shard = (dsgd::data::fashion_mnist::train_images.count + replicas - 1) / replicas;
  const std::size_t batches_per_epoch = (shard + s.batch - 1) / s.batch;
  const bool sync = std::is_same_v<Rule, dsgd::update::sync_average>;
  typename trainer::options o;
  o.token = token();
  o.optimizer = {{s.lr, s.momentum, false}, s.decay, sync ? batches_per_epoch : batches_per_epoch * replicas, true};
  trainer t(role.cluster, role.task, o);
  if (t.is_ps()) {
    t.join();
    return 0;
  }
  const auto train_set = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::train);
  const auto test_set = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::test);
  Model net(cpu{});
  t.create_variables(net.parameters(), net.names());
  dsgd::model::shuffled_batches batches(
      train_set, {.batch = s.batch, .seed = 1000 + t.replica(), .shard = t.replica(), .shards = t.replicas()});
  std::size_t dropped = 0;
  double accuracy = 0;
  for (std::size_t epoch = 1; epoch <= s.epochs; ++epoch) {
    auto stats = batches.run_epoch([&](const dsgd::model::batch_view& b) {
      float loss = net.forward_backward(b.images, b.labels, b.size);
      dropped += t.push(net.gradients());
      t.pull(net.parameters());
      return loss;
    });
    if (t.is_chief()) {
      accuracy = net.accuracy(test_set);
      std::printf("epoch %2zu  step %6llu  loss %.4f  %7.0f examples/s (this worker)  test accuracy %.4f\n", epoch,
                  static_cast<unsigned long long>(t.step()), stats.mean_loss, stats.examples_per_second(), accuracy);
    } else {
      std::printf("epoch %2zu  loss %.4f  %7.0f examples/s\n", epoch, stats.mean_loss, stats.examples_per_second());
    }
    std::fflush(stdout);
  }
  t.finish();
  if (!t.is_chief()) return 0;
  std::printf("final test accuracy %.4f (%s, %zu workers, %zu ps, %zu gradients dropped as stale)\n", accuracy,
              s.rule.c_str(), t.replicas(), t.cluster().num_tasks("ps"), dropped);
  return accuracy >= s.target ? 0 : 1;
}

template <class Model>
int train_with_rule(const settings& s) {
  if (s.rule == "sync") return train<Model, dsgd::update::sync_average>(s);
  if (s.rule == "async") return train<Model, dsgd::update::async>(s);
  if (s.rule == "ssp") return train<Model, dsgd::update::bounded_staleness<2>>(s);
  throw dsgd::error(dsgd::errc::invalid_argument, "--rule " + s.rule + ": expected sync, async or ssp");
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw dsgd::error(dsgd::errc::invalid_argument, a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--demo") s.demo = true;
      else if (a == "--rule") s.rule = value();
      else if (a == "--model") s.model = value();
      else if (a == "--epochs") s.epochs = std::stoul(value());
      else if (a == "--batch") s.batch = std::stoul(value());
      else if (a == "--lr") s.lr = std::stof(value());
      else if (a == "--momentum") s.momentum = std::stof(value());
      else if (a == "--decay") s.decay = std::stof(value());
      else if (a == "--target") s.target = std::stod(value());
      else throw dsgd::error(dsgd::errc::invalid_argument, "unknown option " + a);
    } catch (const std::logic_error&) {
      std::fprintf(stderr, "03_cluster: bad value for %s\n", a.c_str());
      return 2;
    } catch (const dsgd::error& e) {
      std::fprintf(stderr, "03_cluster: %s\n", e.what());
      return 2;
    }
  }
  try {
    if (s.demo) return run_demo();
    if (s.model == "mlp") return train_with_rule<dsgd::model::mlp<cpu>>(s);
    if (s.model == "softmax") return train_with_rule<dsgd::model::softmax_regression<cpu>>(s);
    std::fprintf(stderr, "03_cluster: --model %s: expected mlp or softmax\n", s.model.c_str());
    return 2;
  } catch (const dsgd::error& e) {
    std::fprintf(stderr, "03_cluster: %s\n", e.what());
    return 1;
  }
}
