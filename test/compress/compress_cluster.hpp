// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support for the compression tests: a model trained on real Fashion-MNIST by one
// train::ps_task and two train::worker threads over transport::inproc (the frames of a real
// cluster, through the ps's shard_table) or over loopback TCP, every push encoded as a
// compress::selection says and every dense pull as another; what the run ended with, and how
// many bytes its pushes sent.
#pragma once

#include <dsgd/compress/selection.hpp>
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/model/train.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/train/ps_task.hpp>
#include <dsgd/train/trainer_options.hpp>
#include <dsgd/train/worker.hpp>
#include <dsgd/transport/asio_tcp.hpp>
#include <dsgd/transport/inproc.hpp>
#include <dsgd/update/sync_average.hpp>

#include <support/fashion_mnist_sets.hpp>
#include <support/inproc_cluster.hpp>
#include <support/run_tasks.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace dsgd::test {

// How a run trains: momentum 0.9 at a learning rate decaying by `decay` every epoch.
struct compress_schedule {
  std::size_t epochs = 1;
  float learning_rate = 0.05f;
  float decay = 0.7f;
  std::size_t batch = 64;
};

// The chief's evaluation at the end of one epoch: wall time since the run started, the bytes
// both workers' pushes had sent by then (twice the chief's: every encoding's payload of a shard
// has one size, and both workers push the same variables as often), and the test accuracy.
struct compress_epoch {
  std::size_t epoch = 0;
  double seconds = 0;
  std::uint64_t pushed_bytes = 0;
  double accuracy = 0;
};

// What a run ended with.
struct compress_outcome {
  double accuracy = 0;                 // the chief's final values on the 10,000 test images
  std::uint64_t pushed_bytes = 0;      // both workers' push payloads
  std::uint64_t pushes = 0;            // both workers' push_pull() calls
  double seconds = 0;                  // of the whole run
  std::vector<compress_epoch> epochs;  // the chief's, one per epoch
  double bytes_per_push() const { return pushes ? double(pushed_bytes) / double(pushes) : 0.0; }
};

// Trains the model @p make_model() makes (a model::feed_forward) on one ps task and two workers
// under rule @p Rule over transport @p T, each worker s.epochs passes over its half of the
// training set with push_pull, every push encoded as @p compression says (the ps decodes with
// the same) and every pull's values as @p pulls says.
template <class Rule, class T = transport::inproc, class MakeModel>
compress_outcome train_compressed(const compress::selection& compression, const compress::selection& pulls,
                                  const compress_schedule& s, MakeModel make_model) {
  using namespace std::chrono_literals;
  using optimizer = optim::exponential_decay<optim::momentum>;
  using worker_type = train::worker<device::cpu, placement::round_robin, Rule, T>;
  constexpr bool sync = std::is_same_v<Rule, update::sync_average>;
  const auto& train_set = fashion_train();
  const auto& test_set = fashion_test();
  // An epoch of the schedule in updates: sync applies the mean of both workers' batches once.
  const std::size_t batches_per_worker = (train_set.size() / 2 + s.batch - 1) / s.batch;
  const std::size_t updates_per_epoch = sync ? batches_per_worker : 2 * batches_per_worker;
  trainer_options<placement::round_robin, Rule, optimizer> o;
  o.connection.token = "secret";
  if (!std::getenv("DSGD_TEST_LOG")) o.connection.log = [](std::string_view) {};
  o.serving.step_timeout = 120s;
  o.serving.ready_timeout = 120s;
  o.requests.startup_timeout = 60s;
  o.optimizer = {{s.learning_rate, 0.9f, false}, s.decay, updates_per_epoch, true};
  o.compression = compression;
  o.pull_compression = pulls;
  const test_net<T> net;
  const auto spec = net.spec(1, 2);
  compress_outcome out;
  std::vector<std::uint64_t> bytes(2), pushes(2);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::function<void()>> tasks;
  tasks.push_back([&] { train::ps_task<Rule, optimizer, T>(spec, {"ps", 0}, o, net.transport()).join(); });
  for (std::size_t k = 0; k < 2; ++k)
    tasks.push_back([&, k] {
      worker_type w(spec, {"worker", int(k)}, o, device::cpu{}, net.transport());
      auto m = make_model();
      w.create_variables(m.parameters(), m.names());
      model::shuffled_batches batches(train_set, {.batch = s.batch, .seed = 10 + k, .shard = k, .shards = 2});
      for (std::size_t e = 0; e < s.epochs; ++e) {
        const auto stats = batches.run_epoch([&](const model::batch_view& b) {
          const float loss = m.forward_backward(b.images, b.labels, b.size);
          w.push_pull(m.gradients(), m.parameters());
          ++pushes[k];
          return loss;
        });
        if (w.is_chief()) {
          const double accuracy = m.accuracy(test_set);
          out.epochs.push_back({e + 1, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                                2 * w.pushed_bytes(), accuracy});
          std::printf("  epoch %zu: %.1f s, mean loss %.4f, test accuracy %.4f\n", e + 1, stats.seconds,
                      stats.mean_loss, accuracy);
          std::fflush(stdout);
        }
      }
      bytes[k] = w.pushed_bytes();
      if (w.is_chief()) out.accuracy = m.accuracy(test_set);
      w.finish();
    });
  run_tasks(tasks);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.pushed_bytes = bytes[0] + bytes[1];
  out.pushes = pushes[0] + pushes[1];
  return out;
}

}  // namespace dsgd::test
