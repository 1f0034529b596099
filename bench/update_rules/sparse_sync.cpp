// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// What one sync step of sparse pushes costs on one ps shard, in process: an embedding shard of
// R rows x 16 floats under update::sync_average with momentum, two workers pushing U rows each
// per step (keys drawn uniformly, so the two pushes rarely share rows), one thread making both
// pushes. The second push completes the step, which applies the mean to the rows touched only
// (sync_average::shard::push_rows); "dense_step" makes the same step with one push dense (the
// whole shard applied, as every sparse step was before), and "bare_row_update" is the floor, in
// the same run: momentum by hand on the same rows of two plain arrays.
//
//   build-bench/bench/dsgd_bench_sparse_sync --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// (build-bench as bench/update_rules/run.sh configures it; docs/embeddings.md keeps the table).
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/update/sync_average.hpp>

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace {

constexpr std::size_t dim = 16;

struct step_inputs {
  std::vector<std::vector<std::uint64_t>> keys;  // per worker
  std::vector<float> grads;                      // U x dim, the same for both workers
};

step_inputs make_inputs(std::size_t rows, std::size_t unique, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint64_t> pick(0, rows - 1);
  step_inputs in;
  in.keys.resize(2);
  for (auto& k : in.keys) {
    k.resize(unique);
    for (auto& r : k) r = pick(rng);
  }
  in.grads.assign(unique * dim, 0.01f);
  return in;
}

void sparse_step(benchmark::State& state) {
  const auto rows = static_cast<std::size_t>(state.range(0)), unique = static_cast<std::size_t>(state.range(1));
  std::vector<float> initial(rows * dim, 0.5f);
  dsgd::update::sync_average::shard<dsgd::device::cpu, dsgd::optim::momentum> shard({}, initial, {0.01f, 0.9f}, 2);
  auto in = make_inputs(rows, unique, 1);
  std::uint64_t step = 0;
  for (auto _ : state) {
    shard.push_rows(0, step, in.keys[0], dim, in.grads.data());
    shard.push_rows(1, step, in.keys[1], dim, in.grads.data());
    ++step;
  }
  state.counters["rows_per_s"] = benchmark::Counter(double(2 * unique), benchmark::Counter::kIsIterationInvariantRate);
}

void dense_step(benchmark::State& state) {
  const auto rows = static_cast<std::size_t>(state.range(0)), unique = static_cast<std::size_t>(state.range(1));
  std::vector<float> initial(rows * dim, 0.5f), zeros(rows * dim, 0.f);
  dsgd::update::sync_average::shard<dsgd::device::cpu, dsgd::optim::momentum> shard({}, initial, {0.01f, 0.9f}, 2);
  auto in = make_inputs(rows, unique, 1);
  std::uint64_t step = 0;
  for (auto _ : state) {
    shard.push(0, step, zeros.data());
    shard.push_rows(1, step, in.keys[1], dim, in.grads.data());
    ++step;
  }
}

// The floor: momentum by hand on the same rows of plain arrays of the shard's size, one loop
// over the keys of both pushes (no deduplication, no accumulation, no lock).
void bare_row_update(benchmark::State& state) {
  const auto rows = static_cast<std::size_t>(state.range(0)), unique = static_cast<std::size_t>(state.range(1));
  std::vector<float> w(rows * dim, 0.5f), v(rows * dim, 0.f);
  auto in = make_inputs(rows, unique, 1);
  for (auto _ : state) {
    for (const auto& keys : in.keys)
      for (std::size_t i = 0; i < keys.size(); ++i) {
        float* wr = w.data() + keys[i] * dim;
        float* vr = v.data() + keys[i] * dim;
        const float* g = in.grads.data() + i * dim;
        for (std::size_t c = 0; c < dim; ++c) {
          vr[c] = 0.9f * vr[c] + 0.5f * g[c];
          wr[c] -= 0.01f * vr[c];
        }
      }
    benchmark::DoNotOptimize(w.data());
    benchmark::ClobberMemory();
  }
  state.counters["rows_per_s"] = benchmark::Counter(double(2 * unique), benchmark::Counter::kIsIterationInvariantRate);
}

void shapes(benchmark::internal::Benchmark* b) {
  for (long rows : {1L << 16, 1L << 20})
    for (long unique : {256L, 4096L}) b->Args({rows, unique});
  b->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK(sparse_step)->Apply(shapes);
BENCHMARK(dense_step)->Apply(shapes);
BENCHMARK(bare_row_update)->Apply(shapes);
BENCHMARK_MAIN();
