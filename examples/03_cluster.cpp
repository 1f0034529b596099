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
// With --logdir DIR the job runs as TensorFlow's MonitoredTrainingSession does: the chief
// restores the latest checkpoint in DIR when there is one, checkpoints every --save-secs
// seconds and/or --save-steps steps (keeping --keep), and writes TensorBoard summaries into DIR
// (loss, accuracy, examples/s, the learning rate, a histogram of every weight):
//   dsgd-launch --ps 2 --workers 2 -- ./03_cluster --rule sync --logdir /tmp/main_job
//   tensorboard --logdir /tmp/main_job
// A ps task that dies and is started again with the same role is then recovered by itself:
// every worker reconnects and the chief has every ps task restore the latest checkpoint (without
// --logdir it re-initialises them from its own last values). The options are in `usage` below
// (--help prints it); a bad option exits 2 naming it.
//
// Every worker trains until the global step reaches --epochs epochs of the schedule (about
// one pass over the training set each), so a straggler stops with the others; the chief
// evaluates the test accuracy each time the global step crosses an epoch.
#include <dsgd/cluster/cores.hpp>
#include <dsgd/compress/selection.hpp>
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
#include <dsgd/train/local_sgd.hpp>
#include <dsgd/train/monitored_session.hpp>
#include <dsgd/train/summary_writer.hpp>
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
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using cpu = dsgd::device::cpu;

struct settings {
  bool demo = false;
  std::string rule = "sync";
  std::string model = "mlp";
  std::vector<std::size_t> hidden{256, 128};  // the MLP's hidden widths
  std::uint64_t seed = 0;                     // the initial weights' seed; worker k shuffles with 1000 + k + 100 * seed
  std::size_t local_steps = 8;                // --rule local: local steps between averages
  std::size_t epochs = 12;
  std::size_t batch = 64;
  float lr = 0.05f;
  float momentum = 0.9f;
  float decay = 0.7f;  // learning rate multiplier per epoch
  double target = 0;
  std::size_t backup = 0;  // sync: aggregate workers - backup gradients per step
  std::string slowdown;    // "worker:2=3": that task's steps take 3x its compute time
  double slowdown_factor = 1;
  std::string csv;                    // the chief writes one line per evaluation here
  dsgd::cluster::rank_layout layout;  // under mpirun or srun: which ranks are ps tasks, ports
  std::string listen;                 // ps: where to listen ("" the spec's address, "*" any)
  std::size_t ps_threads = 1;         // ps: threads serving its connections
  double startup_timeout_s = 120;     // workers: how long to retry an unreachable ps
  std::string logdir;                 // checkpoints and TensorBoard summaries ("": neither)
  std::uint64_t save_steps = 0;       // chief: a checkpoint every N global steps (0: not by steps)
  std::uint64_t save_secs = 60;       // and/or every S seconds (0: not by time)
  std::size_t keep = 5;               // checkpoints kept
  std::uint64_t summary_steps = 100;  // summaries every N global steps
  std::uint64_t log_steps = 0;        // chief: a progress line every N global steps (0: epochs only)
  double recovery_timeout_s = 300;    // how long a lost session is re-created before giving up
  dsgd::compress::codec compress = dsgd::compress::none{};       // of every push
  dsgd::compress::codec pull_compress = dsgd::compress::none{};  // of every pull
};

const char* const usage = R"(usage: 03_cluster [--demo] [OPTIONS]
Every task of the cluster runs this program; TF_CONFIG (dsgd-launch), Open MPI or Slurm says
which one it is. The default job trains the Fashion-MNIST MLP data-parallel over the workers.

  --demo                 the article's case 3: w + b, w * b, w / b on ps-held variables
  --rule R               sync | async | ssp (bounded staleness 2) | local (local SGD:
                         each worker steps alone, the models averaged every
                         --local-steps steps)                               [sync]
  --local-steps K        --rule local: local steps between averages (>= 1)  [8]
  --model M              mlp (784-256-128-10) | softmax                     [mlp]
  --hidden W,W,...       the MLP's hidden widths, e.g. 1024,1024            [256,128]
  --seed N               seed of the initial weights and the data order     [0]
  --epochs N             passes over the training set                      [12]
  --batch N              examples per worker and step                      [64]
  --lr X                 learning rate (> 0)                                [0.05]
  --momentum X           momentum, in [0, 1)                                [0.9]
  --decay X              learning-rate multiplier per epoch, in (0, 1]      [0.7]
  --target ACC           exit 1 if the chief ends below this test accuracy  [0]
  --backup N             sync: each step averages the first workers - N gradients; the
                         slowest N are backups whose late gradients are dropped   [0]
  --slowdown TASK=F      that task sleeps after each step so that its step takes F times
                         its compute time (a straggler), e.g. worker:2=3
  --csv FILE             the chief writes one line per evaluation (bench/straggler/run.sh)
  --logdir DIR           checkpoints and TensorBoard summaries in DIR; the chief restores
                         the latest checkpoint there on start
  --save-secs S          with --logdir: a checkpoint every S seconds (0: not by time) [60]
  --save-steps N         with --logdir: a checkpoint every N global steps (0: not by steps) [0]
  --keep K               with --logdir: checkpoints kept (>= 1)             [5]
  --summary-steps N      with --logdir: summaries every N global steps (>= 1)   [100]
  --log-steps N          chief: a progress line every N global steps (0: per epoch only) [0]
  --recovery-timeout S   how long a session lost with a ps is re-created before the task
                         gives up (0: fail at once)                         [300]
  --compress C           pushes as none | fp16 | bf16 | top_k(RATIO) | two_bit(THRESHOLD),
                         the last two with error feedback (docs/compression.md)   [none]
  --pull-compress C      pulls as none | fp16 | bf16                        [none]
  --num-ps N             under mpirun or srun: ranks 0..N-1 are the ps tasks   [1]
  --base-port P          under mpirun or srun: rank r listens on P + r         [2222]
  --listen ADDR          ps: "*" any address, an IP, "if:NAME" [the spec's address]
  --ps-threads N         ps: threads serving its connections, 1 to 1024     [1]
  --startup-timeout S    workers: retry an unreachable or unresolvable ps this long [120]
  --help                 this text

Environment: TF_CONFIG (the task), DSGD_CLUSTER_TOKEN, DSGD_MIN_REPLICAS (an elastic job: the
spec's workers are slots and a sync step needs at least this many replicas; dsgd-launch
--workers MIN:MAX sets it).

Exit status: 0 done (at --target or above), 1 a failure or below --target, 2 a bad option.
)";

// A bad command line: main() prints it with a pointer to --help and exits 2.
struct usage_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// "--epochs 12": a whole number of at least @p min, nothing after it.
std::uint64_t parse_whole(const std::string& option, const std::string& v, std::uint64_t min = 0,
                          std::uint64_t max = std::numeric_limits<std::uint64_t>::max()) {
  std::size_t used = 0;
  unsigned long long n = 0;
  try {
    if (!v.empty() && v[0] != '-' && v[0] != '+') n = std::stoull(v, &used);
  } catch (const std::logic_error&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || n < min || n > max)
    throw usage_error(option + " " + v + ": expected a whole number from " + std::to_string(min) +
                      (max == std::numeric_limits<std::uint64_t>::max() ? " up" : " to " + std::to_string(max)));
  return n;
}

// "--hidden 1024,1024": whole numbers of at least 1, separated by commas.
std::vector<std::size_t> parse_widths(const std::string& option, const std::string& v) {
  std::vector<std::size_t> widths;
  std::size_t at = 0;
  while (true) {
    const auto comma = v.find(',', at);
    widths.push_back(parse_whole(option, v.substr(at, comma == std::string::npos ? comma : comma - at), 1, 1 << 20));
    if (comma == std::string::npos) return widths;
    at = comma + 1;
  }
}

// "--compress top_k(0.01)": a codec as compress::describe() writes it; a pull's sends values,
// so it cannot keep a residual.
dsgd::compress::codec parse_codec(const std::string& option, const std::string& v, bool pull) {
  dsgd::compress::codec c;
  try {
    c = dsgd::compress::parse(v);
  } catch (const dsgd::error& e) {
    throw usage_error(option + ": " + e.what());
  }
  if (pull && dsgd::compress::uses_residual(c))
    throw usage_error(option + " " + v + ": a pull sends values, which keep no residual: expected none, fp16 or bf16");
  return c;
}

// 0.05 as "0.05", 1e9 as "1e+09".
std::string shortest(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// "--lr 0.05": a number in [lo, hi] (or (lo, hi] when @p open_low), nothing after it.
double parse_real(const std::string& option, const std::string& v, double lo, double hi, bool open_low = false,
                  bool open_high = false) {
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::logic_error&) {
    used = 0;
  }
  const bool inside = (open_low ? x > lo : x >= lo) && (open_high ? x < hi : x <= hi);
  if (used == 0 || used != v.size() || !inside)
    throw usage_error(option + " " + v + ": expected a number in " + (open_low ? "(" : "[") + shortest(lo) + ", " +
                      (hi == std::numeric_limits<double>::max() ? "inf" : shortest(hi)) + (open_high ? ")" : "]"));
  return x;
}

// --slowdown TASK=F, e.g. worker:2=3 (F >= 1).
void parse_slowdown(settings& s, const std::string& v) {
  const auto eq = v.find('=');
  const auto colon = v.find(':');
  if (eq == std::string::npos || colon == std::string::npos || colon > eq || colon == 0 || eq + 1 == v.size())
    throw usage_error("--slowdown " + v + ": expected TASK=FACTOR, e.g. worker:2=3");
  std::size_t used = 0;
  double f = 0;
  try {
    f = std::stod(v.substr(eq + 1), &used);
  } catch (const std::logic_error&) {
    used = 0;
  }
  if (used != v.size() - eq - 1 || !(f >= 1))
    throw usage_error("--slowdown " + v + ": factor at column " + std::to_string(eq + 2) + " must be a number >= 1");
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

// The chief's record of one evaluation, printed and (with --csv) appended to a file.
struct evaluation {
  std::size_t epoch;
  double seconds;      // wall time since the variables were ready
  std::uint64_t step;  // global step of the values evaluated
  double loss;         // the chief's mean training loss since the previous evaluation
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
    std::fprintf(file_,
                 "rule,workers,backup,slowdown,epoch,wall_s,global_step,steps_per_s,train_loss,test_accuracy,eval_s,"
                 "examples_per_step\n");
    std::fflush(file_);
  }
  csv_log(const csv_log&) = delete;
  csv_log& operator=(const csv_log&) = delete;
  ~csv_log() {
    if (file_) std::fclose(file_);
  }
  // @p examples_per_step: what a global step trains (all workers' batches, times K under local SGD).
  void write(const settings& s, std::size_t workers, std::size_t examples_per_step, const evaluation& e) {
    if (!file_) return;
    std::fprintf(file_, "%s,%zu,%zu,%s,%zu,%.3f,%llu,%.2f,%.5f,%.4f,%.3f,%zu\n", s.rule.c_str(), workers, s.backup,
                 s.slowdown.empty() ? "none" : s.slowdown.c_str(), e.epoch, e.seconds,
                 static_cast<unsigned long long>(e.step), e.seconds > 0 ? e.step / e.seconds : 0.0, e.loss, e.accuracy,
                 e.eval_seconds, examples_per_step);
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

// The model of @p s: the MLP with its --hidden widths, or softmax regression.
template <class Model>
Model make_model(const settings& s) {
  if constexpr (std::is_same_v<Model, dsgd::model::mlp<cpu>>) return Model(cpu{}, {.hidden = s.hidden, .seed = s.seed});
  else return Model(cpu{}, {.seed = s.seed});
}

template <class Model, class Rule>
int train(const settings& s) {
  using optimizer = dsgd::optim::exponential_decay<dsgd::optim::momentum>;
  using trainer = dsgd::trainer<cpu, dsgd::placement::greedy_by_bytes, Rule, optimizer>;
  using session_type = dsgd::train::monitored_session<trainer>;
  using clock = std::chrono::steady_clock;
  constexpr bool sync = std::is_same_v<Rule, dsgd::update::sync_average>;
  auto role = dsgd::cluster::resolve_from_environment(s.layout);
  // Tasks that share this host's cores (under mpirun or srun; dsgd-launch sets OMP_NUM_THREADS
  // itself) take one share each, OpenMP and BLAS alike, unless OMP_NUM_THREADS says otherwise.
  if (const auto share = dsgd::cluster::share_cores(role.cluster, role.task, [](std::string_view line) {
        std::printf("%.*s\n", static_cast<int>(line.size()), line.data());
      }))
    dsgd::model::set_blas_threads(share->threads);
  // Every task computes the schedule and the rule from the same arguments and cluster, so the
  // ps tasks apply what the workers expect.
  const std::size_t replicas = dsgd::cluster::replicas::count(role.cluster);
  if (s.backup >= replicas)
    throw usage_error("--backup " + std::to_string(s.backup) + ": must be below the " + std::to_string(replicas) +
                      " workers of the cluster");
  const std::size_t shard = (dsgd::data::fashion_mnist::train_images.count + replicas - 1) / replicas;
  const std::size_t batches_per_epoch = (shard + s.batch - 1) / s.batch;
  // An epoch of the schedule, in global steps, is about one pass over the training set: under
  // sync a step averages `aggregated` batches; async and SSP apply every batch as a step.
  const std::size_t aggregated = sync ? replicas - s.backup : 1;
  // Local SGD: a global step averages the models, each K local steps on, so K times fewer.
  const bool local = s.rule == "local";
  const std::size_t k = local ? s.local_steps : 1;
  const std::size_t steps_per_epoch = ((batches_per_epoch * replicas + aggregated - 1) / aggregated + k - 1) / k;
  const std::size_t examples_per_step = aggregated * s.batch * k;
  // Local SGD's workers run the optimizer, its rate decayed per pass over their shard; the ps
  // only averages (train/local_sgd.hpp: a plain step of 1 on the mean of the moves).
  const optimizer worker_optimizer{{s.lr, s.momentum, false}, s.decay, batches_per_epoch, true};
  typename trainer::options o;
  o.connection.token = token();
  o.serving.listen = s.listen;
  o.serving.threads = s.ps_threads;
  // An elastic job (dsgd-launch --workers MIN:MAX, or a StatefulSet scaled up and down): the
  // spec's workers are slots, and the ps averages each step over the members present.
  if (const char* min = std::getenv("DSGD_MIN_REPLICAS"); min && *min)
    o.serving.min_replicas = parse_whole("DSGD_MIN_REPLICAS", min, 1, replicas);
  // ps:0 of an elastic job with --logdir counts the members in the job's summaries
  // ("membership/workers" at the global step of each change), next to the chief's.
  std::unique_ptr<dsgd::train::summary_writer> membership;
  if (o.serving.min_replicas > 0 && !s.logdir.empty() && role.task.job == "ps" && role.task.index == 0) {
    membership = std::make_unique<dsgd::train::summary_writer>(s.logdir, ".ps0");
    o.serving.on_membership = [w = membership.get()](std::size_t members, std::uint64_t step) {
      w->scalar("membership/workers", static_cast<float>(members), static_cast<std::int64_t>(step));
      w->flush();
    };
  }
  o.compression = {.all = s.compress};
  o.pull_compression = {.all = s.pull_compress};
  o.requests.startup_timeout = std::chrono::milliseconds(static_cast<long long>(s.startup_timeout_s * 1000));
  o.optimizer = local ? optimizer{{1.f, 0.f, false}, 1.f, steps_per_epoch, true} : worker_optimizer;
  if (!local) o.optimizer.decay_steps = steps_per_epoch;
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
  Model net = make_model<Model>(s);
  // An elastic job's slots may stand empty: each worker then draws from the whole training set
  // in its own order rather than from its slot's shard, which nobody would read while it is empty.
  const bool elastic = o.serving.min_replicas > 0;
  dsgd::model::shuffled_batches batches(train_set, {.batch = s.batch,
                                                    .seed = 1000 + t.replica() + 100 * s.seed,
                                                    .shard = elastic ? 0 : t.replica(),
                                                    .shards = elastic ? 1 : t.replicas()});
  if (slowdown > 1) std::printf("straggler: every step sleeps %.1fx its compute time\n", slowdown - 1);
  if (t.is_chief()) std::printf("matrix products: %s\n", dsgd::model::blas_description().c_str());

  // Every worker runs until the global step reaches the last step of the last epoch (TF's
  // StopAtStepHook on the global step), so a straggler stops with the others instead of
  // working through its own epochs after they have finished. The chief evaluates whenever
  // the global step crosses an epoch of the schedule.
  const std::uint64_t last_step = static_cast<std::uint64_t>(s.epochs) * steps_per_epoch;
  // The chief alone writes summaries (TensorFlow's SummarySaverHook runs on the chief).
  std::unique_ptr<dsgd::train::summary_writer> summaries;
  std::vector<std::unique_ptr<dsgd::train::session_hook<cpu>>> hooks;
  hooks.push_back(std::make_unique<dsgd::train::stop_at_step_hook<cpu>>(last_step));
  if (t.is_chief() && s.log_steps > 0)
    hooks.push_back(std::make_unique<dsgd::train::logging_hook<cpu>>(std::cout, examples_per_step, s.log_steps));
  if (t.is_chief() && !s.logdir.empty()) {
    summaries = std::make_unique<dsgd::train::summary_writer>(s.logdir);
    hooks.push_back(std::make_unique<dsgd::train::summary_hook<cpu>>(
        *summaries, s.summary_steps, examples_per_step,
        [schedule = local ? worker_optimizer : o.optimizer, k](std::uint64_t step) {
          // Under sync a global step is one update of every variable; under async and SSP
          // one gradient applied: the count the schedule decays by. Local SGD's workers
          // decay by their own steps, k a global step.
          return std::vector<std::pair<std::string, float>>{{"learning_rate", schedule.learning_rate_at(step * k)}};
        }));
  }
  dsgd::train::session_options so;
  so.checkpoint_dir = s.logdir;
  so.save_checkpoint_steps = s.save_steps;
  so.save_checkpoint_secs = std::chrono::seconds(s.save_secs);
  so.keep_checkpoints = s.keep;
  so.recovery_timeout = std::chrono::seconds(static_cast<long long>(s.recovery_timeout_s));
  // Restores the latest checkpoint in --logdir (chief), or initialises; the others wait.
  session_type session(t, net.parameters(), net.names(), std::move(hooks), std::move(so));
  if (session.restored_step())
    std::printf("restored checkpoint %llu from %s: resuming at step %llu of %llu\n",
                static_cast<unsigned long long>(*session.restored_step()), s.logdir.c_str(),
                static_cast<unsigned long long>(session.step()), static_cast<unsigned long long>(last_step));
  if (t.is_chief() && !s.logdir.empty())
    std::printf("checkpoints and summaries in %s (tensorboard --logdir %s)\n", s.logdir.c_str(), s.logdir.c_str());
  std::fflush(stdout);

  std::optional<dsgd::train::local_sgd<optimizer, cpu>> local_sgd;
  if (local) local_sgd.emplace(cpu{}, worker_optimizer, k, net.parameters());
  const std::uint64_t first_step = session.step();
  const auto start = clock::now();
  auto since_start = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
  std::size_t dropped = 0, local_steps = 0, interval_steps = 0, interval_examples = 0;
  std::size_t next_eval = first_step / steps_per_epoch + 1;
  double interval_loss = 0, accuracy = 0;
  std::optional<std::uint64_t> evaluated_at;
  auto interval_start = clock::now();
  auto evaluate = [&](double mean_loss) {
    const std::size_t epoch = std::min<std::size_t>(session.step() / steps_per_epoch, s.epochs);
    const auto eval_start = clock::now();
    accuracy = net.accuracy(test_set);
    const double eval_seconds = std::chrono::duration<double>(clock::now() - eval_start).count();
    const evaluation e{epoch, since_start(), session.step(), mean_loss, accuracy, eval_seconds};
    // A global step applies `aggregated` batches (sync) or one (async, SSP).
    const double steps_per_second = e.seconds > 0 ? (e.step - first_step) / e.seconds : 0.0;
    std::printf("epoch %2zu  %7.1f s  step %6llu  %6.1f steps/s  %7.0f examples/s  loss %.4f  test accuracy %.4f\n",
                e.epoch, e.seconds, static_cast<unsigned long long>(e.step), steps_per_second,
                steps_per_second * static_cast<double>(examples_per_step), e.loss, e.accuracy);
    csv.write(s, t.replicas(), examples_per_step, e);
    if (summaries) summaries->scalar("accuracy", static_cast<float>(accuracy), static_cast<std::int64_t>(e.step));
    evaluated_at = e.step;
    next_eval = epoch + 1;
  };
  while (!session.should_stop() && session.step() < last_step) {
    const auto b = batches.next();
    const auto compute_start = clock::now();
    const float loss = net.forward_backward(b.images, b.labels, b.size);
    if (slowdown > 1) std::this_thread::sleep_for((clock::now() - compute_start) * (slowdown - 1));
    // Push, and pull the values of the next step, as one exchange; then the hooks and the
    // chief's checkpoints. A dropped push: some shard had moved on, a backup came late. Local
    // SGD steps alone and exchanges its move every k-th step, then goes on from the average.
    if (!local_sgd || local_sgd->step(net.gradients(), net.parameters())) {
      if (session.run(loss, local_sgd ? local_sgd->deltas() : net.gradients()) > 0) ++dropped;
      if (local_sgd) local_sgd->restart_from(net.parameters());
    }
    ++local_steps;
    ++interval_steps;
    interval_examples += b.size;
    interval_loss += static_cast<double>(loss) * static_cast<double>(b.size);
    const double mean_loss = interval_loss / static_cast<double>(interval_examples);
    if (t.is_chief()) {
      if (session.step() < next_eval * steps_per_epoch) continue;
      evaluate(mean_loss);
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
  // A job restored at its last step (or stopped between epochs) still reports the accuracy.
  if (t.is_chief() && evaluated_at != session.step())
    evaluate(interval_examples > 0 ? interval_loss / static_cast<double>(interval_examples) : 0.0);
  const double seconds = since_start();
  // The chief's last checkpoint, the hooks' end, and (chief) the cluster's shutdown.
  session.close();
  std::printf(
      "%s done: %zu steps of its own in %.1f s (%.1f steps/s), %zu gradients dropped as stale, "
      "%zu recoveries\n",
      t.task().to_string().c_str(), local_steps, seconds, local_steps / seconds, dropped, session.recoveries());
  if (!t.is_chief()) return 0;
  std::printf(
      "final test accuracy %.4f (%s%s, %zu workers, %zu ps, %llu global steps in %.1f s = %.1f steps/s, "
      "%zu gradients dropped as stale)\n",
      accuracy, s.rule.c_str(), s.backup > 0 ? (" with " + std::to_string(s.backup) + " backup").c_str() : "",
      t.replicas(), t.cluster().num_tasks("ps"), static_cast<unsigned long long>(session.step()), seconds,
      (session.step() - first_step) / seconds, dropped);
  return accuracy >= s.target ? 0 : 1;
}

template <class Model>
int train_with_rule(const settings& s) {
  if (s.rule == "sync" || s.rule == "local") return train<Model, dsgd::update::sync_average>(s);
  if (s.rule == "async") return train<Model, dsgd::update::async>(s);
  if (s.rule == "ssp") return train<Model, dsgd::update::bounded_staleness<2>>(s);
  throw usage_error("--rule " + s.rule + ": expected sync, async or ssp");
}

// The command line into @p s; @returns false after --help. @throws usage_error naming the option.
bool parse(settings& s, int argc, char** argv) {
  std::vector<std::string> needs_logdir;  // options that only mean something with --logdir
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw usage_error(a + " needs a value");
      return argv[++i];
    };
    auto with_logdir = [&](std::uint64_t min) {
      needs_logdir.push_back(a);
      return parse_whole(a, value(), min);
    };
    constexpr double inf = std::numeric_limits<double>::max();
    if (a == "--help" || a == "-h") return false;
    else if (a == "--demo") s.demo = true;
    else if (a == "--rule") s.rule = value();
    else if (a == "--model") s.model = value();
    else if (a == "--hidden") s.hidden = parse_widths(a, value());
    else if (a == "--seed") s.seed = parse_whole(a, value(), 0, 1'000'000);
    else if (a == "--local-steps") s.local_steps = parse_whole(a, value(), 1, 1'000'000);
    else if (a == "--epochs") s.epochs = parse_whole(a, value(), 1);
    else if (a == "--batch") s.batch = parse_whole(a, value(), 1);
    else if (a == "--lr") s.lr = static_cast<float>(parse_real(a, value(), 0, inf, true));
    else if (a == "--momentum") s.momentum = static_cast<float>(parse_real(a, value(), 0, 1, false, true));
    else if (a == "--decay") s.decay = static_cast<float>(parse_real(a, value(), 0, 1, true));
    else if (a == "--target") s.target = parse_real(a, value(), 0, 1);
    else if (a == "--backup") s.backup = parse_whole(a, value());
    else if (a == "--slowdown") parse_slowdown(s, value());
    else if (a == "--csv") s.csv = value();
    else if (a == "--logdir") s.logdir = value();
    else if (a == "--save-secs") s.save_secs = with_logdir(0);
    else if (a == "--save-steps") s.save_steps = with_logdir(0);
    else if (a == "--keep") s.keep = with_logdir(1);
    else if (a == "--summary-steps") s.summary_steps = with_logdir(1);
    else if (a == "--log-steps") s.log_steps = parse_whole(a, value());
    else if (a == "--recovery-timeout") s.recovery_timeout_s = parse_real(a, value(), 0, 1e9);
    else if (a == "--compress") s.compress = parse_codec(a, value(), false);
    else if (a == "--pull-compress") s.pull_compress = parse_codec(a, value(), true);
    else if (a == "--num-ps") s.layout.num_ps = static_cast<int>(parse_whole(a, value(), 0, 1'000'000));
    else if (a == "--listen") s.listen = value();
    else if (a == "--ps-threads") s.ps_threads = parse_whole(a, value(), 1, 1024);
    else if (a == "--startup-timeout") s.startup_timeout_s = parse_real(a, value(), 0, 1e9, true);
    else if (a == "--base-port") s.layout.base_port = static_cast<std::uint16_t>(parse_whole(a, value(), 1, 65535));
    else throw usage_error("unknown option " + a);
  }
  if (s.rule != "sync" && s.rule != "async" && s.rule != "ssp" && s.rule != "local")
    throw usage_error("--rule " + s.rule + ": expected sync, async, ssp or local");
  if (s.model != "mlp" && s.model != "softmax") throw usage_error("--model " + s.model + ": expected mlp or softmax");
  if (s.backup > 0 && s.rule != "sync")
    throw usage_error("--backup " + std::to_string(s.backup) + ": backup workers need --rule sync, not " + s.rule);
  if (s.logdir.empty() && !needs_logdir.empty()) throw usage_error(needs_logdir.front() + " needs --logdir DIR");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  try {
    if (!parse(s, argc, argv)) {
      std::fputs(usage, stdout);
      return 0;
    }
    if (s.demo) return run_demo();
    if (s.model == "mlp") return train_with_rule<dsgd::model::mlp<cpu>>(s);
    return train_with_rule<dsgd::model::softmax_regression<cpu>>(s);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "03_cluster: %s (03_cluster --help lists the options)\n", e.what());
    return 2;
  } catch (const dsgd::error& e) {
    std::fprintf(stderr, "03_cluster: %s\n", e.what());
    return 1;
  }
}
