// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Bringing your own model: a convolutional network written with torch::nn (two convolutions
// with max pooling, two dense layers: LeNet-5's size) trained on Fashion-MNIST by worker
// processes, its parameters placed on the ps tasks by dsgd. The module's parameters and their
// .grad() are dsgd variables through <dsgd/adapt/torch.hpp>: each step's backward() leaves the
// gradients where a push reads them, and the pull writes the next values into the parameters
// themselves; libtorch computes, dsgd's ps tasks run the optimizer (docs/models.md). Every
// worker runs a monitored session over the module's views: with --logdir DIR the chief
// checkpoints the job there and writes TensorBoard summaries, and a job started again on the
// same DIR resumes from its latest checkpoint.
//
//   dsgd-launch --ps 1 --workers 2 -- ./04_libtorch_cnn --rule sync --target 0.90
//
// With --batchnorm each layer but the last is followed by batch normalisation, whose running
// mean and variance are state that is not a gradient: module_views makes them variables
// (keep::exchange) that every worker pushes as they are after its forward passes, and the ps
// tasks apply to them, instead of the job's momentum, an optimizer that assigns the mean of a
// step's pushes (optim::per_variable names them). Every replica then ends each step with the
// replicas' mean statistics, the checkpoints hold them, and the chief evaluates in eval mode
// with them; each worker prints a digest of its buffers at the end (equal on every worker):
//
//   dsgd-launch --ps 2 --workers 2 -- ./04_libtorch_cnn --batchnorm --epochs 4 --lr 0.2 --decay 0.4
//       --target 0.90   (one line)
//
// (0.9018 after 4 epochs, 2026-12-06, about 5 s an epoch on a shared 2-core Intel Xeon)
//
// Sync, 2 workers of one libtorch thread each, 12 epochs: test accuracy 0.906 (0.9062 on an AMD
// EPYC, 2026-12-04: 14,000 examples/s per worker, 26 s; an Intel Xeon took 140 s), against
// PyTorch DDP and RPC on the same libtorch in docs/compare.md (bench/compare/cnn.sh).
//
// Options (on Boost.Program_options; --help lists them): --rule sync|async, --epochs N, --batch
//          N (per worker), --lr X, --decay X, --momentum X, --threads N (libtorch threads per
//          worker), --target ACC, --csv FILE, --logdir DIR, --save-steps N, --batchnorm, --solo
//          (one process, no cluster: the one-process figure of bench/compare/cnn.sh).
// Every task reads its role from TF_CONFIG (dsgd-launch sets it); the chief prints the test
// accuracy after each epoch. Usage errors exit 2, naming the option.
#include <dsgd/adapt/torch.hpp>
#include <dsgd/cluster/token.hpp>
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/per_variable.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/greedy_by_bytes.hpp>
#include <dsgd/train/monitored_session.hpp>
#include <dsgd/train/summary_writer.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>

#include <torch/torch.h>
#include <boost/program_options.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

namespace fm = dsgd::data::fashion_mnist;

struct settings {
  std::string rule = "sync";
  std::size_t epochs = 12;
  std::int64_t batch = 64;
  float lr = 0.04f;
  float momentum = 0.9f;
  float decay = 0.8f;  // learning rate multiplier per epoch
  int threads = 1;
  double target = 0;
  std::string csv;
  std::string logdir;            // checkpoints and summaries ("": neither)
  std::uint64_t save_steps = 0;  // a checkpoint every N global steps (0: every 60 s)
  bool batchnorm = false;        // batch normalisation after each layer but the last
  bool solo = false;
};

struct usage_error {
  std::string what;
};

namespace po = boost::program_options;

// The command line, on Boost.Program_options; @returns nothing after --help (the usage printed).
std::optional<settings> parse(int argc, char** argv) {
  settings s;
  // A number of at least @p low into @p field, read as a double as "--epochs 12" or "--lr 0.04".
  auto number = [](const char* name, const char* value_name, double low, auto& field) {
    return po::value<double>()->value_name(value_name)->notifier([name, low, &field](double x) {
      if (!(x >= low))
        throw usage_error{std::string("--") + name + " " + (std::ostringstream() << x).str() +
                          ": expected a number >= " + (std::ostringstream() << low).str()};
      field = static_cast<std::remove_reference_t<decltype(field)>>(x);
    });
  };
  po::options_description d(
      "usage: 04_libtorch_cnn [options]; run every task of a cluster with it:\n"
      "  dsgd-launch --ps 1 --workers 2 -- ./04_libtorch_cnn\noptions");
  auto add = d.add_options();
  add("rule", po::value(&s.rule)->value_name("R"), "sync | async [sync]");
  add("epochs", number("epochs", "N", 1, s.epochs), "passes over the training set, split over the workers [12]");
  add("batch", number("batch", "N", 1, s.batch), "examples per worker and step [64]");
  add("lr", number("lr", "X", 0, s.lr), "learning rate [0.04]");
  add("decay", number("decay", "X", 0, s.decay), "learning rate multiplier per epoch [0.8]");
  add("momentum", number("momentum", "X", 0, s.momentum), "momentum SGD on the ps [0.9]");
  add("threads", number("threads", "N", 1, s.threads),
      "libtorch compute threads per worker (tasks share the cores) [1]");
  add("target", number("target", "ACC", 0, s.target), "the chief exits 1 below this test accuracy [0]");
  add("csv", po::value(&s.csv)->value_name("FILE"), "the chief's evaluations (bench/compare/cnn.sh)");
  add("logdir", po::value(&s.logdir)->value_name("DIR"),
      "checkpoints and summaries; a job started again resumes from DIR's latest checkpoint");
  add("save-steps", number("save-steps", "N", 1, s.save_steps),
      "with --logdir: a checkpoint every N global steps [every 60 s and at the end]");
  add("batchnorm", po::bool_switch(&s.batchnorm),
      "batch normalisation after each layer but the last, its running statistics averaged over the workers by the "
      "last ps task (needs --rule sync and 2 or more ps tasks)");
  add("solo", po::bool_switch(&s.solo), "one process, no cluster: the same steps, the optimizer applied in place");
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
  if (s.save_steps != 0 && s.logdir.empty()) throw usage_error{"--save-steps needs --logdir DIR"};
  if (s.solo && !s.logdir.empty()) throw usage_error{"--logdir: a --solo run keeps no checkpoints"};
  // Under async each push would set the statistics to one worker's: they are averaged per step.
  if (s.batchnorm && s.rule != "sync") throw usage_error{"--batchnorm needs --rule sync"};
  return s;
}

// The network: conv 5x5 (6) - max pool - conv 5x5 (16) - max pool - dense 120 - dense 10, with
// @p batchnorm a batch normalisation after each convolution and after the first dense layer.
struct cnn_impl : torch::nn::Module {
  explicit cnn_impl(bool batchnorm)
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 6, 5).padding(2)))),
        conv2(register_module("conv2", torch::nn::Conv2d(6, 16, 5))),
        fc1(register_module("fc1", torch::nn::Linear(16 * 5 * 5, 120))),
        fc2(register_module("fc2", torch::nn::Linear(120, 10))) {
    if (batchnorm) {
      bn1 = register_module("bn1", torch::nn::BatchNorm2d(6));
      bn2 = register_module("bn2", torch::nn::BatchNorm2d(16));
      bn3 = register_module("bn3", torch::nn::BatchNorm1d(120));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(normalised(bn1, conv1(x))), 2);  // 28x28 -> 14x14
    x = torch::max_pool2d(torch::relu(normalised(bn2, conv2(x))), 2);  // 10x10 -> 5x5
    return fc2(torch::relu(normalised(bn3, fc1(x.flatten(1)))));
  }
  template <class Norm>
  static torch::Tensor normalised(Norm& norm, torch::Tensor x) {
    return norm.is_empty() ? x : norm(x);
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2;
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::BatchNorm1d bn3{nullptr};
};

// An FNV-1a digest of the bytes of @p net's buffers (running statistics and counts): equal on
// two workers only if their buffers are bit for bit the same.
std::uint64_t digest_of_buffers(cnn_impl& net) {
  std::uint64_t h = 14695981039346656037ull;
  for (const auto& b : net.buffers()) {
    const auto t = b.contiguous();
    const auto* p = static_cast<const unsigned char*>(t.data_ptr());
    for (std::size_t i = 0; i < t.nbytes(); ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  return h;
}

// The images of @p d as an N x 1 x 28 x 28 tensor, normalised (Fashion-MNIST's mean and
// deviation), and its labels.
std::pair<torch::Tensor, torch::Tensor> tensors_of(const fm::dataset& d) {
  const auto n = static_cast<std::int64_t>(d.size());
  auto x = torch::from_blob(const_cast<float*>(d.images.data()), {n, 1, 28, 28}).sub(0.2860).div(0.3530);
  auto y = torch::from_blob(const_cast<std::int32_t*>(d.labels.data()), {n}, torch::kInt32).to(torch::kInt64);
  return {x, y};
}

// The accuracy in eval mode: batch normalisation with the running statistics, not the batch's.
double accuracy(cnn_impl& net, const torch::Tensor& x, const torch::Tensor& y) {
  torch::NoGradGuard no_grad;
  net.eval();
  struct back_to_training {
    cnn_impl& net;
    ~back_to_training() { net.train(); }
  } training{net};
  std::int64_t right = 0;
  for (std::int64_t i = 0; i < x.size(0); i += 1000) {
    const auto end = std::min<std::int64_t>(i + 1000, x.size(0));
    right += net.forward(x.slice(0, i, end)).argmax(1).eq(y.slice(0, i, end)).sum().item<std::int64_t>();
  }
  return static_cast<double>(right) / static_cast<double>(x.size(0));
}

// The job's optimizer, and with --batchnorm another for the buffers (averaging()).
using optimizer = dsgd::optim::per_variable<dsgd::optim::exponential_decay<dsgd::optim::momentum>>;
using clock_type = std::chrono::steady_clock;

// Momentum SGD at s.lr, times s.decay after every @p steps_per_epoch updates, for every variable.
optimizer schedule_of(const settings& s, std::uint64_t steps_per_epoch) {
  return {.all = {.base = {.learning_rate = s.lr, .momentum = s.momentum},
                  .decay_rate = s.decay,
                  .decay_steps = steps_per_epoch,
                  .staircase = true}};
}

struct data_set {
  torch::Tensor train_x, train_y, test_x, test_y;
};

data_set load_data() {
  const auto train_set = fm::load(fm::split::train), test_set = fm::load(fm::split::test);
  data_set d;
  std::tie(d.train_x, d.train_y) = tensors_of(train_set);
  std::tie(d.test_x, d.test_y) = tensors_of(test_set);
  return d;
}

// Trains @p net over shard @p replica of @p replicas of the training set, `batches` batches of
// s.batch each per pass, from global step @p first (where a restored checkpoint left the job; 0
// for a new one) to the end of pass s.epochs; `step(loss)` follows every backward() and returns
// whether to stop, and `global()` says the global step after it. The chief evaluates after each
// pass (and writes s.csv); the clock starts here, once the variables are ready. @returns the
// last test accuracy (0 elsewhere).
template <class Step, class Global>
double train_passes(const settings& s, cnn_impl& net, const data_set& d, std::int64_t replica, std::int64_t replicas,
                    std::int64_t batches, std::uint64_t steps_per_epoch, bool chief, std::uint64_t first, Step&& step,
                    Global&& global) {
  std::FILE* csv = nullptr;
  if (chief && !s.csv.empty()) {
    csv = std::fopen(s.csv.c_str(), "w");
    if (!csv) throw std::runtime_error("--csv " + s.csv + ": cannot open it for writing: " + std::strerror(errno));
    std::fputs("system,epoch,wall_s,global_step,steps_per_epoch,eval_s,test_accuracy,examples,compute_s,step_s\n", csv);
  }
  // This worker's shard: every replicas-th example, reshuffled each epoch.
  const auto mine = torch::arange(replica, d.train_x.size(0), replicas);
  torch::Generator order = at::detail::createCPUGenerator(static_cast<std::uint64_t>(100 + replica));
  // A resumed job goes on in the pass and batch its global step falls in (this worker's share
  // of it under async), in the same order as an uninterrupted one.
  const auto done_passes = static_cast<std::size_t>(first / steps_per_epoch);
  const auto done_batches =
      static_cast<std::int64_t>((first % steps_per_epoch) * static_cast<std::uint64_t>(batches) / steps_per_epoch);
  const auto start = clock_type::now();
  double last = 0;
  std::int64_t trained = 0;  // batches since the start
  bool stop = false;
  for (std::size_t e = 1; e <= s.epochs && !stop; ++e) {
    const auto shuffled = mine.index_select(0, torch::randperm(mine.size(0), order, torch::kInt64));
    if (e <= done_passes) continue;
    double loss_sum = 0;
    clock_type::duration compute{}, stepping{};  // this pass's forward and backward, and step()s
    const std::int64_t from = e == done_passes + 1 ? done_batches : 0;
    std::int64_t pass_steps = 0;
    for (std::int64_t b = from; b < batches && !stop; ++b, ++pass_steps) {
      const auto t0 = clock_type::now();
      const auto idx = shuffled.slice(0, b * s.batch, (b + 1) * s.batch);
      net.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(net.forward(d.train_x.index_select(0, idx)),
                                                       d.train_y.index_select(0, idx));
      loss.backward();
      const auto value = loss.item<float>();
      loss_sum += value;
      const auto t1 = clock_type::now();
      stop = step(value);
      compute += t1 - t0, stepping += clock_type::now() - t1;
    }
    trained += pass_steps;
    const double pass_batches = static_cast<double>(std::max<std::int64_t>(pass_steps, 1));
    const double compute_s = std::chrono::duration<double>(compute).count();
    const double step_s = std::chrono::duration<double>(stepping).count();
    const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    if (chief) {
      last = accuracy(net, d.test_x, d.test_y);
      const double done = std::chrono::duration<double>(clock_type::now() - start).count();
      std::printf(
          "epoch %2zu  %7.1f s  step %6llu  %6.0f examples/s (this worker)  loss %.4f  test accuracy %.4f"
          "  (per step: compute %.2f ms, %s %.2f ms)\n",
          e, seconds, static_cast<unsigned long long>(global()), static_cast<double>(trained * s.batch) / seconds,
          loss_sum / pass_batches, last, 1e3 * compute_s / pass_batches, s.solo ? "update" : "push_pull",
          1e3 * step_s / pass_batches);
      if (csv) {
        std::fprintf(csv, "%s,%zu,%.3f,%llu,%llu,%.3f,%.4f,%lld,%.3f,%.3f\n",
                     s.solo ? "dsgd_solo" : ("dsgd_" + s.rule).c_str(), e, done,
                     static_cast<unsigned long long>(global()), static_cast<unsigned long long>(steps_per_epoch),
                     done - seconds, last, static_cast<long long>(trained * s.batch * replicas), compute_s, step_s);
        std::fflush(csv);
      }
    } else {
      std::printf("pass %2zu over its shard  %7.1f s  loss %.4f  (per step: compute %.2f ms, push_pull %.2f ms)\n", e,
                  seconds, loss_sum / pass_batches, 1e3 * compute_s / pass_batches, 1e3 * step_s / pass_batches);
    }
    std::fflush(stdout);
  }
  if (csv) std::fclose(csv);
  return last;
}

// The optimizer of every buffer: one update sets each value to the mean of the step's pushes
// (decoupled weight decay -1 at learning rate -1 scales the value by 0, then the step adds the
// mean pushed: exact), so that the statistics the workers push are averaged, not descended.
dsgd::optim::sgd averaging() { return {.learning_rate = -1.f, .weight_decay = -1.f}; }

using placement = dsgd::placement::greedy_by_bytes;

template <class Rule>
int train(const settings& s) {
  using trainer = dsgd::trainer<dsgd::device::cpu, placement, Rule, optimizer>;
  typename trainer::options o;
  o.connection.token = dsgd::cluster::token_from_environment(
      [](std::string_view m) { std::fprintf(stderr, "%.*s\n", static_cast<int>(m.size()), m.data()); });
  // Every task computes the schedule from the same arguments and cluster: an epoch is one pass
  // over the training set, a step under sync (each averages a batch of every worker), a push
  // under async.
  const auto role = dsgd::cluster::resolve_from_environment();
  const auto replicas = static_cast<std::int64_t>(dsgd::cluster::replicas::count(role.cluster));
  const std::int64_t batches = static_cast<std::int64_t>(fm::train_images.count) / replicas / s.batch;
  const auto steps_per_epoch =
      static_cast<std::uint64_t>(std::is_same_v<Rule, dsgd::update::sync_average> ? batches : batches * replicas);
  o.optimizer = schedule_of(s, steps_per_epoch);
  torch::manual_seed(1);  // every worker builds the same net; the chief's values are used
  auto net = std::make_shared<cnn_impl>(s.batchnorm);
  // The buffers (with --batchnorm) are variables whose optimizer averages them.
  dsgd::adapt::libtorch::module_views params(*net, {.buffers = dsgd::adapt::libtorch::keep::exchange});
  if (s.batchnorm)
    for (const auto& name : params.state_names()) o.optimizer.variables.emplace_back(name, averaging());
  trainer t(role.cluster, role.task, o);
  if (t.is_ps()) {
    t.join();
    return 0;
  }
  torch::set_num_threads(s.threads);
  const auto d = load_data();
  // A monitored session over the module's views: every worker stops at the schedule's last
  // global step; with --logdir the chief checkpoints (every --save-steps, else every 60 s, and
  // at the end) and writes summaries (loss, examples/s, learning rate, weight histograms).
  using cpu = dsgd::device::cpu;
  std::vector<std::unique_ptr<dsgd::train::session_hook<cpu>>> hooks;
  const std::uint64_t last_step = s.epochs * steps_per_epoch;
  hooks.push_back(std::make_unique<dsgd::train::stop_at_step_hook<cpu>>(last_step));
  std::unique_ptr<dsgd::train::summary_writer> summaries;
  // A global step applies a batch of every worker under sync, one batch under async.
  const auto examples_per_step =
      static_cast<std::size_t>(s.batch) * (std::is_same_v<Rule, dsgd::update::sync_average> ? t.replicas() : 1);
  if (t.is_chief() && !s.logdir.empty()) {
    summaries = std::make_unique<dsgd::train::summary_writer>(s.logdir);
    hooks.push_back(std::make_unique<dsgd::train::summary_hook<cpu>>(
        *summaries, 100, examples_per_step, [schedule = o.optimizer](std::uint64_t step) {
          return std::vector<std::pair<std::string, float>>{{"learning_rate", schedule.all.learning_rate_at(step)}};
        }));
  }
  dsgd::train::session_options so;
  so.checkpoint_dir = s.logdir;
  so.save_checkpoint_steps = s.save_steps;
  so.save_checkpoint_secs = std::chrono::seconds(s.save_steps == 0 ? 60 : 0);
  dsgd::train::monitored_session<trainer> session(t, params.values(), std::move(hooks), std::move(so));
  if (session.restored_step())
    std::printf("restored checkpoint %llu from %s: resuming at step %llu of %llu\n",
                static_cast<unsigned long long>(*session.restored_step()), s.logdir.c_str(),
                static_cast<unsigned long long>(session.step()), static_cast<unsigned long long>(last_step));
  if (t.is_chief() && !s.logdir.empty())
    std::printf("checkpoints and summaries in %s (tensorboard --logdir %s)\n", s.logdir.c_str(), s.logdir.c_str());
  std::fflush(stdout);
  const double last = train_passes(
      s, *net, d, static_cast<std::int64_t>(t.replica()), static_cast<std::int64_t>(t.replicas()), batches,
      steps_per_epoch, t.is_chief(), session.step(),
      [&](float loss) {
        // .grad() out (zero_grad() may have made it anew), the next values into the parameters.
        session.run(loss, params.with_gradients());
        return session.should_stop();
      },
      [&] { return session.step(); });
  session.close();
  if (s.batchnorm) {
    params.values();  // the counts last pulled into num_batches_tracked
    std::printf("buffers digest %016llx\n", static_cast<unsigned long long>(digest_of_buffers(*net)));
    std::fflush(stdout);
  }
  if (!t.is_chief()) return 0;
  std::printf("final test accuracy %.4f (%s, %zu workers, %zu ps, %llu global steps)\n", last, s.rule.c_str(),
              t.replicas(), t.cluster().num_tasks("ps"), static_cast<unsigned long long>(t.step()));
  return last >= s.target ? 0 : 1;
}

// --solo: one process and no cluster; after each backward() the same optimizer and schedule as
// the ps's updates every parameter in place through the same views (no copy, no network).
int train_solo(const settings& s) {
  torch::set_num_threads(s.threads);
  torch::manual_seed(1);
  const auto d = load_data();
  auto net = std::make_shared<cnn_impl>(s.batchnorm);
  // One process: the running statistics are the module's own, never pushed or updated here.
  dsgd::adapt::libtorch::module_views params(*net, {.buffers = dsgd::adapt::libtorch::keep::leave_out});
  const std::int64_t batches = static_cast<std::int64_t>(fm::train_images.count) / s.batch;
  const auto opt = schedule_of(s, static_cast<std::uint64_t>(batches));
  const dsgd::device::cpu cpu{};
  std::vector<optimizer::state<dsgd::device::cpu>> slots;
  for (const auto& v : params.values()) slots.emplace_back(cpu, v.values.size());
  std::uint64_t steps = 0;
  const double last = train_passes(
      s, *net, d, 0, 1, batches, static_cast<std::uint64_t>(batches), true, 0,
      [&](float) {
        const auto views = params.with_gradients();
        for (std::size_t i = 0; i < views.size(); ++i)
          opt.apply(cpu, slots[i], views[i].values.data(), views[i].gradients.data(), views[i].values.size());
        ++steps;
        return false;
      },
      [&] { return steps; });
  std::printf("final test accuracy %.4f (solo, one process, %llu steps)\n", last,
              static_cast<unsigned long long>(steps));
  return last >= s.target ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<settings> s;
  try {
    s = parse(argc, argv);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "04_libtorch_cnn: %s (04_libtorch_cnn --help lists the options)\n", e.what.c_str());
    return 2;
  }
  if (!s) return 0;
  try {
    if (s->solo) return train_solo(*s);
    return s->rule == "sync" ? train<dsgd::update::sync_average>(*s) : train<dsgd::update::async>(*s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "04_libtorch_cnn: %s\n", e.what());
    return 1;
  }
}
