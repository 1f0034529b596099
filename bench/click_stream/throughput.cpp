// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Throughput of data::click_stream on one core: examples per second filling a reused batch of
// 4096 (full cardinalities and scaled by 0.01), against a memcpy of the same batch's bytes
// (dense, keys, labels, probabilities: 268 bytes an example) in the same run.
//
// Run:      dsgd_bench_click_stream --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Expected: one row per benchmark and aggregate; items_per_second is examples per second.
#include <dsgd/data/click_stream.hpp>

#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

namespace {

using stream = dsgd::data::click_stream;
constexpr std::size_t batch = 4096;
constexpr std::size_t bytes_per_example =
    stream::dense_features * sizeof(float) + stream::categorical_features * sizeof(std::uint64_t) + 2 * sizeof(float);

void fill(benchmark::State& state, double cardinality_scale) {
  stream s({.seed = 1, .batch = batch, .cardinality_scale = cardinality_scale});
  s.next();  // the buffers, allocated once
  for (auto _ : state) benchmark::DoNotOptimize(s.next().keys.data());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batch));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * batch * bytes_per_example));
}

void click_stream_full(benchmark::State& state) { fill(state, 1); }
void click_stream_scaled_0_01(benchmark::State& state) { fill(state, 0.01); }

// The same-run baseline: copying a batch's bytes.
void memcpy_batch(benchmark::State& state) {
  std::vector<char> from(batch * bytes_per_example, 1), to(batch * bytes_per_example);
  for (auto _ : state) {
    benchmark::DoNotOptimize(from.data());
    std::memcpy(to.data(), from.data(), from.size());
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batch));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * from.size()));
}

}  // namespace

BENCHMARK(click_stream_full)->Unit(benchmark::kMicrosecond);
BENCHMARK(click_stream_scaled_0_01)->Unit(benchmark::kMicrosecond);
BENCHMARK(memcpy_batch)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
