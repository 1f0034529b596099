// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The hash map under a ps shard's embedding rows: find, insert and find-and-update of rows of
// dim 16 and 64 keyed by 64-bit ids drawn from a Zipf law (exponent 1.05 over 2^19 keys, as a
// click log's ids), on one core, for tsl::robin_map, std::unordered_map and (when CMake found
// Abseil) absl::flat_hash_map, each holding the row inline as its value and hashing with the
// same mixer; and embedding::row_table's own row updates (find + update + mark_updated, and the
// whole training path find_or_admit + update + mark_updated) in the same run, against the bare
// robin_map. The insert benchmarks report bytes per row, measured by a counting allocator (the
// row_table: bytes_used()), against the raw row, 8 + 4 x dim bytes.
//
// Run:      dsgd_bench_embedding_hash_table --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//           (bench/embedding/table.py turns its --benchmark_format=json output into the table of
//           docs/embeddings.md)
// Expected: items_per_second is rows (found, inserted or updated) per second; the insert rows'
//           bytes_per_row and vs_raw counters are the memory per row and its ratio to 8 + 4 dim.
#include <dsgd/embedding/row_table.hpp>

#include <benchmark/benchmark.h>

#include <tsl/robin_map.h>

#ifdef DSGD_BENCH_ABSL
#include <absl/container/flat_hash_map.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

namespace emb = dsgd::embedding;

constexpr std::size_t distinct_keys = std::size_t{1} << 19;
constexpr std::size_t stream_length = std::size_t{1} << 20;
constexpr float learning_rate = 0.01f;

std::uint64_t key_of_rank(std::uint64_t rank) { return emb::detail::finalise(rank + 0x5eedull); }

// 2^20 lookups with P(rank r) proportional to (r + 1)^-1.05, drawn once (inversion of the
// cumulative weights), and every key once, in rank order.
struct key_streams {
  std::vector<std::uint64_t> zipf, all;
  key_streams() {
    std::vector<double> cumulative(distinct_keys);
    double total = 0;
    for (std::size_t r = 0; r < distinct_keys; ++r) cumulative[r] = total += std::pow(double(r + 1), -1.05);
    std::uint64_t state = 42;
    zipf.reserve(stream_length);
    for (std::size_t i = 0; i < stream_length; ++i) {
      const double u = emb::detail::unit_double(emb::detail::finalise(state += emb::detail::golden_gamma)) * total;
      zipf.push_back(key_of_rank(std::upper_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin()));
    }
    all.reserve(distinct_keys);
    for (std::size_t r = 0; r < distinct_keys; ++r) all.push_back(key_of_rank(r));
  }
};
const key_streams& keys() {
  static const key_streams k;
  return k;
}

template <std::size_t Dim>
using row = std::array<float, Dim>;

template <class T>
using counting = emb::detail::counting_allocator<T>;

// Each map type with the row inline and a counting allocator, built the same way.
template <std::size_t Dim>
struct robin {
  using map = tsl::robin_map<std::uint64_t, row<Dim>, emb::detail::key_hasher, std::equal_to<>,
                             counting<std::pair<std::uint64_t, row<Dim>>>>;
  static map make(std::size_t* bytes) {
    return map(std::size_t{0}, emb::detail::key_hasher{}, std::equal_to<>{},
               counting<std::pair<std::uint64_t, row<Dim>>>(bytes));
  }
};
template <std::size_t Dim>
struct unordered {
  using map = std::unordered_map<std::uint64_t, row<Dim>, emb::detail::key_hasher, std::equal_to<>,
                                 counting<std::pair<const std::uint64_t, row<Dim>>>>;
  static map make(std::size_t* bytes) {
    return map(std::size_t{0}, emb::detail::key_hasher{}, std::equal_to<>{},
               counting<std::pair<const std::uint64_t, row<Dim>>>(bytes));
  }
};
#ifdef DSGD_BENCH_ABSL
template <std::size_t Dim>
struct abseil {
  using map = absl::flat_hash_map<std::uint64_t, row<Dim>, emb::detail::key_hasher, std::equal_to<>,
                                  counting<std::pair<const std::uint64_t, row<Dim>>>>;
  static map make(std::size_t* bytes) {
    return map(std::size_t{0}, emb::detail::key_hasher{}, std::equal_to<>{},
               counting<std::pair<const std::uint64_t, row<Dim>>>(bytes));
  }
};
#endif

template <std::size_t Dim>
row<Dim> gradient() {
  row<Dim> g{};
  for (std::size_t j = 0; j < Dim; ++j) g[j] = 0.001f * float(j + 1);
  return g;
}

// Inserting every key into an empty map (no reserve), and the bytes it then holds per row.
template <template <std::size_t> class M, std::size_t Dim>
void insert(benchmark::State& state) {
  const auto& all = keys().all;
  std::size_t bytes = 0, held = 0;
  for (auto _ : state) {
    auto map = M<Dim>::make(&bytes);
    for (std::uint64_t k : all) map.emplace(k, row<Dim>{});
    benchmark::DoNotOptimize(map.size());
    held = bytes;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * all.size()));
  state.counters["bytes_per_row"] = double(held) / double(all.size());
  state.counters["vs_raw"] = double(held) / double(all.size()) / double(8 + 4 * Dim);
}

// A full map; each Zipf key found and its row read (the pull of a row).
template <template <std::size_t> class M, std::size_t Dim>
void find(benchmark::State& state) {
  std::size_t bytes = 0;
  auto map = M<Dim>::make(&bytes);
  for (std::uint64_t k : keys().all) map.emplace(k, row<Dim>{});
  const auto& zipf = keys().zipf;
  for (auto _ : state) {
    float sum = 0;
    for (std::uint64_t k : zipf) {
      const row<Dim>& r = map.find(k)->second;
      for (std::size_t j = 0; j < Dim; ++j) sum += r[j];
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * zipf.size()));
}

// A full map; each Zipf key found and its row updated in place, w -= lr g (an SGD push).
template <template <std::size_t> class M, std::size_t Dim>
void update(benchmark::State& state) {
  std::size_t bytes = 0;
  auto map = M<Dim>::make(&bytes);
  for (std::uint64_t k : keys().all) map.emplace(k, row<Dim>{});
  const auto& zipf = keys().zipf;
  const row<Dim> g = gradient<Dim>();
  for (auto _ : state) {
    for (std::uint64_t k : zipf) {
      auto it = map.find(k);
      // tsl's iterator hands out the value through value(); the others through ->second.
      row<Dim>* r;
      if constexpr (requires { it.value(); }) r = &it.value();
      else r = &it->second;
      for (std::size_t j = 0; j < Dim; ++j) (*r)[j] -= learning_rate * g[j];
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * zipf.size()));
}

using table = emb::row_table<emb::initializer::uniform, emb::admission::always, emb::eviction::none>;

template <std::size_t Dim>
table full_table() {
  table t({.name = "bench", .dim = Dim, .track_changes = false}, emb::initializer::uniform{.seed = 1});
  for (std::uint64_t k : keys().all) (void)t.find_or_admit(k, 0);
  return t;
}

// row_table, every row made; each Zipf key: find, update, mark_updated (the push of a row).
template <std::size_t Dim>
void row_table_update(benchmark::State& state) {
  table t = full_table<Dim>();
  const auto& zipf = keys().zipf;
  const row<Dim> g = gradient<Dim>();
  std::uint64_t step = 1;
  for (auto _ : state) {
    for (std::uint64_t k : zipf) {
      const emb::row_view r = *t.find(k);
      float* w = r.weights().data();
      for (std::size_t j = 0; j < Dim; ++j) w[j] -= learning_rate * g[j];
      t.mark_updated(r, step);
    }
    ++step;
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * zipf.size()));
}

// The same through update_batch: batches of 4096 keys (a push), the table looking ahead.
template <std::size_t Dim>
void row_table_update_batch(benchmark::State& state) {
  table t = full_table<Dim>();
  const auto& zipf = keys().zipf;
  const row<Dim> g = gradient<Dim>();
  std::uint64_t step = 1;
  constexpr std::size_t batch = 4096;
  for (auto _ : state) {
    for (std::size_t first = 0; first < zipf.size(); first += batch) {
      const std::span<const std::uint64_t> keys(zipf.data() + first, std::min(batch, zipf.size() - first));
      t.update_batch(keys, step, [&](std::size_t, const emb::row_view& r) {
        float* w = r.weights().data();
        for (std::size_t j = 0; j < Dim; ++j) w[j] -= learning_rate * g[j];
      });
    }
    ++step;
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * zipf.size()));
}

// The same through the training lookup (use count, last step, change record) in place of find.
template <std::size_t Dim>
void row_table_train(benchmark::State& state) {
  table t = full_table<Dim>();
  const auto& zipf = keys().zipf;
  const row<Dim> g = gradient<Dim>();
  std::uint64_t step = 1;
  for (auto _ : state) {
    for (std::uint64_t k : zipf) {
      const emb::row_view r = t.find_or_admit(k, step).row;
      float* w = r.weights().data();
      for (std::size_t j = 0; j < Dim; ++j) w[j] -= learning_rate * g[j];
      t.mark_updated(r, step);
    }
    ++step;
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * zipf.size()));
}

// row_table made from empty: every key admitted once (initializer included); bytes_used per row.
template <std::size_t Dim>
void row_table_insert(benchmark::State& state) {
  const auto& all = keys().all;
  std::size_t held = 0;
  for (auto _ : state) {
    table t({.name = "bench", .dim = Dim, .track_changes = false}, emb::initializer::uniform{.seed = 1});
    for (std::uint64_t k : all) (void)t.find_or_admit(k, 0);
    held = t.bytes_used();
    benchmark::DoNotOptimize(t.size());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * all.size()));
  state.counters["bytes_per_row"] = double(held) / double(all.size());
  state.counters["vs_raw"] = double(held) / double(all.size()) / double(8 + 4 * Dim);
}

void register_all() {
  const auto add = [](const char* name, void (*f)(benchmark::State&)) {
    benchmark::RegisterBenchmark(name, f)->Unit(benchmark::kMillisecond)->MinTime(0.5);
  };
  add("find/robin_map/16", find<robin, 16>);
  add("find/robin_map/64", find<robin, 64>);
  add("find/unordered_map/16", find<unordered, 16>);
  add("find/unordered_map/64", find<unordered, 64>);
  add("update/robin_map/16", update<robin, 16>);
  add("update/robin_map/64", update<robin, 64>);
  add("update/unordered_map/16", update<unordered, 16>);
  add("update/unordered_map/64", update<unordered, 64>);
  add("update/row_table/16", row_table_update<16>);
  add("update/row_table/64", row_table_update<64>);
  add("update/row_table_batch/16", row_table_update_batch<16>);
  add("update/row_table_batch/64", row_table_update_batch<64>);
  add("train/row_table/16", row_table_train<16>);
  add("train/row_table/64", row_table_train<64>);
  add("insert/robin_map/16", insert<robin, 16>);
  add("insert/robin_map/64", insert<robin, 64>);
  add("insert/unordered_map/16", insert<unordered, 16>);
  add("insert/unordered_map/64", insert<unordered, 64>);
  add("insert/row_table/16", row_table_insert<16>);
  add("insert/row_table/64", row_table_insert<64>);
#ifdef DSGD_BENCH_ABSL
  add("find/flat_hash_map/16", find<abseil, 16>);
  add("find/flat_hash_map/64", find<abseil, 64>);
  add("update/flat_hash_map/16", update<abseil, 16>);
  add("update/flat_hash_map/64", update<abseil, 64>);
  add("insert/flat_hash_map/16", insert<abseil, 16>);
  add("insert/flat_hash_map/64", insert<abseil, 64>);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
