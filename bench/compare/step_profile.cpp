// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Where the time of a dsgd sync step goes (docs/compare.md, "Step-time breakdown"): the
// training step of dsgd-train (Fashion-MNIST MLP 784-256-128-10, batch 64 per worker,
// update::sync_average, momentum with dsgd-train's schedule), timed per phase on every worker:
//
//   data     the next batch copied out of the shard (shuffled_batches::next)
//   compute  forward and backward (feed_forward::forward_backward)
//   push     the gradients sent to the ps and acknowledged
//   pull     the values of the next step: under sync this waits until the ps has every
//            worker's gradient of the step and has applied their average, so the wait for the
//            slower worker lands here
//   step     all four, back to back (dsgd-train's order: compute, push, pull)
//
// With --overlap the step runs through trainer::overlap instead: each gradient is pushed as the
// backward pass finishes it, the next step's values are pulled while the next batch is drawn,
// and the forward pass waits for each layer's values only when it reaches that layer. Then
// compute is forward and backward with those waits inside, push is end_step() (the rest of the
// push, sending the pull, the push's answers), and pull is 0. With --push-pull the step's push
// and pull are one exchange (trainer::push_pull: the pull sent right behind the push); push is
// that exchange and pull is 0. With --session the same cluster runs dsgd-train's monitored
// session (train::monitored_session with its stop-at-step and summary hooks, summaries every
// 100 steps with a histogram of every weight, checkpoints every 60 s into a temporary logdir)
// in blocks of 50 steps alternating with blocks of bare push_pull steps on the same trainer, and
// prints a row for each ("session", "bare_push_pull") and their ratio:
//   session_ratio,task,session_step_ms,bare_push_pull_step_ms,ratio
//
// After --warmup steps, every worker times --steps steps and prints one CSV row of medians
// over them (comm is the median of step - compute per step, not a difference of medians):
//   profile,mode,task,steps,step_ms,compute_ms,push_ms,pull_ms,data_ms,comm_ms,mean_step_ms
//
//   dsgd-launch --ps 1 --workers 2 -- step_profile [--steps N] [--warmup N] [--batch N]
//   dsgd-launch --ps 1 --workers 2 -- step_profile --exchange-only    # no compute: push + pull only
//   dsgd-launch --ps 1 --workers 2 -- step_profile --overlap          # the step through trainer::overlap
//   dsgd-launch --ps 1 --workers 2 -- step_profile --push-pull        # push and pull as one exchange
//   dsgd-launch --ps 1 --workers 2 -- step_profile --session          # monitored session vs bare push_pull
//   step_profile --local [--steps N] ...   # compute alone in one process, no cluster (baseline)
//   step_profile --solo ...                # one process training alone: compute + the momentum
//                                          # update in place (the rate that 2 workers should double)
//   ... --hidden 1024,1024                 # the MLP's hidden widths (default 256,128), any mode
//   ... --rule async                       # the cluster under update::async (dsgd-train's async
//                                          # rate: lr 0.01, decay 0.8 per epoch of 938 steps)
//
// bench/compare/step_profile.sh runs these next to a gloo allreduce of the same bytes.
#include <dsgd/cluster/token.hpp>
#include <dsgd/data/fashion_mnist.hpp>
#include <dsgd/model/blas.hpp>
#include <dsgd/model/mlp.hpp>
#include <dsgd/model/train.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/placement/greedy_by_bytes.hpp>
#include <dsgd/train/monitored_session.hpp>
#include <dsgd/train/summary_writer.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include <unistd.h>

namespace {

using cpu = dsgd::device::cpu;
using clock_type = std::chrono::steady_clock;

struct settings {
  bool local = false;          // compute alone, no cluster
  bool exchange_only = false;  // cluster without compute: push + pull of the (zero) gradients
  bool overlap = false;        // the step through trainer::overlap
  bool push_pull = false;      // push then pull as one exchange (trainer::push_pull)
  bool session = false;        // the monitored session against bare push_pull, in alternating blocks
  bool solo = false;           // one process: compute and the momentum update, no cluster
  bool async = false;          // the cluster under update::async
  std::vector<std::size_t> hidden{256, 128};
  std::size_t steps = 500;
  std::size_t warmup = 100;
  std::size_t batch = 64;
};

// Per-step times in milliseconds of the measured steps.
struct phases {
  std::vector<double> data, compute, push, pull, step;
};

double ms(clock_type::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (v.size() % 2 == 1) return *mid;
  return (*mid + *std::max_element(v.begin(), mid)) / 2;
}

void print_row(const char* mode, const std::string& task, const phases& p) {
  std::vector<double> comm(p.step.size());
  for (std::size_t i = 0; i < comm.size(); ++i) comm[i] = p.step[i] - p.compute[i];
  const double mean = p.step.empty() ? 0 : std::accumulate(p.step.begin(), p.step.end(), 0.0) / p.step.size();
  std::printf("profile,%s,%s,%zu,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f\n", mode, task.c_str(), p.step.size(),
              median(p.step), median(p.compute), median(p.push), median(p.pull), median(p.data), median(comm), mean);
  std::fflush(stdout);
}

// CPU time and context switches of this process so far (getrusage): what a step costs beyond
// its wall time, and how often it sleeps (voluntary switches: a wait for a message) or is
// preempted (involuntary: another process wanted the core).
struct usage {
  double user_ms = 0, sys_ms = 0;
  long voluntary = 0, involuntary = 0;
};
usage usage_now() {
  rusage r{};
  ::getrusage(RUSAGE_SELF, &r);
  auto ms = [](const timeval& t) { return double(t.tv_sec) * 1e3 + double(t.tv_usec) / 1e3; };
  return {ms(r.ru_utime), ms(r.ru_stime), r.ru_nvcsw, r.ru_nivcsw};
}
// usage,task,steps,user_ms_per_step,sys_ms_per_step,voluntary_per_step,involuntary_per_step
// (a ps prints its totals with steps 1: its rows are divided by the workers' step count later).
void print_usage(const char* what, const std::string& task, const usage& a, const usage& b, std::size_t steps) {
  const double n = double(steps == 0 ? 1 : steps);
  std::printf("%s,%s,%zu,%.4f,%.4f,%.3f,%.3f\n", what, task.c_str(), steps, (b.user_ms - a.user_ms) / n,
              (b.sys_ms - a.sys_ms) / n, double(b.voluntary - a.voluntary) / n,
              double(b.involuntary - a.involuntary) / n);
  std::fflush(stdout);
}

std::string token() {
  return dsgd::cluster::token_from_environment(
      [](std::string_view m) { std::fprintf(stderr, "%.*s\n", static_cast<int>(m.size()), m.data()); });
}

// The baseline: the same batches (shard 0 of 2) and forward/backward, nothing else.
// With --solo, each step also applies optim::momentum to the parameters in place, as a ps would.
int run_local(const settings& s) {
  std::printf("matrix products: %s\n", dsgd::model::blas_description().c_str());
  const auto train_set = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::train);
  dsgd::model::mlp<cpu> net(cpu{}, {.hidden = s.hidden});
  const dsgd::optim::momentum momentum{0.05f, 0.9f, false};
  std::vector<dsgd::optim::momentum::state<cpu>> slots;
  for (const auto& w : net.parameters()) slots.emplace_back(cpu{}, w.size());
  dsgd::model::shuffled_batches batches(train_set, {.batch = s.batch, .seed = 1000, .shard = 0, .shards = 2});
  phases p;
  for (std::size_t i = 0; i < s.warmup + s.steps; ++i) {
    const auto t0 = clock_type::now();
    const auto b = batches.next();
    const auto t1 = clock_type::now();
    net.forward_backward(b.images, b.labels, b.size);
    const auto t2 = clock_type::now();
    if (s.solo)
      for (std::size_t v = 0; v < slots.size(); ++v)
        momentum.apply(cpu{}, slots[v], net.parameters()[v].data(), net.gradients()[v].data(),
                       slots[v].velocity.size());
    const auto t3 = clock_type::now();
    if (i < s.warmup) continue;
    p.data.push_back(ms(t1 - t0));
    p.compute.push_back(ms(t2 - t1));
    p.push.push_back(ms(t3 - t2));  // --solo: the update
    p.pull.push_back(0);
    p.step.push_back(ms(t3 - t0));
  }
  print_row(s.solo ? "solo" : "local", s.solo ? "solo" : "local", p);
  return 0;
}

// --session: dsgd-train's session on trainer @p t (variables not yet created), its steps in
// blocks of 50 alternating with blocks of bare push_pull steps, so that both see the same load.
template <class Trainer, class Net, class Batches>
int run_session(const settings& s, Trainer& t, Net& net, Batches& batches, std::size_t steps_per_epoch) {
  namespace fs = std::filesystem;
  const auto logdir = fs::temp_directory_path() / ("dsgd_step_profile_" + std::to_string(::getpid()));
  std::unique_ptr<dsgd::train::summary_writer> summaries;
  std::vector<std::unique_ptr<dsgd::train::session_hook<cpu>>> hooks;
  hooks.push_back(std::make_unique<dsgd::train::stop_at_step_hook<cpu>>(~std::uint64_t{0}));
  if (t.is_chief()) {
    summaries = std::make_unique<dsgd::train::summary_writer>(logdir);
    const dsgd::optim::exponential_decay<dsgd::optim::momentum> schedule{
        {0.05f, 0.9f, false}, 0.7f, steps_per_epoch, true};
    hooks.push_back(
        std::make_unique<dsgd::train::summary_hook<cpu>>(*summaries, 100, 2 * s.batch, [=](std::uint64_t step) {
          return std::vector<std::pair<std::string, float>>{{"learning_rate", schedule.learning_rate_at(step)}};
        }));
  }
  dsgd::train::monitored_session<Trainer> session(
      t, net.parameters(), net.names(), std::move(hooks),
      {.checkpoint_dir = t.is_chief() ? logdir : fs::path(), .save_checkpoint_secs = std::chrono::seconds(60)});
  constexpr std::size_t block = 50;
  phases in_session, bare;
  for (std::size_t i = 0; i < s.warmup + 2 * s.steps; ++i) {
    const bool through_session = (i / block) % 2 == 1;
    const auto t0 = clock_type::now();
    const auto b = batches.next();
    const auto t1 = clock_type::now();
    const float loss = net.forward_backward(b.images, b.labels, b.size);
    const auto t2 = clock_type::now();
    if (through_session) session.run(loss, net.gradients());
    else t.push_pull(net.gradients(), net.parameters());
    const auto t3 = clock_type::now();
    if (i < s.warmup) continue;
    auto& p = through_session ? in_session : bare;
    p.data.push_back(ms(t1 - t0));
    p.compute.push_back(ms(t2 - t1));
    p.push.push_back(ms(t3 - t2));
    p.pull.push_back(0);
    p.step.push_back(ms(t3 - t0));
  }
  session.close();
  summaries.reset();
  std::error_code ignored;
  fs::remove_all(logdir, ignored);
  print_row("session", t.task().to_string(), in_session);
  print_row("bare_push_pull", t.task().to_string(), bare);
  std::printf("session_ratio,%s,%.4f,%.4f,%.4f\n", t.task().to_string().c_str(), median(in_session.step),
              median(bare.step), median(in_session.step) / median(bare.step));
  std::fflush(stdout);
  return 0;
}

// One task of the cluster, set up as dsgd-train --rule sync (or async) sets it up.
template <class Rule>
int run_cluster(const settings& s) {
  using optimizer = dsgd::optim::exponential_decay<dsgd::optim::momentum>;
  using trainer = dsgd::trainer<cpu, dsgd::placement::greedy_by_bytes, Rule, optimizer>;
  constexpr bool sync = std::is_same_v<Rule, dsgd::update::sync_average>;
  auto role = dsgd::cluster::resolve_from_environment();
  const std::size_t replicas = dsgd::cluster::replicas::count(role.cluster);
  const std::size_t shard = (dsgd::data::fashion_mnist::train_images.count + replicas - 1) / replicas;
  // sync: a step averages one batch of every worker; async: a step is one batch.
  const std::size_t steps_per_epoch = (shard + s.batch - 1) / s.batch * (sync ? 1 : replicas);
  typename trainer::options o;
  o.connection.token = token();
  o.optimizer = sync ? optimizer{{0.05f, 0.9f, false}, 0.7f, steps_per_epoch, true}
                     : optimizer{{0.01f, 0.9f, false}, 0.8f, steps_per_epoch, true};
  trainer t(role.cluster, role.task, o);
  if (t.is_ps()) {
    // The ps's whole life: serving, applying, waiting; per global step once the workers say
    // how many there were (the usage rows of the workers and the ps are read together).
    const auto before = usage_now();
    t.join();
    print_usage("ps_usage", t.task().to_string(), before, usage_now(), 1);
    return 0;
  }
  const auto train_set = dsgd::data::fashion_mnist::load(dsgd::data::fashion_mnist::split::train);
  dsgd::model::mlp<cpu> net(cpu{}, {.hidden = s.hidden});
  if (!s.session) t.create_variables(net.parameters(), net.names());  // the session creates them
  dsgd::model::shuffled_batches batches(
      train_set, {.batch = s.batch, .seed = 1000 + t.replica(), .shard = t.replica(), .shards = t.replicas()});
  phases p;
  usage measured_from = usage_now();
  auto record = [&](std::size_t i, clock_type::time_point t0, clock_type::time_point t1, clock_type::time_point t2,
                    clock_type::time_point t3, clock_type::time_point t4) {
    if (i + 1 == s.warmup) measured_from = usage_now();  // the usage of the measured steps only
    if (i < s.warmup) return;
    p.data.push_back(ms(t1 - t0));
    p.compute.push_back(ms(t2 - t1));
    p.push.push_back(ms(t3 - t2));
    p.pull.push_back(ms(t4 - t3));
    p.step.push_back(ms(t4 - t0));
  };
  // Every worker makes the same number of pushes, so under sync all finish on the same step.
  if (s.session) return run_session(s, t, net, batches, steps_per_epoch);
  if (s.overlap) {
    auto ex = t.overlapped(net.parameters(), net.gradients());
    for (std::size_t i = 0; i < s.warmup + s.steps; ++i) {
      const auto t0 = clock_type::now();
      const auto b = batches.next();
      const auto t1 = clock_type::now();
      net.forward_backward(b.images, b.labels, b.size, ex);
      const auto t2 = clock_type::now();
      ex.end_step();
      const auto t3 = clock_type::now();
      record(i, t0, t1, t2, t3, t3);
    }
    ex.step();
  } else {
    for (std::size_t i = 0; i < s.warmup + s.steps; ++i) {
      const auto t0 = clock_type::now();
      const auto b = batches.next();
      const auto t1 = clock_type::now();
      if (!s.exchange_only) net.forward_backward(b.images, b.labels, b.size);
      const auto t2 = clock_type::now();
      if (s.push_pull) {
        t.push_pull(net.gradients(), net.parameters());
        const auto t3 = clock_type::now();
        record(i, t0, t1, t2, t3, t3);
        continue;
      }
      t.push(net.gradients());
      const auto t3 = clock_type::now();
      t.pull(net.parameters());
      const auto t4 = clock_type::now();
      record(i, t0, t1, t2, t3, t4);
    }
  }
  t.finish();
  print_usage("usage", t.task().to_string(), measured_from, usage_now(), s.steps);
  const char* mode = s.overlap ? "overlap" : s.exchange_only ? "exchange" : s.push_pull ? "push_pull" : "sync";
  print_row(sync ? mode : (std::string("async_") + mode).c_str(), t.task().to_string(), p);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto count = [&]() -> std::size_t {
      if (i + 1 >= argc) throw dsgd::error(dsgd::errc::invalid_argument, a + " needs a value");
      const std::string v = argv[++i];
      std::size_t used = 0;
      unsigned long n = 0;
      try {
        n = std::stoul(v, &used);
      } catch (const std::logic_error&) {
        used = 0;
      }
      if (used != v.size() || v.empty() || v[0] == '-')
        throw dsgd::error(dsgd::errc::invalid_argument, a + " " + v + ": expected a whole number");
      return n;
    };
    try {
      if (a == "--local") s.local = true;
      else if (a == "--exchange-only") s.exchange_only = true;
      else if (a == "--overlap") s.overlap = true;
      else if (a == "--push-pull") s.push_pull = true;
      else if (a == "--session") s.session = true;
      else if (a == "--solo") s.local = s.solo = true;
      else if (a == "--rule") {
        const std::string r = i + 1 < argc ? argv[++i] : "";
        if (r != "sync" && r != "async")
          throw dsgd::error(dsgd::errc::invalid_argument, "--rule " + r + ": expected sync or async");
        s.async = r == "async";
      } else if (a == "--hidden") {
        const std::string v = i + 1 < argc ? argv[++i] : "";
        s.hidden.clear();
        for (std::size_t at = 0; at <= v.size();) {
          const auto comma = std::min(v.find(',', at), v.size());
          const auto w = v.substr(at, comma - at);
          if (w.empty() || w.find_first_not_of("0123456789") != std::string::npos || std::stoul(w) == 0)
            throw dsgd::error(dsgd::errc::invalid_argument, "--hidden " + v + ": expected widths like 1024,1024");
          s.hidden.push_back(std::stoul(w));
          at = comma + 1;
        }
      } else if (a == "--steps") s.steps = count();
      else if (a == "--warmup") s.warmup = count();
      else if (a == "--batch") s.batch = count();
      else throw dsgd::error(dsgd::errc::invalid_argument, "unknown option " + a);
    } catch (const dsgd::error& e) {
      std::fprintf(stderr, "step_profile: %s\n", e.what());
      return 2;
    }
  }
  try {
    if (s.steps == 0 || s.batch == 0)
      throw dsgd::error(dsgd::errc::invalid_argument, "--steps and --batch must be > 0");
    if (s.local) return run_local(s);
    return s.async ? run_cluster<dsgd::update::async>(s) : run_cluster<dsgd::update::sync_average>(s);
  } catch (const dsgd::error& e) {
    std::fprintf(stderr, "step_profile: %s\n", e.what());
    return 1;
  }
}
