// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// One training step's exchange along each path a user can take, against the bare trainer's
// push_pull of dsgd::tensors measured in the same run: the same push_pull of the user's own
// buffers (variable_views), and a monitored session's run() of tensors and of views (no hooks,
// no checkpoints: the session's own cost), and a session handed each step's views
// (run(loss, views), as a model whose gradients move between steps does). Built as
// dsgd_bench_paths_torch (where libtorch is), it also runs the views of a torch::nn::Module's
// parameters and .grad(), taken afresh every step by module_views::with_gradients() as
// examples/04_libtorch_cnn does. The variables are the MLP 784-256-128-10's (six, 235K
// floats); 1 ps + 1 worker, threads of this process over loopback TCP with the default
// connection (shared memory between co-located tasks), sync_average with momentum on the ps.
//
// Every repetition starts a fresh cluster per path and runs the paths in turn, so that load
// from other processes falls on all alike. Prints one CSV row per repetition and path,
//   path,rep,steps,seconds_per_step
// then the median step of each path and its ratio to the bare tensor push_pull.
//
//   dsgd_bench_paths [--reps=N] [--steps=N] [--warmup=N] [--smoke]
//
// Exits with status 1 when a path's values differ from the bare path's after the same steps.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/placement/greedy_by_bytes.hpp>
#include <dsgd/tensor/view.hpp>
#include <dsgd/train/monitored_session.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/sync_average.hpp>

#include "../../test/support/loopback_cluster.hpp"

#ifdef DSGD_BENCH_TORCH
#include <dsgd/adapt/torch.hpp>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using cpu = dsgd::device::cpu;
using trainer_type =
    dsgd::trainer<cpu, dsgd::placement::greedy_by_bytes, dsgd::update::sync_average, dsgd::optim::momentum>;
using session_type = dsgd::train::monitored_session<trainer_type>;
using clock_type = std::chrono::steady_clock;

struct settings {
  int reps = 7;
  int steps = 400;
  int warmup = 40;
};

const std::vector<std::string> names{"dense0/w", "dense0/b", "dense1/w", "dense1/b", "dense2/w", "dense2/b"};
const std::vector<dsgd::shape> shapes{{784, 256}, {256}, {256, 128}, {128}, {128, 10}, {10}};

trainer_type::options options() {
  trainer_type::options o;
  o.connection.token = "bench";
  o.optimizer = dsgd::optim::momentum{0.01f, 0.9f, false};
  o.connection.log = [](std::string_view) {};
  return o;
}

// The model's buffers: values start at 0.01 * (i % 7), gradients at 0.001 (each step the same).
struct model {
  std::vector<dsgd::tensor<cpu>> values, gradients;
  std::vector<std::vector<float>> own_values, own_gradients;
  std::vector<dsgd::variable_view> views;
  model() {
    for (const auto& s : shapes) {
      std::vector<float> v(s.elements());
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.01f * float(i % 7);
      values.emplace_back(cpu{}, s);
      values.back().assign(v);
      gradients.emplace_back(cpu{}, s);
      gradients.back().assign(std::vector<float>(v.size(), 0.001f));
      own_values.push_back(v);
      own_gradients.emplace_back(v.size(), 0.001f);
    }
    views = dsgd::views(own_values, own_gradients, names, shapes);
  }
  std::vector<float> first_values(bool own) const { return own ? own_values[0] : values[0].to_host(); }
};

#ifdef DSGD_BENCH_TORCH
// The same variables as the parameters of a torch::nn::Module, their .grad() the same gradients.
struct module_model : torch::nn::Module {
  explicit module_model(model& m) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::vector<std::int64_t> sizes(shapes[i].extents().begin(), shapes[i].extents().end());
      auto p = register_parameter(names[i], torch::from_blob(m.own_values[i].data(), sizes).clone());
      p.mutable_grad() = torch::from_blob(m.own_gradients[i].data(), sizes).clone();
    }
  }
  std::vector<float> first_values() {
    const auto p = parameters().front().contiguous();
    return {p.data_ptr<float>(), p.data_ptr<float>() + p.numel()};
  }
};
#endif

enum class path { tensors, views, session_tensors, session_views, session_views_each_step, module_views };
const char* name_of(path p) {
  switch (p) {
    case path::tensors:
      return "push_pull_tensors";
    case path::views:
      return "push_pull_views";
    case path::session_tensors:
      return "session_tensors";
    case path::session_views:
      return "session_views";
    case path::session_views_each_step:
      return "session_views_each_step";
    case path::module_views:
      return "push_pull_module_views";
  }
  return "?";
}

struct outcome {
  double seconds_per_step;
  std::vector<float> values;  // variable 0 after warmup + steps
};

// Runs @p s.warmup + @p s.steps steps of path @p p on a fresh cluster; times the last s.steps.
outcome run(path p, const settings& s) {
  auto spec = dsgd::test::loopback_cluster(1, 1);
  trainer_type ps(spec, {"ps", 0}, options());
  std::thread serving([&] { ps.join(); });
  trainer_type t(spec, {"worker", 0}, options());
  model m;
  const bool own = p == path::views || p == path::session_views || p == path::session_views_each_step;
  std::function<void()> step;
  std::unique_ptr<session_type> session;
#ifdef DSGD_BENCH_TORCH
  std::shared_ptr<module_model> module;
  std::optional<dsgd::adapt::libtorch::module_views> params;
#endif
  switch (p) {
    case path::tensors:
      t.create_variables(m.values, names);
      step = [&] { t.push_pull(m.gradients, m.values); };
      break;
    case path::views:
      t.create_variables(m.views);
      step = [&] { t.push_pull(m.views); };
      break;
    case path::session_tensors:
      session =
          std::make_unique<session_type>(t, m.values, names, std::vector<std::unique_ptr<session_type::hook_type>>{});
      step = [&] { session->run(0.5f, m.gradients); };
      break;
    case path::session_views:
      session = std::make_unique<session_type>(t, m.views, std::vector<std::unique_ptr<session_type::hook_type>>{});
      step = [&] { session->run(0.5f); };
      break;
    case path::session_views_each_step:
      session = std::make_unique<session_type>(t, m.views, std::vector<std::unique_ptr<session_type::hook_type>>{});
      step = [&] { session->run(0.5f, m.views); };
      break;
    case path::module_views:
#ifdef DSGD_BENCH_TORCH
      module = std::make_shared<module_model>(m);
      params.emplace(*module);
      t.create_variables(params->values());
      step = [&] { t.push_pull(params->with_gradients()); };
#endif
      break;
  }
  for (int i = 0; i < s.warmup; ++i) step();
  const auto start = clock_type::now();
  for (int i = 0; i < s.steps; ++i) step();
  const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  if (session) session->close();
  else t.finish();
  serving.join();
#ifdef DSGD_BENCH_TORCH
  if (module) return {seconds / s.steps, module->first_values()};
#endif
  return {seconds / s.steps, m.first_values(own)};
}

bool parse(int argc, char** argv, settings& s) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* key) -> const char* {
      const auto n = std::strlen(key);
      return a.compare(0, n, key) == 0 ? a.c_str() + n : nullptr;
    };
    if (a == "--smoke") {
      s = {.reps = 1, .steps = 20, .warmup = 2};
    } else if (auto v = value("--reps=")) {
      s.reps = std::atoi(v);
    } else if (auto v = value("--steps=")) {
      s.steps = std::atoi(v);
    } else if (auto v = value("--warmup=")) {
      s.warmup = std::atoi(v);
    } else {
      std::fprintf(stderr, "dsgd_bench_paths: unknown option %s (see the comment at the top of paths.cpp)\n",
                   a.c_str());
      return false;
    }
  }
  if (s.reps < 1 || s.steps < 1 || s.warmup < 0) {
    std::fprintf(stderr, "dsgd_bench_paths: --reps and --steps must be >= 1, --warmup >= 0\n");
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  if (!parse(argc, argv, s)) return 2;
  std::vector<path> paths{path::tensors, path::views, path::session_tensors, path::session_views,
                          path::session_views_each_step};
#ifdef DSGD_BENCH_TORCH
  paths.push_back(path::module_views);
  torch::set_num_threads(1);
#endif
  std::map<path, std::vector<double>> times;
  std::printf("path,rep,steps,seconds_per_step\n");
  for (int rep = 0; rep < s.reps; ++rep) {
    std::vector<float> reference;
    for (path p : paths) {
      const auto o = run(p, s);
      if (p == path::tensors) {
        reference = o.values;
      } else if (o.values != reference) {
        std::fprintf(stderr, "dsgd_bench_paths: %s ended with other values than push_pull_tensors\n", name_of(p));
        return 1;
      }
      times[p].push_back(o.seconds_per_step);
      std::printf("%s,%d,%d,%.9f\n", name_of(p), rep, s.steps, o.seconds_per_step);
      std::fflush(stdout);
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  const double base = median(times[path::tensors]);
  std::printf("\n| path | median step (us) | / push_pull of tensors |\n|---|---:|---:|\n");
  for (path p : paths)
    std::printf("| %s | %.1f | %.3f |\n", name_of(p), median(times[p]) * 1e6, median(times[p]) / base);
  return 0;
}
