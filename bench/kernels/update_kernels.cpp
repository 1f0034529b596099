// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Memory bandwidth of the fused update kernels on device::cpu, beside same-run baselines.
//
// Every kernel is memory bound on large arrays, so the figure that matters is bytes touched per
// second (each array counted once per read and once per write) relative to what the machine's
// memory does for a STREAM-style triad `a = b + s * c` run through the same Thrust OpenMP
// policy. Each kernel benchmark interleaves one triad with every timed kernel call and reports
// the ratio of the two bandwidths ("x_triad"), so load from other processes hits both alike.
//
//   bench/kernels/run.sh            (builds in build-bench, prints a markdown table)
//   dsgd_bench_update_kernels --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/mean.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/sgd.hpp>

#include <benchmark/benchmark.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <span>
#include <vector>

namespace {

using cpu = dsgd::device::cpu;
using clock_type = std::chrono::steady_clock;

/// Elements per array: 64 MiB of floats, far beyond any cache. DSGD_BENCH_ELEMENTS overrides it.
std::size_t elements() {
  static const std::size_t n = [] {
    const char* env = std::getenv("DSGD_BENCH_ELEMENTS");
    return env ? std::size_t(std::strtoull(env, nullptr, 10)) : std::size_t{16} << 20;
  }();
  return n;
}

struct copy_kernel {
  float* a;
  const float* b;
  void operator()(std::size_t i) const { a[i] = b[i]; }
};

struct triad_kernel {
  float* a;
  const float* b;
  const float* c;
  float s;
  void operator()(std::size_t i) const { a[i] = b[i] + s * c[i]; }
};

// Deterministic, well-scaled values (no denormals, no zeros), written by the same OpenMP
// threads that later use them so that pages land where they are used.
struct fill_kernel {
  float* a;
  float base;
  void operator()(std::size_t i) const { a[i] = base + 1e-3f * float(i % 977); }
};

std::vector<float*>& pool() {
  static std::vector<float*> arrays;
  return arrays;
}

/// Array @p index of the shared pool, allocated and first-touched on first use.
float* array(std::size_t index) {
  auto& arrays = pool();
  while (arrays.size() <= index) {
    // aligned_alloc wants a size that is a multiple of the alignment.
    const std::size_t bytes = (elements() * sizeof(float) + 63) / 64 * 64;
    float* p = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (p == nullptr) throw std::bad_alloc();
    thrust::for_each_n(cpu::policy(), thrust::counting_iterator<std::size_t>(0), elements(),
                       fill_kernel{p, 0.5f + 0.125f * float(arrays.size())});
    arrays.push_back(p);
  }
  return arrays[index];
}

// Pool slots: 0..4 for the kernel under test, 5..7 for the interleaved triad.
constexpr std::size_t triad_a = 5, triad_b = 6, triad_c = 7;

void run_triad() {
  thrust::for_each_n(cpu::policy(), thrust::counting_iterator<std::size_t>(0), elements(),
                     triad_kernel{array(triad_a), array(triad_b), array(triad_c), 0.5f});
}

/// Times @p kernel (touching @p bytes_per_element per element) on state.range(0) threads,
/// interleaved with the triad baseline, and sets the bandwidth counters.
template <class Kernel>
void measure(benchmark::State& state, std::size_t bytes_per_element, Kernel kernel, bool with_triad = true) {
#if defined(_OPENMP)
  omp_set_num_threads(int(state.range(0)));
#endif
  const std::size_t n = elements();
  run_triad();
  kernel();  // warm: page faults and thread start-up stay out of the timed region
  double kernel_seconds = 0, triad_seconds = 0;
  for (auto _ : state) {
    const auto t0 = clock_type::now();
    kernel();
    const double seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
    state.SetIterationTime(seconds);
    kernel_seconds += seconds;
    if (with_triad) {
      const auto t1 = clock_type::now();
      run_triad();
      triad_seconds += std::chrono::duration<double>(clock_type::now() - t1).count();
    }
  }
  const auto iterations = std::int64_t(state.iterations());
  state.SetBytesProcessed(iterations * std::int64_t(n * bytes_per_element));
  if (with_triad && iterations > 0) {
    const double kernel_rate = double(iterations) * double(n * bytes_per_element) / kernel_seconds;
    const double triad_rate = double(iterations) * double(n * 12) / triad_seconds;
    state.counters["triad_GBps"] = triad_rate / 1e9;
    state.counters["x_triad"] = kernel_rate / triad_rate;
  }
  state.counters["threads"] = double(state.range(0));
  state.counters["bytes_per_element"] = double(bytes_per_element);
}

// Baselines: 8 and 12 bytes per element (write-allocate traffic is not counted, as in STREAM).
void copy(benchmark::State& state) {
  measure(
      state, 8,
      [] {
        thrust::for_each_n(cpu::policy(), thrust::counting_iterator<std::size_t>(0), elements(),
                           copy_kernel{array(0), array(1)});
      },
      false);
}

void triad(benchmark::State& state) {
  measure(
      state, 12,
      [] {
        thrust::for_each_n(cpu::policy(), thrust::counting_iterator<std::size_t>(0), elements(),
                           triad_kernel{array(0), array(1), array(2), 0.5f});
      },
      false);
}

// Optimizers: w and every slot read and written, g read.
template <class O>
void optimizer(benchmark::State& state, O opt, std::size_t slots) {
  typename O::template state<cpu> s(cpu{}, elements());
  measure(state, 4 * (2 + 1 + 2 * slots), [&] { opt.apply(cpu{}, s, array(0), array(1), elements(), 0.5f); });
}

void sgd(benchmark::State& state) { optimizer(state, dsgd::optim::sgd{}, 0); }
void momentum(benchmark::State& state) { optimizer(state, dsgd::optim::momentum{}, 1); }
void nesterov(benchmark::State& state) { optimizer(state, dsgd::optim::momentum{0.01f, 0.9f, true}, 1); }
void adagrad(benchmark::State& state) { optimizer(state, dsgd::optim::adagrad{}, 1); }
void adam(benchmark::State& state) { optimizer(state, dsgd::optim::adam{}, 2); }

// Reductions: acc read and written, g read; mean of 4 reads 4 arrays and writes one.
void accumulate(benchmark::State& state) {
  measure(state, 12, [] { dsgd::optim::accumulate(cpu{}, array(0), array(1), elements()); });
}

void mean_of_4(benchmark::State& state) {
  const std::array<const float*, 4> inputs{array(1), array(2), array(3), array(4)};
  measure(state, 4 * 5,
          [&] { dsgd::optim::mean_of(cpu{}, array(0), std::span<const float* const>(inputs), elements()); });
}

void thread_counts(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(copy)->Apply(thread_counts);
BENCHMARK(triad)->Apply(thread_counts);
BENCHMARK(sgd)->Apply(thread_counts);
BENCHMARK(momentum)->Apply(thread_counts);
BENCHMARK(nesterov)->Apply(thread_counts);
BENCHMARK(adagrad)->Apply(thread_counts);
BENCHMARK(adam)->Apply(thread_counts);
BENCHMARK(accumulate)->Apply(thread_counts);
BENCHMARK(mean_of_4)->Apply(thread_counts);

}  // namespace

BENCHMARK_MAIN();
