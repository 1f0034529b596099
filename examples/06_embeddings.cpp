// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Case 6: a model whose parameters are mostly an embedding table, trained on ps tasks and
// workers. The synthetic click stream (data::click_stream, Criteo's schema) gives each example
// 13 dense features and 26 hashed ids; the model is
//
//     score = b + w . x + v . sum_f e[key_f]       p(click) = sigmoid(score)
//
// with e a dynamic table of rows of --dim floats (any 64-bit key; a row made the --admit-th step
// its key is seen; Adagrad per row) and w, b, v dense variables. Each step a worker
// deduplicates its batch's keys (embedding::deduplicator), pulls each unique row once, sums each
// example's 26 rows (embedding::combine), and pushes one gradient row per unique key
// (embedding::combine_grad) and the dense gradients. --rule picks how: sync (both), async (both),
// ssp (both, bounded staleness), or hybrid (dense sync, the table async). The chief then waits
// for every push to be applied, reads the test split's rows without admitting any
// (read_table), and prints the AUC with the best one reachable (the click stream's teacher).
//
// Run it as a cluster with the bundled launcher:
//   dsgd-launch --ps 2 --workers 2 -- 06_embeddings --rule hybrid
#include <dsgd/cluster/token.hpp>
#include <dsgd/data/auc.hpp>
#include <dsgd/data/click_stream.hpp>
#include <dsgd/embedding/combiner.hpp>
#include <dsgd/embedding/dedup.hpp>
#include <dsgd/embedding/row_cache.hpp>
#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/sync_average.hpp>

#include <boost/program_options.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace po = boost::program_options;
namespace emb = dsgd::embedding;
using cpu = dsgd::device::cpu;
using dsgd::data::click_stream;

struct settings {
  std::string rule = "hybrid";
  std::uint32_t staleness = 2;
  std::size_t steps = 300;
  std::size_t batch = 256;
  std::size_t dim = 8;
  float lr = 0.05f;
  std::uint32_t admit = 2;
  std::size_t eval = 20000;
  double scale = 0.01;  // click_stream::options::cardinality_scale
  double target = 0;
  long cache = -1;  // the row cache's staleness bound S in steps; -1: no cache
};

std::string token() {
  return dsgd::cluster::token_from_environment(
      [](std::string_view m) { std::fprintf(stderr, "%.*s\n", static_cast<int>(m.size()), m.data()); });
}

constexpr std::size_t dense_n = click_stream::dense_features, fields = click_stream::categorical_features;

// The model's arithmetic, on one batch whose unique keys' rows are in `block`.
struct model {
  std::size_t dim;
  emb::deduplicator dedup;
  std::vector<std::size_t> offsets;
  std::vector<float> block, sums, scores;

  explicit model(std::size_t d) : dim(d) {}

  // Scores of the batch's examples from w, b, v and the rows in block (combined per example).
  void forward(const click_stream::batch& b, const emb::deduplicator::result& d, const float* w, float bias,
               const float* v) {
    offsets.resize(b.size + 1);
    for (std::size_t i = 0; i <= b.size; ++i) offsets[i] = i * fields;
    sums.resize(b.size * dim);
    emb::combine(emb::combiner::sum, {offsets, d.inverse}, dim, block, sums);
    scores.resize(b.size);
    for (std::size_t i = 0; i < b.size; ++i) {
      float s = bias;
      for (std::size_t j = 0; j < dense_n; ++j) s += w[j] * b.dense[i * dense_n + j];
      for (std::size_t c = 0; c < dim; ++c) s += v[c] * sums[i * dim + c];
      scores[i] = s;
    }
  }

  // The mean log loss's gradients: dense ones into gw, gb, gv, the table's into grad_block (one
  // row per unique key).
  double backward(const click_stream::batch& b, const emb::deduplicator::result& d, const float* v, float* gw,
                  float& gb, float* gv, std::vector<float>& grad_block) {
    std::vector<float> grad_sums(b.size * dim);
    double loss = 0;
    gb = 0;
    std::fill(gw, gw + dense_n, 0.f);
    std::fill(gv, gv + dim, 0.f);
    for (std::size_t i = 0; i < b.size; ++i) {
      const float p = 1.f / (1.f + std::exp(-scores[i])), y = b.labels[i];
      loss -= y * std::log(std::max(p, 1e-7f)) + (1 - y) * std::log(std::max(1 - p, 1e-7f));
      const float g = (p - y) / float(b.size);
      gb += g;
      for (std::size_t j = 0; j < dense_n; ++j) gw[j] += g * b.dense[i * dense_n + j];
      for (std::size_t c = 0; c < dim; ++c) {
        gv[c] += g * sums[i * dim + c];
        grad_sums[i * dim + c] = g * v[c];
      }
    }
    grad_block.assign(d.unique.size() * dim, 0.f);
    emb::combine_grad(emb::combiner::sum, {offsets, d.inverse}, dim, grad_sums, grad_block);
    return loss / double(b.size);
  }
};

emb::table_rule table_rule_of(const settings& s) {
  if (s.rule == "sync") return emb::table_rule::sync();
  if (s.rule == "ssp") return emb::table_rule::bounded_staleness(s.staleness);
  return emb::table_rule::async();  // async, and the table of hybrid
}

template <class Rule>
int train(const settings& s, Rule rule) {
  using trainer = dsgd::trainer<cpu, dsgd::placement::round_robin, Rule, dsgd::optim::adagrad>;
  auto t = trainer::from_environment({.connection = {.token = token()}, .optimizer = {s.lr}, .rule = rule});
  if (t.is_ps()) return t.join(), 0;

  std::vector<dsgd::tensor<cpu>> vars, grads;
  vars.emplace_back(cpu{}, dsgd::shape{dense_n}, dsgd::init::constant{0.f});  // w
  vars.emplace_back(cpu{}, dsgd::shape{1}, dsgd::init::constant{-1.5f});      // b
  vars.emplace_back(cpu{}, dsgd::shape{s.dim}, dsgd::init::constant{0.5f});   // v
  for (const auto& v : vars) grads.emplace_back(cpu{}, v.shape(), dsgd::init::constant{0.f});
  t.create_variables(vars, {"w", "b", "v"});
  const emb::table_spec ids{.name = "ids",
                            .dim = static_cast<std::uint32_t>(s.dim),
                            .rule = table_rule_of(s),
                            .optimizer = emb::row_optimizer_spec::adagrad(s.lr),
                            .initializer = emb::initializer_spec::uniform(-0.05f, 0.05f, 7),
                            .admission = emb::admission_spec::by_count(s.admit)};
  t.create_table(0, ids);

  click_stream stream(
      {.seed = 7, .batch = s.batch, .shard = t.replica(), .shards = t.replicas(), .cardinality_scale = s.scale});
  model m(s.dim);
  // --cache S: rows pulled at most S steps ago are served from this worker's cache, only the
  // misses pulled (the bounded-staleness idea per row).
  std::optional<emb::row_cache> cache;
  if (s.cache >= 0)
    cache.emplace(emb::row_cache::options{.dim = s.dim, .capacity = 1 << 20, .staleness = std::uint64_t(s.cache)});
  std::vector<float> pulled, grad_block;
  std::uint64_t dropped = 0;
  double loss = 0;
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t step = 1; step <= s.steps; ++step) {
    const auto& b = stream.next();
    const auto& d = m.dedup.run(b.keys);
    m.block.resize(d.unique.size() * s.dim);
    if (cache) {
      const auto& miss = cache->lookup(d.unique, step, m.block);
      pulled.resize(miss.keys.size() * s.dim);
      t.pull_table(0, miss.keys, pulled);
      cache->fill_misses(pulled, m.block);
    } else {
      t.pull_table(0, d.unique, m.block);
    }
    m.forward(b, d, vars[0].data(), vars[1].data()[0], vars[2].data());
    loss = m.backward(b, d, vars[2].data(), grads[0].data(), grads[1].data()[0], grads[2].data(), grad_block);
    dropped += t.push_table(0, d.unique, grad_block);
    t.push_pull(grads, vars);
    if (step % 100 == 0 || step == s.steps) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("worker %zu  step %5zu  loss %.4f  %6.0f examples/s  %llu gradient rows dropped (no row)",
                  t.replica(), step, loss, double(step * s.batch) / seconds, static_cast<unsigned long long>(dropped));
      if (cache) std::printf("  row cache hit rate %.3f", cache->statistics().hit_rate());
      std::printf("\n");
      std::fflush(stdout);
    }
  }

  double auc = 0, best = 0;
  if (t.is_chief()) {
    // Every worker's pushes applied: a sync table's step, or an async or SSP table's updates.
    const std::uint64_t done = s.rule == "sync" ? s.steps : s.steps * t.replicas();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (t.read_table(0, {}, {}) < done) {
      if (std::chrono::steady_clock::now() > deadline) throw dsgd::error(dsgd::errc::timed_out, "the table's pushes");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    t.pull(vars);
    click_stream test({.seed = 7,
                       .part = click_stream::split::test,
                       .batch = s.eval,
                       .start = std::uint64_t(s.steps * s.batch * t.replicas()),
                       .cardinality_scale = s.scale});
    const auto& b = test.next();
    const auto& d = m.dedup.run(b.keys);
    m.block.resize(d.unique.size() * s.dim);
    t.read_table(0, d.unique, m.block);
    m.forward(b, d, vars[0].data(), vars[1].data()[0], vars[2].data());
    auc = dsgd::data::auc(std::span<const float>(m.scores), b.labels);
    best = dsgd::data::auc(std::span<const float>(b.probabilities), b.labels);
    const auto c = t.table_stats(0);  // what a summary hook would put in TensorBoard (scalars())
    std::printf(
        "table ids on the ps tasks: %llu rows (%.1f MB), %llu admitted, %llu lookups refused, %llu evicted, "
        "%llu gradient rows dropped\n",
        static_cast<unsigned long long>(c.rows), double(c.bytes) / 1e6, static_cast<unsigned long long>(c.admitted),
        static_cast<unsigned long long>(c.rejected), static_cast<unsigned long long>(c.evicted),
        static_cast<unsigned long long>(c.dropped));
  }
  t.finish();
  if (!t.is_chief()) return 0;
  std::printf("final test auc %.4f (the teacher's %.4f; %s, %zu workers, %zu steps of %zu)\n", auc, best,
              s.rule.c_str(), t.replicas(), s.steps, s.batch);
  return auc >= s.target ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  po::options_description options("06_embeddings [options]; every task of the cluster runs it");
  auto add = options.add_options();
  add("rule", po::value(&s.rule)->value_name("R"), "sync | async | ssp | hybrid (dense sync, table async) [hybrid]");
  add("staleness", po::value(&s.staleness)->value_name("S"), "ssp's bound [2]");
  add("steps", po::value(&s.steps)->value_name("N"), "steps of each worker [300]");
  add("batch", po::value(&s.batch)->value_name("N"), "examples per worker and step [256]");
  add("dim", po::value(&s.dim)->value_name("N"), "floats per embedding row [8]");
  add("lr", po::value(&s.lr)->value_name("X"), "Adagrad's learning rate, dense and table [0.05]");
  add("admit", po::value(&s.admit)->value_name("N"), "steps a key is seen before it gets a row [2]");
  add("eval", po::value(&s.eval)->value_name("N"), "test examples the chief scores [20000]");
  add("scale", po::value(&s.scale)->value_name("X"), "the click stream's cardinality_scale [0.01]");
  add("target", po::value(&s.target)->value_name("AUC"), "exit 1 if the chief ends below this AUC [0]");
  add("cache", po::value(&s.cache)->value_name("S"),
      "serve rows pulled at most S steps ago from a worker-side cache, pull only the misses [none]");
  add("help,h", "this text");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    if (vm.count("help")) return std::cout << options, 0;
    po::notify(vm);
    if (s.rule != "sync" && s.rule != "async" && s.rule != "ssp" && s.rule != "hybrid")
      throw po::error("--rule " + s.rule + ": expected sync, async, ssp or hybrid");
    if (s.steps < 1 || s.batch < 1 || s.dim < 1 || s.eval < 1 || s.admit < 1 || !(s.lr > 0) || !(s.scale > 0))
      throw po::error("--steps, --batch, --dim, --eval, --admit, --lr and --scale must be above 0");
  } catch (const po::error& e) {
    std::cerr << "06_embeddings: " << e.what() << "\n" << options;
    return 2;
  }
  try {
    if (s.rule == "async") return train(s, dsgd::update::async{});
    if (s.rule == "ssp") return train(s, dsgd::update::bounded_staleness{.staleness = s.staleness});
    return train(s, dsgd::update::sync_average{});  // sync, hybrid
  } catch (const dsgd::error& e) {
    std::cerr << "06_embeddings: " << e.what() << "\n";
    return 1;
  }
}
