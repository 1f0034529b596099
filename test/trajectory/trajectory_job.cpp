// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Same model, same start, same result: dsgd sync with 1 ps and 2 workers (threads of this
// process over loopback TCP) starts the MLP from PyTorch's initial parameters and takes the
// batches in PyTorch's order (worker k the k-th half of each step's batch), then checks that
// its trajectory is PyTorch's (torch_reference.py wrote DIR): every step's loss (the mean of the
// two halves' losses) within 1e-4 relative of PyTorch's, and every parameter after the last step
// within 1e-4 of PyTorch's, relative to the largest magnitude of its variable.
//
//   trajectory_job DIR [--steps 50] [--hidden 1024,1024] [--batch 128] [--lr 0.05] [--momentum 0.9]
//                      [--rule sync|allreduce]
//
// --rule allreduce: no ps; the two workers average among themselves (collective::ring and
// collective::sharded_update over loopback TCP), each updating its half of the variables.
//
// Prints the worst differences; exits 0 when within the bounds, 1 when not (or on an error), 2
// on a bad command line.
#include <dsgd/collective/ring.hpp>
#include <dsgd/collective/sharded_update.hpp>
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/model/mlp.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/placement/greedy_by_bytes.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/sync_average.hpp>

#include <support/loopback_cluster.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using cpu = dsgd::device::cpu;
using trainer_type =
    dsgd::trainer<cpu, dsgd::placement::greedy_by_bytes, dsgd::update::sync_average, dsgd::optim::momentum>;

struct settings {
  std::string dir;
  std::size_t steps = 50;
  std::vector<std::size_t> hidden{1024, 1024};
  std::size_t batch = 128;  // both workers together
  float lr = 0.05f;
  float momentum = 0.9f;
  std::string rule = "sync";  // or allreduce: the workers among themselves, no ps
};

template <class T>
std::vector<T> read_all(const std::string& path, std::size_t count) {
  std::ifstream in(path, std::ios::binary);
  std::vector<T> out(count);
  if (!in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(count * sizeof(T))) ||
      in.peek() != std::char_traits<char>::eof())
    throw std::runtime_error(path + ": expected exactly " + std::to_string(count * sizeof(T)) + " bytes");
  return out;
}

// Splits the flat file of all parameters into one vector per variable of @p net.
std::vector<std::vector<float>> split(const std::vector<float>& flat, const dsgd::model::mlp<cpu>& net) {
  std::vector<std::vector<float>> out;
  std::size_t at = 0;
  for (const auto& p : net.parameters()) {
    out.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(at),
                     flat.begin() + static_cast<std::ptrdiff_t>(at + p.size()));
    at += p.size();
  }
  return out;
}

std::size_t parameter_count(const dsgd::model::mlp<cpu>& net) {
  std::size_t n = 0;
  for (const auto& p : net.parameters()) n += p.size();
  return n;
}

int run(const settings& s) {
  const auto train = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::train);
  const dsgd::model::mlp<cpu> shape_of(cpu{}, {.hidden = s.hidden});
  const std::size_t n = parameter_count(shape_of);
  const auto init = split(read_all<float>(s.dir + "/init.bin", n), shape_of);
  const auto final_torch = split(read_all<float>(s.dir + "/final.bin", n), shape_of);
  const auto order = read_all<std::int32_t>(s.dir + "/order.bin", s.steps * s.batch);
  const auto losses_torch = read_all<float>(s.dir + "/losses.bin", s.steps);

  const bool allreduce = s.rule == "allreduce";
  auto spec = dsgd::test::loopback_cluster(allreduce ? 0 : 1, 2);
  trainer_type::options o;
  o.connection.token = "trajectory";
  o.optimizer = dsgd::optim::momentum{s.lr, s.momentum, false};
  o.connection.log = [](std::string_view) {};
  std::vector<std::vector<float>> losses(2, std::vector<float>(s.steps));
  std::vector<std::vector<float>> final_dsgd;
  std::exception_ptr failure;
  std::mutex m;
  auto guarded = [&](auto f) {
    return [&, f] {
      try {
        f();
      } catch (...) {
        std::lock_guard lock(m);
        if (!failure) failure = std::current_exception();
      }
    };
  };
  std::thread ps;
  if (!allreduce)
    ps = std::thread(guarded([&] {
      trainer_type t(spec, {"ps", 0}, o);
      t.join();
    }));
  std::vector<std::thread> workers;
  const std::size_t half = s.batch / 2;
  for (int k = 0; k < 2; ++k)
    workers.emplace_back(guarded([&, k] {
      dsgd::model::mlp<cpu> net(cpu{}, {.hidden = s.hidden});
      for (std::size_t v = 0; v < init.size(); ++v) net.parameters()[v].assign(init[v]);
      // Sync: the trainer pushes and pulls through the ps. Allreduce: a ring of the two workers,
      // each applying momentum to its half of the averaged gradient.
      std::optional<trainer_type> t;
      std::optional<dsgd::collective::ring<>> ring;
      std::optional<dsgd::collective::sharded_update<dsgd::optim::momentum>> update;
      auto vars = dsgd::views(net.parameters(), net.gradients(), net.names());
      if (allreduce) {
        ring.emplace(dsgd::collective::ring_members(spec), std::size_t(k), o.connection);
        ring->connect();
        update.emplace(*ring, o.optimizer, vars);
        update->broadcast_values(vars);
      } else {
        t.emplace(spec, dsgd::cluster::task_id{"worker", k}, o);
        t->create_variables(net.parameters(), net.names());
      }
      std::vector<float> images(half * 784);
      std::vector<std::int32_t> labels(half);
      for (std::size_t step = 0; step < s.steps; ++step) {
        for (std::size_t i = 0; i < half; ++i) {
          const auto e = static_cast<std::size_t>(order[step * s.batch + static_cast<std::size_t>(k) * half + i]);
          std::copy_n(train.images.begin() + static_cast<std::ptrdiff_t>(e * 784), 784,
                      images.begin() + static_cast<std::ptrdiff_t>(i * 784));
          labels[i] = train.labels[e];
        }
        losses[static_cast<std::size_t>(k)][step] = net.forward_backward(images.data(), labels.data(), half);
        if (allreduce) update->step(vars, step);
        else t->push_pull(net.gradients(), net.parameters());
      }
      if (k == 0)
        for (const auto& p : net.parameters()) final_dsgd.push_back(p.to_host());
      if (t) t->finish();
    }));
  for (auto& w : workers) w.join();
  if (ps.joinable()) ps.join();
  if (failure) std::rethrow_exception(failure);

  double worst_loss = 0;
  std::size_t worst_step = 0;
  for (std::size_t step = 0; step < s.steps; ++step) {
    const double mean = (double(losses[0][step]) + double(losses[1][step])) / 2;
    const double rel = std::abs(mean - double(losses_torch[step])) / std::abs(double(losses_torch[step]));
    std::printf("step %2zu loss %.7f torch %.7f relative difference %.2e\n", step, mean, double(losses_torch[step]),
                rel);
    if (rel > worst_loss) worst_loss = rel, worst_step = step;
  }
  std::printf(
      "loss: step 0 %.6f (torch %.6f), step %zu %.6f (torch %.6f); worst relative difference %.2e at step %zu\n",
      (losses[0][0] + losses[1][0]) / 2, losses_torch[0], s.steps - 1,
      (losses[0][s.steps - 1] + losses[1][s.steps - 1]) / 2, losses_torch[s.steps - 1], worst_loss, worst_step);
  bool ok = worst_loss <= 1e-4;
  for (std::size_t v = 0; v < final_dsgd.size(); ++v) {
    double largest = 0, diff = 0, moved = 0;
    for (std::size_t i = 0; i < final_dsgd[v].size(); ++i) {
      largest = std::max(largest, std::abs(double(final_torch[v][i])));
      diff = std::max(diff, std::abs(double(final_dsgd[v][i]) - double(final_torch[v][i])));
      moved = std::max(moved, std::abs(double(final_torch[v][i]) - double(init[v][i])));
    }
    const double rel = diff / largest;
    std::printf("%-14s max |dsgd - torch| %.3e, %.2e of its largest value %.3e (torch moved it by up to %.3e)\n",
                shape_of.names()[v].c_str(), diff, rel, largest, moved);
    ok = ok && rel <= 1e-4 && moved > 0;
  }
  std::printf("%s\n", ok ? "trajectory: dsgd follows PyTorch" : "trajectory: dsgd departs from PyTorch");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  try {
    if (argc < 2) throw std::invalid_argument("missing DIR");
    s.dir = argv[1];
    for (int i = 2; i < argc; ++i) {
      const std::string a = argv[i];
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      const std::string v = argv[++i];
      if (a == "--steps") s.steps = std::stoul(v);
      else if (a == "--batch") s.batch = std::stoul(v);
      else if (a == "--lr") s.lr = std::stof(v);
      else if (a == "--momentum") s.momentum = std::stof(v);
      else if (a == "--rule") {
        if (v != "sync" && v != "allreduce")
          throw std::invalid_argument("--rule " + v + ": expected sync or allreduce");
        s.rule = v;
      } else if (a == "--hidden") {
        s.hidden.clear();
        for (std::size_t at = 0; at <= v.size();) {
          const auto comma = std::min(v.find(',', at), v.size());
          s.hidden.push_back(std::stoul(v.substr(at, comma - at)));
          at = comma + 1;
        }
      } else {
        throw std::invalid_argument("unknown option " + a);
      }
    }
    if (s.steps == 0 || s.batch < 2 || s.batch % 2 != 0)
      throw std::invalid_argument("--steps must be >= 1 and --batch even");
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "trajectory_job: %s\nusage: trajectory_job DIR [--steps N] [--hidden W,W] [--batch N] [--lr X] "
                 "[--momentum X] [--rule sync|allreduce]\n",
                 e.what());
    return 2;
  }
  try {
    return run(s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trajectory_job: %s\n", e.what());
    return 1;
  }
}
