// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Throughput of the update rules on one parameter-server shard, in process: no transport, no
// serialisation, just W worker threads calling a rule's shard<cpu, O> the way a ps calls it on
// their behalf. So the figure is the cost of the policy itself: the lock, the accumulation,
// the optimizer pass, the snapshot copy and the waiting the rule imposes.
//
// Each worker owns a gradient and a pull buffer of the shard's size and runs the rule's
// protocol for a fixed number of rounds per benchmark iteration:
//   step = 0, pushes = 0
//   repeat: shard.push(w, step, g); ++pushes; step = shard.pull(w, Rule::next_pull(step, pushes), out)
// (sync_average: push at step s, pull s + 1; async: push, pull anything; bounded_staleness:
// push, pull at the worker's own clock).
//
// Metric: gradient bytes absorbed by the shard per second, W * rounds * N * 4 / seconds, and
// its ratio to a STREAM triad `a = b + s * c` over arrays of the same N floats, run through the
// same Thrust OpenMP policy right after every timed iteration ("x_triad"; triad bytes counted as
// 12 per element). "model_x_triad" is the ceiling of that ratio if every pass over memory the
// rule makes ran at the triad's rate (see docs/benchmarks.md). A second benchmark, pull_only,
// times the snapshot copy alone: W threads pulling from a shard nobody pushes to.
//
//   bench/update_rules/run.sh      (builds in build-bench, prints the markdown tables)
//   DSGD_BENCH_SHARD_ELEMENTS=65536,4194304 sets the shard sizes (floats).
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/sync_average.hpp>

#include <benchmark/benchmark.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using cpu = dsgd::device::cpu;
using wall_clock = std::chrono::steady_clock;

/// Threads each Thrust OpenMP kernel uses, in every thread: what `omp_get_max_threads()` says
/// in the main thread (OMP_NUM_THREADS, else the number of cores).
int kernel_threads() {
#if defined(_OPENMP)
  static const int n = omp_get_max_threads();
  return n;
#else
  return 1;
#endif
}

/// Sets the OpenMP team size of the calling thread: a std::thread does not inherit the value
/// omp_set_num_threads gave another thread.
void use_kernel_threads() {
#if defined(_OPENMP)
  omp_set_num_threads(kernel_threads());
#endif
}

/// Rounds each worker runs per benchmark iteration: 4 on a 4 Mi-float shard, 256 on 64 Ki
/// floats, so that an iteration moves tens of MiB and the barrier that starts it is amortised.
std::size_t rounds_for(std::size_t elements) {
  return std::clamp<std::size_t>((std::size_t{1} << 24) / elements, 4, 1024);
}

struct triad_kernel {
  float* a;
  const float* b;
  const float* c;
  float s;
  void operator()(std::size_t i) const { a[i] = b[i] + s * c[i]; }
};

struct fill_kernel {
  float* a;
  float base;
  float step;
  void operator()(std::size_t i) const { a[i] = base + step * float(i % 977); }
};

/// Three arrays of @p n floats, first touched by the OpenMP team that runs the triad on them.
class triad {
 public:
  explicit triad(std::size_t n) : a_(n), b_(n), c_(n) {
    fill(a_.data(), 0.f);
    fill(b_.data(), 0.5f);
    fill(c_.data(), 0.25f);
  }
  /// @returns the seconds @p passes triads took.
  double run(std::size_t passes) {
    const auto t0 = wall_clock::now();
    for (std::size_t p = 0; p < passes; ++p)
      thrust::for_each_n(cpu::policy(), thrust::counting_iterator<std::size_t>(0), a_.size(),
                         triad_kernel{a_.data(), b_.data(), c_.data(), 0.5f});
    return std::chrono::duration<double>(wall_clock::now() - t0).count();
  }
  std::size_t size() const noexcept { return a_.size(); }

 private:
  void fill(float* p, float base) {
    thrust::for_each_n(cpu::policy(), thrust::counting_iterator<std::size_t>(0), a_.size(),
                       fill_kernel{p, base, 1e-3f});
  }
  std::vector<float> a_, b_, c_;
};

/// W threads that each run `body(worker)` once per call to run_once(), started and collected
/// through two barriers so that thread creation stays out of the timed region.
class worker_pool {
 public:
  worker_pool(std::size_t workers, std::function<void(std::size_t)> body)
      : body_(std::move(body)),
        start_(std::ptrdiff_t(workers + 1)),
        done_(std::ptrdiff_t(workers + 1)),
        errors_(workers) {
    for (std::size_t w = 0; w < workers; ++w) threads_.emplace_back([this, w] { loop(w); });
  }
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;
  ~worker_pool() {
    stop_ = true;
    start_.arrive_and_wait();
    for (auto& t : threads_) t.join();
  }

  /// Runs every worker's body once. @returns the wall seconds from release to the last finish.
  double run_once() {
    const auto t0 = wall_clock::now();
    start_.arrive_and_wait();
    done_.arrive_and_wait();
    return std::chrono::duration<double>(wall_clock::now() - t0).count();
  }

  /// @returns the first worker error of the last run ("" when none).
  std::string error() const {
    for (const auto& e : errors_)
      if (!e.empty()) return e;
    return {};
  }

 private:
  void loop(std::size_t w) {
    use_kernel_threads();
    for (;;) {
      start_.arrive_and_wait();
      if (stop_) return;
      try {
        body_(w);
      } catch (const std::exception& e) {
        errors_[w] = "worker " + std::to_string(w) + ": " + e.what();
      }
      done_.arrive_and_wait();
    }
  }

  std::function<void(std::size_t)> body_;
  std::barrier<> start_;
  std::barrier<> done_;
  std::vector<std::string> errors_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

template <class O>
constexpr std::size_t slots_of() {
  if constexpr (std::is_same_v<O, dsgd::optim::adam>) {
    return 2;
  } else if constexpr (std::is_same_v<O, dsgd::optim::momentum>) {
    return 1;
  } else {
    return 0;
  }
}

/// The ratio gradient bytes / triad bytes the rule would reach if each of its passes over
/// memory ran at the triad's bytes-per-second (bytes counted as STREAM does: one per read, one
/// per write, no write-allocate). Optimizer pass: w and each slot read and written, g read.
template <class Rule, class O>
double model_x_triad(std::size_t workers) {
  const double apply = 4.0 * double(3 + 2 * slots_of<O>());
  const double copy = 8.0;  // pull: w read, out written
  const double w = double(workers);
  if constexpr (std::is_same_v<Rule, dsgd::update::sync_average>) {
    // Per step: W accumulates (acc read and written, g read), one apply of the mean, one fill
    // of the accumulator (written), W pulls.
    return 4.0 * w / (w * 12.0 + apply + 4.0 + w * copy);
  } else {
    // Per push: one apply under the lock, then that worker's pull.
    return 4.0 / (apply + copy);
  }
}

struct gradient_buffers {
  std::vector<std::vector<float>> grad, out;
  gradient_buffers(std::size_t workers, std::size_t n) : grad(workers), out(workers) {
    for (std::size_t w = 0; w < workers; ++w) {
      grad[w].resize(n);
      out[w].assign(n, 0.f);
      // Small, well-scaled gradients: no value drifts into denormals or overflow over the run.
      for (std::size_t i = 0; i < n; ++i) grad[w][i] = 1e-4f * float(1 + (i + w) % 13);
    }
  }
};

std::vector<float> initial_values(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.5f + 1e-3f * float(i % 977);
  return v;
}

void set_ratio_counters(benchmark::State& state, double bytes, double seconds, double triad_bytes,
                        double triad_seconds) {
  if (seconds <= 0 || triad_seconds <= 0) return;
  const double rate = bytes / seconds, triad_rate = triad_bytes / triad_seconds;
  state.counters["triad_GBps"] = triad_rate / 1e9;
  state.counters["x_triad"] = rate / triad_rate;
}

/// W workers running @p Rule's push/pull protocol on one shard of state.range(0) floats with
/// optimizer @p O; state.range(1) = W.
template <class Rule, class O>
void round_trip(benchmark::State& state) {
  const auto n = std::size_t(state.range(0));
  const auto workers = std::size_t(state.range(1));
  const std::size_t rounds = rounds_for(n);
  use_kernel_threads();

  const auto initial = initial_values(n);
  auto shard = Rule{}.template make_shard<cpu, O>(cpu{}, initial, O{}, workers);
  gradient_buffers buffers(workers, n);
  std::vector<std::uint64_t> step(workers, 0), pushes(workers, 0);
  std::vector<double> push_seconds(workers, 0.0), pull_seconds(workers, 0.0);

  worker_pool pool(workers, [&](std::size_t w) {
    for (std::size_t r = 0; r < rounds; ++r) {
      const auto deadline = wall_clock::now() + std::chrono::seconds(30);
      const auto t0 = wall_clock::now();
      shard->push(w, step[w], buffers.grad[w].data());
      ++pushes[w];
      const auto t1 = wall_clock::now();
      step[w] = shard->pull(w, Rule::next_pull(step[w], pushes[w]), buffers.out[w].data(), deadline);
      const auto t2 = wall_clock::now();
      push_seconds[w] += std::chrono::duration<double>(t1 - t0).count();
      pull_seconds[w] += std::chrono::duration<double>(t2 - t1).count();
    }
  });
  triad baseline(n);

  // Warm: page faults, OpenMP teams and the first touch of the optimizer's slots stay out.
  pool.run_once();
  baseline.run(1);
  std::fill(push_seconds.begin(), push_seconds.end(), 0.0);
  std::fill(pull_seconds.begin(), pull_seconds.end(), 0.0);

  double seconds = 0, triad_seconds = 0;
  for (auto _ : state) {
    const double s = pool.run_once();
    state.SetIterationTime(s);
    seconds += s;
    triad_seconds += baseline.run(rounds);
    if (auto e = pool.error(); !e.empty()) {
      state.SkipWithError(e.c_str());
      break;
    }
  }
  const double iterations = double(state.iterations());
  const double bytes_per_iteration = double(workers * rounds * n * sizeof(float));
  state.SetBytesProcessed(std::int64_t(iterations * bytes_per_iteration));
  set_ratio_counters(state, iterations * bytes_per_iteration, seconds, iterations * double(rounds) * double(n) * 12.0,
                     triad_seconds);
  double in_push = 0, in_pull = 0;
  for (std::size_t w = 0; w < workers; ++w) {
    in_push += push_seconds[w];
    in_pull += pull_seconds[w];
  }
  if (in_push + in_pull > 0) state.counters["pull_share"] = in_pull / (in_push + in_pull);
  state.counters["model_x_triad"] = model_x_triad<Rule, O>(workers);
  state.counters["kernel_threads"] = double(kernel_threads());
}

/// The snapshot copy alone: W workers pulling a shard of state.range(0) floats that nobody
/// pushes to (async, so a pull never waits). Bytes = snapshot bytes delivered.
void pull_only(benchmark::State& state) {
  const auto n = std::size_t(state.range(0));
  const auto workers = std::size_t(state.range(1));
  const std::size_t rounds = rounds_for(n);
  use_kernel_threads();

  const auto initial = initial_values(n);
  auto shard = dsgd::update::async{}.make_shard<cpu, dsgd::optim::sgd>(cpu{}, initial, dsgd::optim::sgd{}, workers);
  gradient_buffers buffers(workers, n);
  worker_pool pool(workers, [&](std::size_t w) {
    for (std::size_t r = 0; r < rounds; ++r)
      shard->pull(w, 0, buffers.out[w].data(), wall_clock::now() + std::chrono::seconds(30));
  });
  triad baseline(n);
  pool.run_once();
  baseline.run(1);

  double seconds = 0, triad_seconds = 0;
  for (auto _ : state) {
    const double s = pool.run_once();
    state.SetIterationTime(s);
    seconds += s;
    triad_seconds += baseline.run(rounds);
    if (auto e = pool.error(); !e.empty()) {
      state.SkipWithError(e.c_str());
      break;
    }
  }
  const double iterations = double(state.iterations());
  const double bytes_per_iteration = double(workers * rounds * n * sizeof(float));
  state.SetBytesProcessed(std::int64_t(iterations * bytes_per_iteration));
  set_ratio_counters(state, iterations * bytes_per_iteration, seconds, iterations * double(rounds) * double(n) * 12.0,
                     triad_seconds);
  state.counters["model_x_triad"] = 4.0 / 8.0;  // a copy touches 8 bytes per 4 delivered
  state.counters["kernel_threads"] = double(kernel_threads());
}

/// Shard sizes in floats: DSGD_BENCH_SHARD_ELEMENTS (comma-separated), else 64 Ki and 4 Mi.
std::vector<std::int64_t> shard_sizes() {
  std::vector<std::int64_t> sizes;
  if (const char* env = std::getenv("DSGD_BENCH_SHARD_ELEMENTS")) {
    std::stringstream in(env);
    for (std::string item; std::getline(in, item, ',');)
      if (!item.empty()) sizes.push_back(std::int64_t(std::strtoll(item.c_str(), nullptr, 10)));
  }
  if (sizes.empty()) sizes = {std::int64_t{1} << 16, std::int64_t{1} << 22};
  return sizes;
}

void configure(benchmark::internal::Benchmark* b) {
  b->ArgNames({"elements", "workers"});
  for (std::int64_t n : shard_sizes())
    for (std::int64_t w : {1, 2, 4, 8}) b->Args({n, w});
  // Wall-clock time measured around each iteration by the benchmark itself (manual time), so
  // that the interleaved triad is not counted; as with UseRealTime, blocked threads count.
  b->UseManualTime()->Unit(benchmark::kMillisecond);
}

template <class Rule>
void register_rule(const std::string& rule) {
  configure(benchmark::RegisterBenchmark((rule + "/sgd").c_str(), round_trip<Rule, dsgd::optim::sgd>));
  configure(benchmark::RegisterBenchmark((rule + "/momentum").c_str(), round_trip<Rule, dsgd::optim::momentum>));
  configure(benchmark::RegisterBenchmark((rule + "/adam").c_str(), round_trip<Rule, dsgd::optim::adam>));
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_rule<dsgd::update::sync_average>("sync_average");
  register_rule<dsgd::update::async>("async");
  register_rule<dsgd::update::bounded_staleness>("bounded_staleness_2");
  configure(benchmark::RegisterBenchmark("pull_only/snapshot", pull_only));
  benchmark::AddCustomContext("kernel_threads", std::to_string(kernel_threads()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
