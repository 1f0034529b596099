// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// A dsgd program for optim_resume_test: softmax regression on real Fashion-MNIST, its two
// variables cut in two and placed over two ps tasks (partitioned::fixed_size(2), so every
// variable has a shard away from offset 0), trained by one worker under sync_average with a
// learning-rate schedule around a stateful optimizer. Every process runs it; TF_CONFIG says
// which task it is.
//
//   resume_job --optimizer NAME --to STEP [--restore DIR] [--save DIR] --out FILE
//
//   --optimizer  momentum_exponential: exponential_decay<momentum> (staircase every 7 steps);
//                adamw_cosine: cosine_decay<adam> with a linear warmup of 8 steps, decoupled
//                weight decay 0.01, and the gradients clipped to a global norm of 1 before push;
//                adagrad_piecewise: piecewise_constant<adagrad>, boundaries 12 and 25;
//                per_variable: optim::per_variable over adamw_cosine, dense0/bias trained with
//                ftrl (learning rate 0.05, l1 0.001) instead
//   --to STEP    the worker trains until the global step reaches STEP
//   --restore D  the worker (chief) has the ps tasks restore the latest checkpoint in D first
//   --save D     after the last step, the worker has the ps tasks write a checkpoint into D
//   --out FILE   the worker writes the final values there (dense0/kernel, then dense0/bias, as
//                raw float32) and prints "final STEP"
//
// The batch of global step s is examples [64 s, 64 s + 64) of the test split (mod its size):
// a run resumed at step s reads what an uninterrupted run reads from s on. A dsgd::error exits
// with status 3, printing "error MESSAGE".
#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/cluster/environment.hpp>
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/model/softmax_regression.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/clip.hpp>
#include <dsgd/optim/cosine_decay.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/ftrl.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/per_variable.hpp>
#include <dsgd/optim/piecewise_constant.hpp>
#include <dsgd/placement/partitioned.hpp>
#include <dsgd/server/parameter_server.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/sync_average.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

namespace {

using cpu = dsgd::device::cpu;

struct settings {
  std::string optimizer;
  std::uint64_t to = 0;
  std::string restore_dir;
  std::string save_dir;
  std::string out;
};

constexpr std::size_t batch = 64;

dsgd::optim::exponential_decay<dsgd::optim::momentum> momentum_exponential() {
  return {.base = {.learning_rate = 0.05f, .momentum = 0.9f}, .decay_rate = 0.7f, .decay_steps = 7, .staircase = true};
}
dsgd::optim::cosine_decay<dsgd::optim::adam> adamw_cosine() {
  return {.base = {.learning_rate = 0.01f, .weight_decay = 0.01f},
          .decay_steps = 32,
          .alpha = 0.1f,
          .warmup_steps = 8,
          .warmup_initial = 0.001f};
}
dsgd::optim::piecewise_constant<dsgd::optim::adagrad> adagrad_piecewise() {
  return {.base = {}, .boundaries = {12, 25}, .values = {0.1f, 0.05f, 0.02f}};
}
dsgd::optim::per_variable<dsgd::optim::cosine_decay<dsgd::optim::adam>> per_variable() {
  return {
      .all = adamw_cosine(),
      .variables = {{"dense0/bias", dsgd::optim::ftrl{.learning_rate = 0.05f, .l1_regularization_strength = 0.001f}}}};
}

template <class O>
int serve(const dsgd::cluster::role& me, O optimizer) {
  using server = dsgd::server::parameter_server<dsgd::update::sync_average, O>;
  typename server::options o;
  o.connection.token = "resume-test-token";
  o.connection.log = [](std::string_view) {};
  o.optimizer = optimizer;
  o.serving.step_timeout = std::chrono::seconds(60);
  server ps(me.cluster, me.task.index, o);
  ps.join();
  return 0;
}

template <class O>
int work(const settings& s, const dsgd::cluster::role& me, O optimizer, float clip_norm) {
  using trainer = dsgd::trainer<cpu, dsgd::placement::partitioned, dsgd::update::sync_average, O>;
  typename trainer::options o;
  o.connection.token = "resume-test-token";
  o.connection.log = [](std::string_view) {};
  o.optimizer = optimizer;
  o.placement = dsgd::placement::partitioned::fixed_size(2);
  o.serving.step_timeout = std::chrono::seconds(60);
  o.requests.startup_timeout = std::chrono::seconds(60);
  const auto data = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::test);
  dsgd::model::softmax_regression<cpu> model({}, {.seed = 7});
  trainer t(me.cluster, me.task, o);
  if (!s.restore_dir.empty()) {
    const auto latest = dsgd::checkpoint::saver(s.restore_dir).latest();
    if (!latest) throw dsgd::error(dsgd::errc::not_found, "--restore: no checkpoint in " + s.restore_dir);
    t.restore_variables(model.parameters(), model.names(), s.restore_dir, *latest);
  } else {
    t.create_variables(model.parameters(), model.names());
  }
  std::printf("start %llu\n", static_cast<unsigned long long>(t.step()));
  while (t.step() < s.to) {
    const std::size_t first = (t.step() * batch) % (data.size() - batch);
    model.forward_backward(data.images.data() + first * data.features(), data.labels.data() + first, batch);
    if (clip_norm > 0.f) dsgd::optim::clip_by_global_norm(model.device(), model.gradients(), clip_norm);
    t.push_pull(model.gradients(), model.parameters());
  }
  if (!s.save_dir.empty()) {
    t.save_shards(s.save_dir);
    dsgd::checkpoint::saver(s.save_dir).commit(t.step(), t.plan());
  }
  std::ofstream out(s.out, std::ios::binary | std::ios::trunc);
  for (const auto& p : model.parameters()) {
    const auto host = p.to_host();
    out.write(reinterpret_cast<const char*>(host.data()), static_cast<std::streamsize>(host.size() * sizeof(float)));
  }
  out.close();
  if (!out) throw dsgd::error(dsgd::errc::not_found, "--out: cannot write " + s.out);
  t.finish();
  std::printf("final %llu\n", static_cast<unsigned long long>(t.step()));
  return 0;
}

template <class O>
int run(const settings& s, O optimizer, float clip_norm) {
  const auto me = dsgd::cluster::resolve_from_environment({});
  return me.task.job == "ps" ? serve(me, optimizer) : work(s, me, optimizer, clip_norm);
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::printf("resume_job: option %s needs a value\n", a.c_str());
      return 2;
    }
    const std::string v = argv[++i];
    if (a == "--optimizer") {
      s.optimizer = v;
    } else if (a == "--to") {
      s.to = std::stoull(v);
    } else if (a == "--restore") {
      s.restore_dir = v;
    } else if (a == "--save") {
      s.save_dir = v;
    } else if (a == "--out") {
      s.out = v;
    } else {
      std::printf("resume_job: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    if (s.optimizer == "momentum_exponential") return run(s, momentum_exponential(), 0.f);
    if (s.optimizer == "adamw_cosine") return run(s, adamw_cosine(), 1.f);
    if (s.optimizer == "adagrad_piecewise") return run(s, adagrad_piecewise(), 0.f);
    if (s.optimizer == "per_variable") return run(s, per_variable(), 1.f);
    std::printf(
        "resume_job: --optimizer %s is not momentum_exponential, adamw_cosine, adagrad_piecewise or "
        "per_variable\n",
        s.optimizer.c_str());
    return 2;
  } catch (const dsgd::error& e) {
    std::printf("error %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::printf("error other: %s\n", e.what());
    return 4;
  }
}
