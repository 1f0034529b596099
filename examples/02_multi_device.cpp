// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Case 2 of the article: one machine, several devices. The parameters and their update live on
// the CPU; each replica (a thread on the CPU, or one per GPU) computes the gradient of its own
// batch; the holder averages the replicas' gradients and applies them once per step.
//
//   replica 0 (cpu thread | cuda:0) ─┐  push gradient   ┌──────────────────────────────┐
//   replica 1 (cpu thread | cuda:1) ─┼─────────────────►│ holder on the CPU:           │
//   ...                              │◄─────────────────┤ mean of N gradients, momentum│
//                                    └  pull values     └──────────────────────────────┘
//
// The holder is update::sync_average, the same rule a ps task runs, here in-process.
//
// Run:      ./02_multi_device --model mlp --replicas 2 --epochs 12
//           ./02_multi_device_cuda --devices cuda          (CUDA build: one replica per GPU)
//           ./02_multi_device_cuda --devices cuda --replicas 4   (4 replicas over the GPUs in turn)
// Expected: progress per epoch, then "final test accuracy 0.88.." (MLP) and exit 0 when the
//           accuracy reaches --target.
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/model/blas.hpp>
#include <dsgd/model/mlp.hpp>
#include <dsgd/model/softmax_regression.hpp>
#include <dsgd/model/train.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/update/sync_average.hpp>
#if DSGD_HAS_CUDA
#include <dsgd/device/cuda.cuh>
#include <dsgd/model/cublas.cuh>
#endif

#include <boost/program_options.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using cpu = dsgd::device::cpu;
using optimizer = dsgd::optim::exponential_decay<dsgd::optim::momentum>;
using holder_shard = dsgd::update::sync_average::shard<cpu, optimizer>;

struct settings {
  std::string model = "mlp";
  std::string devices = "cpu";
  std::size_t replicas = 2;  // cpu: threads; cuda: replicas over the GPUs (given, else one per GPU)
  bool replicas_given = false;
  std::size_t epochs = 12;
  std::size_t batch = 64;
  float lr = 0.05f;
  float momentum = 0.9f;
  float decay = 0.7f;  // learning rate multiplier per epoch
  double target = 0;
};

// One replica's view of the holder: pulls values into its model and pushes its gradients.
template <class Model>
class replica_link {
 public:
  replica_link(std::vector<std::unique_ptr<holder_shard>>& holder, std::size_t index)
      : holder_(holder), index_(index) {}

  void pull(Model& net, std::uint64_t step) {
    auto deadline = dsgd::update::clock_type::now() + std::chrono::minutes(10);
    auto& params = net.parameters();
    for (std::size_t v = 0; v < params.size(); ++v) {
      if constexpr (Model::device_type::is_host) {
        holder_[v]->pull(index_, step, params[v].data(), deadline);  // straight into the model
      } else {
        staging_.resize(params[v].size());
        holder_[v]->pull(index_, step, staging_.data(), deadline);
        params[v].assign(staging_);
      }
    }
  }

  void push(Model& net, std::uint64_t step) {
    auto& grads = net.gradients();
    for (std::size_t v = 0; v < grads.size(); ++v) {
      if constexpr (Model::device_type::is_host) {
        holder_[v]->push(index_, step, grads[v].data());
      } else {
        staging_ = grads[v].to_host();
        holder_[v]->push(index_, step, staging_.data());
      }
    }
  }

 private:
  std::vector<std::unique_ptr<holder_shard>>& holder_;
  std::size_t index_;
  std::vector<float> staging_;
};

template <class Model, dsgd::Device D>
int train(const settings& s, const std::vector<D>& devices) {
  const auto train_set = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::train);
  const auto test_set = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::test);
  const std::size_t n = devices.size();

  // Replicas start identical (same seed); the holder starts from replica 0's values.
  std::vector<std::unique_ptr<Model>> nets;
  for (const auto& d : devices) nets.push_back(std::make_unique<Model>(d));
  // The rate decays once per epoch: one step per batch of a replica.
  const std::size_t batches = (train_set.size() / n + s.batch - 1) / s.batch;
  const optimizer opt{{s.lr, s.momentum, false}, s.decay, batches, true};
  std::vector<std::unique_ptr<holder_shard>> holder;
  for (const auto& p : nets[0]->parameters()) {
    auto values = p.to_host();
    holder.push_back(std::make_unique<holder_shard>(cpu{}, values, opt, n));
  }
  std::printf("%s on %zu replica(s) (%s), batch %zu per replica, momentum SGD lr %.3g\n", s.model.c_str(), n,
              devices[0].name().c_str(), s.batch, static_cast<double>(s.lr));

  // Replica threads share the cores: each gets its share of the BLAS threads.
  dsgd::model::set_blas_threads(std::max<int>(1, static_cast<int>(std::thread::hardware_concurrency() / n)));

  double accuracy = 0;
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      replica_link<Model> link(holder, r);
      Model& net = *nets[r];
      dsgd::model::shuffled_batches batches(train_set, {.batch = s.batch, .seed = 100 + r, .shard = r, .shards = n});
      std::uint64_t step = 0;
      link.pull(net, step);
      for (std::size_t epoch = 1; epoch <= s.epochs; ++epoch) {
        auto stats = batches.run_epoch([&](const dsgd::model::batch_view& b) {
          float loss = net.forward_backward(b.images, b.labels, b.size);
          link.push(net, step);
          link.pull(net, ++step);
          return loss;
        });
        if (r == 0) {
          accuracy = net.accuracy(test_set);
          std::printf("epoch %2zu  step %6llu  loss %.4f  %8.0f examples/s  test accuracy %.4f\n", epoch,
                      static_cast<unsigned long long>(step), stats.mean_loss,
                      stats.examples_per_second() * static_cast<double>(n), accuracy);
          std::fflush(stdout);
        }
      }
      for (auto& h : holder) h->finish(r);
    });
  }
  for (auto& t : threads) t.join();
  std::printf("final test accuracy %.4f\n", accuracy);
  return accuracy >= s.target ? 0 : 1;
}

// The model chosen at run time, for the device chosen at run time: Model::on<D>.
struct mlp_model {
  template <dsgd::Device D>
  using on = dsgd::model::mlp<D>;
};
struct softmax_model {
  template <dsgd::Device D>
  using on = dsgd::model::softmax_regression<D>;
};

template <class Model>
int train_on(const settings& s) {
  if (s.devices == "cpu") return train<typename Model::template on<cpu>>(s, std::vector<cpu>(s.replicas));
#if DSGD_HAS_CUDA
  if (s.devices == "cuda") {
    const int count = dsgd::device::cuda::count();
    if (count == 0) throw dsgd::error(dsgd::errc::device_unavailable, "--devices cuda: no CUDA device found");
    // One replica per GPU, or --replicas of them over the GPUs in turn, each on a stream of its
    // own so that replicas sharing a GPU run at once.
    const std::size_t replicas = s.replicas_given ? s.replicas : std::size_t(count);
    std::vector<dsgd::device::cuda> gpus;
    for (std::size_t r = 0; r < replicas; ++r) gpus.push_back(dsgd::device::cuda::with_new_stream(int(r % count)));
    return train<typename Model::template on<dsgd::device::cuda>>(s, gpus);
  }
#endif
  throw dsgd::error(dsgd::errc::device_unavailable, "--devices " + s.devices + ": expected cpu" +
                                                        (DSGD_HAS_CUDA ? " or cuda" : " (this build has no CUDA)"));
}

namespace po = boost::program_options;

// The command line, on Boost.Program_options; @returns false after --help (the usage printed).
bool parse(settings& s, int argc, char** argv) {
  po::options_description d("usage: 02_multi_device [options]\noptions");
  auto add = d.add_options();
  add("model", po::value(&s.model)->value_name("M"), "mlp | softmax [mlp]");
  add("devices", po::value(&s.devices)->value_name("D"), "cpu | cuda (a CUDA build: the GPUs in turn) [cpu]");
  add("replicas", po::value(&s.replicas)->value_name("N"),
      "replicas: cpu threads, or over the GPUs [2; cuda: one per GPU]");
  add("epochs", po::value(&s.epochs)->value_name("N"), "passes over the training set [12]");
  add("batch", po::value(&s.batch)->value_name("N"), "examples per replica and step [64]");
  add("lr", po::value(&s.lr)->value_name("X"), "learning rate [0.05]");
  add("momentum", po::value(&s.momentum)->value_name("X"), "momentum [0.9]");
  add("decay", po::value(&s.decay)->value_name("X"), "learning rate multiplier per epoch [0.7]");
  add("target", po::value(&s.target)->value_name("ACC"), "exit 1 below this test accuracy [0]");
  add("help,h", "this text");
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, d), vm);
  if (vm.count("help")) {
    std::cout << d;
    return false;
  }
  po::notify(vm);
  s.replicas_given = vm.count("replicas") > 0;
  if (s.replicas == 0) throw dsgd::error(dsgd::errc::invalid_argument, "--replicas must be at least 1");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  try {
    if (!parse(s, argc, argv)) return 0;
    if (s.model == "mlp") return train_on<mlp_model>(s);
    if (s.model == "softmax") return train_on<softmax_model>(s);
    throw dsgd::error(dsgd::errc::invalid_argument, "--model " + s.model + ": expected mlp or softmax");
  } catch (const po::error& e) {
    std::fprintf(stderr, "02_multi_device: %s\n", e.what());
    return 2;
  } catch (const dsgd::error& e) {
    std::fprintf(stderr, "02_multi_device: %s\n", e.what());
    return 2;
  }
}
