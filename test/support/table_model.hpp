// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// A small model with an embedding table, for the tests of tables under the update rules: each
// example has three keys and a label, and its score is the sum of its rows' elements (logistic
// regression on summed embeddings). sync_oracle() is one process by hand on the concatenated
// batch: a std::map of rows, count-based admission at the step's apply in ascending key order,
// Adagrad's formula.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <span>
#include <vector>

namespace dsgd::test {

struct table_example {
  std::vector<std::uint64_t> keys;
  float label;
};

using table_rows = std::map<std::uint64_t, std::vector<float>>;

/// Worker @p k's batch at step @p s: six examples, each two of ten common keys and one of twenty
/// rare ones (so count-based admission has keys to refuse), and a label.
inline std::vector<table_example> table_batch(std::size_t k, std::size_t s) {
  std::mt19937 rng(unsigned(100 * s + k));
  std::uniform_int_distribution<std::uint64_t> common(0, 9), rare(10, 29);
  std::vector<table_example> b(6);
  for (auto& e : b) {
    e.keys = {1000 + common(rng), 1000 + common(rng), 1000 + rare(rng)};
    e.label = float(rng() % 2);
  }
  return b;
}

/// @returns the batch's keys, each once, ascending.
inline std::vector<std::uint64_t> unique_keys(const std::vector<table_example>& b) {
  std::set<std::uint64_t> u;
  for (const auto& e : b) u.insert(e.keys.begin(), e.keys.end());
  return {u.begin(), u.end()};
}

/// The gradient of the batch's mean logistic loss with respect to each key's row, given the
/// rows read for its keys (rows of @p dim).
inline table_rows table_gradient(const std::vector<table_example>& b, const table_rows& rows, std::size_t dim) {
  table_rows g;
  for (const auto& e : b) {
    float score = 0.f;
    for (auto k : e.keys)
      for (float v : rows.at(k)) score += v;
    const float d = (1.f / (1.f + std::exp(-score)) - e.label) / float(b.size());
    for (auto k : e.keys) {
      auto& row = g[k];
      row.resize(dim, 0.f);
      for (auto& v : row) v += d;
    }
  }
  return g;
}

/// What one worker does at a step: its batch's unique keys, their rows as @p pull reads them
/// (keys, out), and the flat gradient rows of those keys to push.
struct table_step {
  std::vector<std::uint64_t> keys;
  std::vector<float> grads;
};
inline table_step table_worker_step(std::size_t k, std::size_t s, std::size_t dim,
                                    const std::function<void(std::span<const std::uint64_t>, std::span<float>)>& pull) {
  auto b = table_batch(k, s);
  table_step out{unique_keys(b), {}};
  std::vector<float> flat(out.keys.size() * dim);
  pull(out.keys, flat);
  table_rows rows;
  for (std::size_t i = 0; i < out.keys.size(); ++i)
    rows[out.keys[i]].assign(flat.begin() + i * dim, flat.begin() + (i + 1) * dim);
  auto g = table_gradient(b, rows, dim);
  for (auto key : out.keys) out.grads.insert(out.grads.end(), g[key].begin(), g[key].end());
  return out;
}

/// One process on the concatenated batches of @p workers workers for @p steps steps: the rows
/// it ends with, and (in @p dropped) the gradient rows dropped for keys not admitted. A key gets
/// a row the @p admit_after-th step it is pushed in; @p init gives a key's initial row; Adagrad
/// (learning rate @p lr, initial accumulator @p acc0, epsilon 1e-7) on the mean over workers.
inline table_rows sync_oracle(std::size_t workers, std::size_t steps, std::size_t dim, int admit_after, float lr,
                              float acc0, const std::function<void(std::uint64_t, std::span<float>)>& init,
                              std::size_t& dropped) {
  table_rows w, acc;
  std::map<std::uint64_t, int> seen;
  dropped = 0;
  auto row_of = [&](std::uint64_t key) {
    if (auto it = w.find(key); it != w.end()) return it->second;
    std::vector<float> r(dim);
    init(key, r);
    return r;
  };
  for (std::size_t s = 0; s < steps; ++s) {
    table_rows sum;
    for (std::size_t k = 0; k < workers; ++k) {
      auto b = table_batch(k, s);
      table_rows rows;
      for (auto key : unique_keys(b)) rows[key] = row_of(key);
      for (auto& [key, g] : table_gradient(b, rows, dim)) {
        auto& total = sum[key];
        total.resize(dim, 0.f);
        for (std::size_t c = 0; c < dim; ++c) total[c] += g[c];
      }
    }
    for (auto& [key, g] : sum) {  // ascending keys
      if (!w.contains(key)) {
        if (++seen[key] < admit_after) {
          ++dropped;
          continue;
        }
        w[key] = row_of(key);
        acc[key].assign(dim, acc0);
      }
      for (std::size_t c = 0; c < dim; ++c) {
        const float gi = g[c] / float(workers);
        acc[key][c] += gi * gi;
        w[key][c] -= lr * gi / (std::sqrt(acc[key][c]) + 1e-7f);
      }
    }
  }
  return w;
}

}  // namespace dsgd::test
