// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The worker's side of an embedding lookup on click_stream batches (4096 examples x 26
// categorical keys, cardinality_scale 1, dim 16), one core, the pull left out (rows come from a
// block filled once, as if pulled): deduplication alone; dedup + gather (TF1's embedding_lookup:
// one row per key, 4096 x 26 x 16 floats out); dedup + combine of one bag of 26 keys per example
// (embedding_lookup_sparse, sum / mean / sqrtn, weighted); its backward; a row cache serving the
// unique keys. Every row reports bytes/s for the row bytes the lookup reads (one 16-float row
// per key: 6.8 MB a batch), against a same-run memcpy of that many bytes.
//
// Run:      dsgd_bench_embedding_lookup --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Expected: one row per benchmark and aggregate; items_per_second is keys per second.
#include <dsgd/data/click_stream.hpp>
#include <dsgd/embedding/combiner.hpp>
#include <dsgd/embedding/dedup.hpp>
#include <dsgd/embedding/row_cache.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

namespace emb = dsgd::embedding;
using stream = dsgd::data::click_stream;

constexpr std::size_t batch = 4096;
constexpr std::size_t features = stream::categorical_features;
constexpr std::size_t keys_per_batch = batch * features;
constexpr std::size_t dim = 16;
constexpr std::size_t row_bytes_per_batch = keys_per_batch * dim * sizeof(float);
constexpr std::size_t batches = 8;  // cycled, so the deduplicator sees changing batches

/// Eight consecutive batches of the full-size stream, generated once.
const std::vector<std::vector<std::uint64_t>>& key_batches() {
  static const std::vector<std::vector<std::uint64_t>> b = [] {
    stream s({.seed = 1, .batch = batch});
    std::vector<std::vector<std::uint64_t>> out;
    for (std::size_t i = 0; i < batches; ++i) out.push_back(s.next().keys);
    return out;
  }();
  return b;
}

/// A block of rows as large as any batch's unique keys, filled once (the pull is not measured).
std::vector<float> pulled_block() {
  std::vector<float> block(keys_per_batch * dim);
  for (std::size_t i = 0; i < block.size(); ++i) block[i] = static_cast<float>(i % 1000) * 1e-3f;
  return block;
}

void report(benchmark::State& state) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * keys_per_batch));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * row_bytes_per_batch));
}

void dedup(benchmark::State& state) {
  emb::deduplicator d;
  std::size_t i = 0, unique = 0;
  for (auto _ : state) {
    unique += d.run(key_batches()[i++ % batches]).unique.size();
    benchmark::DoNotOptimize(d.last().inverse.data());
  }
  state.counters["unique_keys"] = static_cast<double>(unique) / static_cast<double>(state.iterations());
  report(state);
}

// embedding_lookup: dedup, then one row per key.
void dedup_gather(benchmark::State& state) {
  emb::deduplicator d;
  const std::vector<float> block = pulled_block();
  std::vector<float> out(keys_per_batch * dim);
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& r = d.run(key_batches()[i++ % batches]);
    emb::gather(r.inverse, dim, std::span(block.data(), r.unique.size() * dim), out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state);
}

/// Offsets of one bag of 26 keys per example, and a weight per key.
struct example_bags {
  std::vector<std::size_t> offsets;
  std::vector<float> weights;
  example_bags() : offsets(batch + 1), weights(keys_per_batch) {
    for (std::size_t b = 0; b <= batch; ++b) offsets[b] = b * features;
    for (std::size_t j = 0; j < keys_per_batch; ++j) weights[j] = 0.5f + static_cast<float>(j % 7) * 0.25f;
  }
};

// embedding_lookup_sparse: dedup, then a weighted bag of 26 rows per example.
void dedup_combine(benchmark::State& state, emb::combiner c) {
  emb::deduplicator d;
  const std::vector<float> block = pulled_block();
  const example_bags bags;
  std::vector<float> out(batch * dim);
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& r = d.run(key_batches()[i++ % batches]);
    emb::combine(c, {.offsets = bags.offsets, .rows = r.inverse, .weights = bags.weights}, dim,
                 std::span(block.data(), r.unique.size() * dim), out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  report(state);
}

void dedup_combine_sum(benchmark::State& state) { dedup_combine(state, emb::combiner::sum); }
void dedup_combine_mean(benchmark::State& state) { dedup_combine(state, emb::combiner::mean); }
void dedup_combine_sqrtn(benchmark::State& state) { dedup_combine(state, emb::combiner::sqrtn); }

// The backward of the sqrtn bags: one gradient row per unique key (the dedup is not timed).
void combine_grad_sqrtn(benchmark::State& state) {
  std::vector<emb::deduplicator> d(batches);
  for (std::size_t b = 0; b < batches; ++b) d[b].run(key_batches()[b]);
  const example_bags bags;
  std::vector<float> grad_out(batch * dim, 0.01f), grad_block(keys_per_batch * dim);
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& r = d[i++ % batches].last();
    emb::combine_grad(emb::combiner::sqrtn, {.offsets = bags.offsets, .rows = r.inverse, .weights = bags.weights}, dim,
                      grad_out, std::span(grad_block.data(), r.unique.size() * dim));
    benchmark::DoNotOptimize(grad_block.data());
    benchmark::ClobberMemory();
  }
  report(state);
}

// A row cache serving each batch's unique keys at S = 8 (the misses' rows come from a block
// filled once); the hit rate is a counter.
void dedup_row_cache(benchmark::State& state) {
  emb::deduplicator d;
  emb::row_cache cache({.dim = dim, .capacity = std::size_t{1} << 20, .staleness = 8});
  const std::vector<float> pulled = pulled_block();
  std::vector<float> block(keys_per_batch * dim);
  std::uint64_t step = 0;
  for (auto _ : state) {
    const auto& r = d.run(key_batches()[step % batches]);
    const std::span<float> rows(block.data(), r.unique.size() * dim);
    const auto& miss = cache.lookup(r.unique, step, rows);
    cache.fill_misses(std::span(pulled.data(), miss.keys.size() * dim), rows);
    benchmark::DoNotOptimize(block.data());
    ++step;
  }
  state.counters["hit_rate"] = cache.statistics().hit_rate();
  report(state);
}

// The same-run baseline: a memcpy of the row bytes one batch's keys read.
void memcpy_rows(benchmark::State& state) {
  std::vector<char> from(row_bytes_per_batch, 1), to(row_bytes_per_batch);
  for (auto _ : state) {
    benchmark::DoNotOptimize(from.data());
    std::memcpy(to.data(), from.data(), from.size());
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
  }
  report(state);
}

}  // namespace

BENCHMARK(dedup)->Unit(benchmark::kMicrosecond);
BENCHMARK(dedup_gather)->Unit(benchmark::kMicrosecond);
BENCHMARK(dedup_combine_sum)->Unit(benchmark::kMicrosecond);
BENCHMARK(dedup_combine_mean)->Unit(benchmark::kMicrosecond);
BENCHMARK(dedup_combine_sqrtn)->Unit(benchmark::kMicrosecond);
BENCHMARK(combine_grad_sqrtn)->Unit(benchmark::kMicrosecond);
BENCHMARK(dedup_row_cache)->Unit(benchmark::kMicrosecond);
BENCHMARK(memcpy_rows)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
