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
//          --target ACC (exit 1 if the chief ends below it),
//          --backup N (sync: each step averages the first workers - N gradients; the slowest
//          N are backups whose late gradients are dropped),
//          --slowdown TASK=F (e.g. worker:2=3: that task sleeps after each step so that its
//          step takes F times its compute time, a straggler),
//          --csv FILE (the chief writes one line per evaluation: wall time, global step,
//          steps/s, loss, test accuracy, the evaluation's own time; bench/straggler/run.sh
//          plots these),
//          --num-ps N, --base-port P (under mpirun or srun, whose ranks carry no roles: ranks
//          0..N-1 are the ps tasks, rank r listens on P + r; docs/launching.md),
//          --listen ADDR (ps: "*" any address, an IP, "if:NAME"; default the spec's address),
//          --startup-timeout S (workers: retry an unreachable or not yet resolvable ps this
//          long; default 120).
//
// Every worker trains until the global step reaches --epochs epochs of the schedule (about
// one pass over the training set each), so a straggler stops with the others; the chief
// evaluates the test accuracy each time the global step crosses an epoch.
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/model/blas.hpp>
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

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
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
  std::size_t backup = 0;       // sync: aggregate workers - backup gradients per step
  std::string slowdown;         // "worker:2=3": that task's steps take 3x its compute time
  double slowdown_factor = 1;
  std::string csv;              // the chief writes one line per evaluation here
  dsgd::cluster::rank_layout layout;  // under mpirun or srun: which ranks are ps tasks, ports
  std::string listen;                 // ps: where to listen ("" the spec's address, "*" any)
  double startup_timeout_s = 120;     // workers: how long to retry an unreachable ps
};

// --slowdown TASK=F, e.g. worker:2=3 (F >= 1).
void parse_slowdown(settings& s, const std::string& v) {
  const auto eq = v.find('=');
  const auto colon = v.find(':');
  if (eq == std::string::npos || colon == std::string::npos || colon > eq || colon == 0 || eq + 1 == v.size())
    throw dsgd::error(dsgd::errc::invalid_argument, "--slowdown " + v + ": expected TASK=FACTOR, e.g. worker:2=3");
  std::size_t used = 0;
  double f = 0;
  try {
    f = std::stod(v.substr(eq + 1), &used);
  } catch (const std::logic_error&) {
    used = 0;
  }
  if (used != v.size() - eq - 1 || !(f >= 1))
    throw dsgd::error(dsgd::errc::invalid_argument, "--slowdown " + v + ": factor at column " +
                                                        std::to_string(eq + 2) + " must be a number >= 1");
  s.slowdown = v;
  s.slowdown_factor = f;
}

std::string token() {
  const char* t = std::getenv("DSGD_CLUSTER_TOKEN");
  return t ? t : "dsgd-example-token";
}

// The article's case 3: each worker computes one op on the ps-held w and b.
int run_demo() {
  using trainer = dsgd::trainer<cpu, dsgd::placement::round_robin, dsgd::update::async>;
  auto t = trainer::from_environment({.connection = {.token = token()}});
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

// The chief's record of one evaluation, printed and (with --csv) appended to a file.
struct evaluation {
  std::size_t epoch;
  double seconds;       // wall time since the variables were ready
  std::uint64_t step;   // global step of the values evaluated
  double loss;          // the chief's mean training loss since the previous evaluation
  double accuracy;
  double eval_seconds;  // how long the evaluation itself took (in `seconds`)
};

class csv_log {
 public:
  explicit csv_log(const settings& s) {
    if (s.csv.empty()) return;
    file_ = std::fopen(s.csv.c_str(), "w");
    if (!file_)
      throw dsgd::error(dsgd::errc::invalid_argument,
                        "--csv " + s.csv + ": cannot open for writing: " + std::strerror(errno));
    std::fprintf(file_, "rule,workers,backup,slowdown,epoch,wall_s,global_step,steps_per_s,train_loss,test_accuracy,eval_s\n");
    std::fflush(file_);
  }
  csv_log(const csv_log&) = delete;
  csv_log& operator=(const csv_log&) = delete;
  ~csv_log() {
    if (file_) std::fclose(file_);
  }
  void write(const settings& s, std::size_t workers, const evaluation& e) {
    if (!file_) return;
    std::fprintf(file_, "%s,%zu,%zu,%s,%zu,%.3f,%llu,%.2f,%.5f,%.4f,%.3f\n", s.rule.c_str(), workers, s.backup,
                 s.slowdown.empty() ? "none" : s.slowdown.c_str(), e.epoch, e.seconds,
                 static_cast<unsigned long long>(e.step), e.seconds > 0 ? e.step / e.seconds : 0.0, e.loss, e.accuracy,
                 e.eval_seconds);
    std::fflush(file_);
  }

 private:
  std::FILE* file_ = nullptr;
};

// --slowdown TASK=F: the factor for this task, 1 when the option names another task.
double slowdown_for(const settings& s, const dsgd::cluster::task_id& task) {
  if (s.slowdown.empty()) return 1;
  const auto eq = s.slowdown.find('=');
  const std::string who = s.slowdown.substr(0, eq);
  return who == task.to_string() ? s.slowdown_factor : 1;
}

template <class Model, class Rule>
int train(const settings& s) {
  using optimizer = dsgd::optim::exponential_decay<dsgd::optim::momentum>;
  using trainer = dsgd::trainer<cpu, dsgd::placement::greedy_by_bytes, Rule, optimizer>;
  using clock = std::chrono::steady_clock;
  constexpr bool sync = std::is_same_v<Rule, dsgd::update::sync_average>;
  auto role = dsgd::cluster::resolve_from_environment(s.layout);
  // Every task computes the schedule and the rule from the same arguments and cluster, so the
  // ps tasks apply what the workers expect.
  const std::size_t replicas = dsgd::cluster::replicas::count(role.cluster);
  if (s.backup > 0 && !sync)
    throw dsgd::error(dsgd::errc::invalid_argument, "--backup " + std::to_string(s.backup) +
                                                        ": backup workers need --rule sync, not " + s.rule);
  if (s.backup >= replicas)
    throw dsgd::error(dsgd::errc::invalid_argument, "--backup " + std::to_string(s.backup) + ": must be below the " +
                                                        std::to_string(replicas) + " workers of the cluster");
  const std::size_t shard = (dsgd::data::fashion_mnist::train_images.count + replicas - 1) / replicas;
  const std::size_t batches_per_epoch = (shard + s.batch - 1) / s.batch;
  // An epoch of the schedule, in global steps, is about one pass over the training set: under
  // sync a step averages `aggregated` batches; async and SSP apply every batch as a step.
  const std::size_t aggregated = sync ? replicas - s.backup : 1;
  const std::size_t steps_per_epoch = (batches_per_epoch * replicas + aggregated - 1) / aggregated;
  typename trainer::options o;
  o.connection.token = token();
  o.serving.listen = s.listen;
  o.requests.startup_timeout = std::chrono::milliseconds(static_cast<long long>(s.startup_timeout_s * 1000));
  o.optimizer = {{s.lr, s.momentum, false}, s.decay, steps_per_epoch, true};
  if constexpr (sync) o.rule.replicas_to_aggregate = s.backup > 0 ? aggregated : 0;
  trainer t(role.cluster, role.task, o);
  if (t.is_ps()) {
    t.join();
    return 0;
  }
  const double slowdown = slowdown_for(s, t.task());
  const auto train_set = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::train);
  const auto test_set = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::test);
  csv_log csv(t.is_chief() ? s : settings{});
  Model net(cpu{});
  t.create_variables(net.parameters(), net.names());
  dsgd::model::shuffled_batches batches(
      train_set, {.batch = s.batch, .seed = 1000 + t.replica(), .shard = t.replica(), .shards = t.replicas()});
  if (slowdown > 1) std::printf("straggler: every step sleeps %.1fx its compute time\n", slowdown - 1);
  if (t.is_chief()) std::printf("matrix products: %s\n", dsgd::model::blas_description().c_str());

  // Every worker runs until the global step reaches the last step of the last epoch (TF's
  // StopAtStepHook on the global step), so a straggler stops with the others instead of
  // working through its own epochs after they have finished. The chief evaluates whenever
  // the global step crosses an epoch of the schedule.
  const std::uint64_t last_step = static_cast<std::uint64_t>(s.epochs) * steps_per_epoch;
  const auto start = clock::now();
  auto since_start = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
  std::size_t dropped = 0, local_steps = 0, interval_steps = 0, interval_examples = 0;
  std::size_t next_eval = 1;
  double interval_loss = 0, accuracy = 0;
  auto interval_start = clock::now();
  while (t.step() < last_step) {
    const auto b = batches.next();
    const auto compute_start = clock::now();
    const float loss = net.forward_backward(b.images, b.labels, b.size);
    if (slowdown > 1) std::this_thread::sleep_for((clock::now() - compute_start) * (slowdown - 1));
    // Push, and pull the values of the next step, as one exchange (the pull goes out right
    // behind the push). A dropped push: some shard had moved on, a backup came late.
    if (t.push_pull(net.gradients(), net.parameters()) > 0) ++dropped;
    ++local_steps;
    ++interval_steps;
    interval_examples += b.size;
    interval_loss += static_cast<double>(loss) * static_cast<double>(b.size);
    const double mean_loss = interval_loss / static_cast<double>(interval_examples);
    if (t.is_chief()) {
      if (t.step() < next_eval * steps_per_epoch) continue;
      const std::size_t epoch = std::min<std::size_t>(t.step() / steps_per_epoch, s.epochs);
      const auto eval_start = clock::now();
      accuracy = net.accuracy(test_set);
      const double eval_seconds = std::chrono::duration<double>(clock::now() - eval_start).count();
      const evaluation e{epoch, since_start(), t.step(), mean_loss, accuracy, eval_seconds};
      // A global step applies `aggregated` batches (sync) or one (async, SSP).
      const double steps_per_second = e.step / e.seconds;
      std::printf("epoch %2zu  %7.1f s  step %6llu  %6.1f steps/s  %7.0f examples/s  loss %.4f  test accuracy %.4f\n",
                  e.epoch, e.seconds, static_cast<unsigned long long>(e.step), steps_per_second,
                  steps_per_second * static_cast<double>(aggregated * s.batch), e.loss, e.accuracy);
      csv.write(s, t.replicas(), e);
      next_eval = epoch + 1;
    } else {
      // Other workers report their own passes over their shard.
      if (batches.epochs() < next_eval) continue;
      const double seconds = std::chrono::duration<double>(clock::now() - interval_start).count();
      std::printf("pass %2zu over its shard  %7.1f s  loss %.4f  %6.1f steps/s (this worker)  %7.0f examples/s\n",
                  batches.epochs(), since_start(), mean_loss, interval_steps / seconds, interval_examples / seconds);
      next_eval = batches.epochs() + 1;
    }
    std::fflush(stdout);
    interval_steps = interval_examples = 0;
    interval_loss = 0;
    interval_start = clock::now();
  }
  const double seconds = since_start();
  t.finish();
  std::printf("%s done: %zu steps of its own in %.1f s (%.1f steps/s), %zu gradients dropped as stale\n",
              t.task().to_string().c_str(), local_steps, seconds, local_steps / seconds, dropped);
  if (!t.is_chief()) return 0;
  std::printf("final test accuracy %.4f (%s%s, %zu workers, %zu ps, %llu global steps in %.1f s = %.1f steps/s, "
              "%zu gradients dropped as stale)\n",
              accuracy, s.rule.c_str(), s.backup > 0 ? (" with " + std::to_string(s.backup) + " backup").c_str() : "",
              t.replicas(), t.cluster().num_tasks("ps"), static_cast<unsigned long long>(t.step()), seconds,
              t.step() / seconds, dropped);
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
      else if (a == "--backup") s.backup = std::stoul(value());
      else if (a == "--slowdown") parse_slowdown(s, value());
      else if (a == "--csv") s.csv = value();
      else if (a == "--num-ps") s.layout.num_ps = std::stoi(value());
      else if (a == "--listen") s.listen = value();
      else if (a == "--startup-timeout") s.startup_timeout_s = std::stod(value());
      else if (a == "--base-port") s.layout.base_port = static_cast<std::uint16_t>(std::stoul(value()));
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
