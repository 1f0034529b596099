// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/model/wide_deep.hpp>: the wide keys' layout, every gradient (dense variables,
// wide rows, deep rows) against finite differences of the loss, predict() against the loss's
// logits, training on the click stream in one process to the teacher's AUC neighbourhood, and
// the errors that name a bad input.
#include <dsgd/data/auc.hpp>
#include <dsgd/data/click_stream.hpp>
#include <dsgd/embedding/dedup.hpp>
#include <dsgd/model/wide_deep.hpp>

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

BOOST_AUTO_TEST_SUITE(model_wide_deep_test)

using dsgd::model::wide_deep;

namespace {

// The gradients of the mean loss, which forward_backward() returns, so that finite differences of
// it check them.
const dsgd::model::wide_deep_config small{.dense_features = 3,
                                          .fields = 4,
                                          .crosses = {{0, 2}},
                                          .dim = 2,
                                          .hidden = {5, 3},
                                          .seed = 11,
                                          .loss_reduction = dsgd::model::wide_deep_config::reduction::mean};

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float scale) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> dist(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(g);
  return v;
}

// A batch of 6 examples whose ids repeat (so rows are shared), with its lookups.
struct fixture {
  wide_deep net{small};
  std::size_t n = 6;
  std::vector<float> dense = random_floats(n * 3, 1, 1.f), labels = {1, 0, 0, 1, 1, 0};
  std::vector<std::uint64_t> ids, wide_keys;
  dsgd::embedding::deduplicator wd, dd;
  std::vector<float> wide_rows, deep_rows, wide_grads, deep_grads;
  std::vector<std::uint32_t> wide_inverse, deep_inverse;

  fixture() {
    for (std::size_t i = 0; i < n; ++i)
      for (std::uint64_t f = 0; f < 4; ++f) ids.push_back(f * 100 + (i * 7 + f) % 3);
    net.wide_keys(ids, n, wide_keys);
    const auto& w = wd.run(wide_keys);
    wide_inverse.assign(w.inverse.begin(), w.inverse.end());
    const auto& d = dd.run(ids);
    deep_inverse.assign(d.inverse.begin(), d.inverse.end());
    wide_rows = random_floats(w.unique.size(), 2, 0.3f);
    deep_rows = random_floats(d.unique.size() * 2, 3, 0.5f);
    wide_grads.resize(wide_rows.size());
    deep_grads.resize(deep_rows.size());
    for (auto& p : net.parameters()) p.assign(random_floats(p.size(), p.size() * 31 + 5, 0.5f));
  }
  wide_deep::examples examples() const { return {n, dense, ids, labels}; }
  float loss() {
    return net.forward_backward(examples(), {wide_rows, wide_inverse}, {deep_rows, deep_inverse}, wide_grads,
                                deep_grads);
  }
};

// The central difference of the loss in *x, against the analytic gradient g.
template <class Loss>
void check_derivative(Loss&& loss, float& x, float g, const std::string& what) {
  const float h = 1e-2f, keep = x;
  x = keep + h;
  const double up = loss();
  x = keep - h;
  const double down = loss();
  x = keep;
  const double numeric = (up - down) / (2 * h);
  BOOST_TEST_CONTEXT(what << ": analytic " << g << ", numeric " << numeric) {
    BOOST_TEST(std::abs(numeric - g) <= 2e-3 + 2e-2 * std::abs(numeric));
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(wide_keys_are_ids_crosses_and_the_bias) {
  fixture f;
  BOOST_TEST(f.net.config().wide_keys() == 6u);
  BOOST_TEST(f.wide_keys.size() == f.n * 6);
  for (std::size_t i = 0; i < f.n; ++i) {
    for (std::size_t j = 0; j < 4; ++j) BOOST_TEST(f.wide_keys[i * 6 + j] == f.ids[i * 4 + j]);
    BOOST_TEST(f.wide_keys[i * 6 + 5] == wide_deep::bias_key);
  }
  // A cross is a function of its pair alone: examples with the same pair share it.
  for (std::size_t i = 0; i < f.n; ++i)
    for (std::size_t k = 0; k < f.n; ++k) {
      const bool same = f.ids[i * 4] == f.ids[k * 4] && f.ids[i * 4 + 2] == f.ids[k * 4 + 2];
      BOOST_TEST((f.wide_keys[i * 6 + 4] == f.wide_keys[k * 6 + 4]) == same);
    }
  std::vector<std::uint64_t> out;
  BOOST_CHECK_EXCEPTION(f.net.wide_keys(f.ids, f.n + 1, out), dsgd::error, [](const dsgd::error& e) {
    return e.code() == dsgd::errc::shape_mismatch && std::string(e.what()).find("ids holds 24") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(every_gradient_matches_finite_differences) {
  fixture f;
  f.loss();
  // Copies: the analytic gradients of the point where the differences are taken.
  const auto wide_g = f.wide_grads, deep_g = f.deep_grads;
  std::vector<std::vector<float>> dense_g;
  for (const auto& g : f.net.gradients()) dense_g.push_back(g.to_host());
  auto loss = [&] { return f.loss(); };
  for (std::size_t r = 0; r < f.wide_rows.size(); ++r)
    check_derivative(loss, f.wide_rows[r], wide_g[r], "wide row " + std::to_string(r));
  for (std::size_t r = 0; r < f.deep_rows.size(); ++r)
    check_derivative(loss, f.deep_rows[r], deep_g[r], "deep row element " + std::to_string(r));
  for (std::size_t p = 0; p < f.net.parameters().size(); ++p) {
    auto& param = f.net.parameters()[p];
    for (std::size_t e = 0; e < param.size(); e += 3)
      check_derivative(loss, param.data()[e], dense_g[p][e], f.net.names()[p] + "[" + std::to_string(e) + "]");
  }
}

// The default, TF1's canned estimators' SUM reduction: every gradient n times the mean's.
BOOST_AUTO_TEST_CASE(summed_loss_gradients_are_n_times_the_mean_ones) {
  fixture mean;
  auto sum_config = small;
  sum_config.loss_reduction = dsgd::model::wide_deep_config{}.loss_reduction;
  BOOST_TEST((sum_config.loss_reduction == dsgd::model::wide_deep_config::reduction::sum));
  fixture sum;
  sum.net = wide_deep(sum_config);
  for (std::size_t p = 0; p < mean.net.parameters().size(); ++p)
    sum.net.parameters()[p].assign(mean.net.parameters()[p].to_host());
  BOOST_TEST(sum.loss() == mean.loss(), boost::test_tools::tolerance(1e-6f));
  const float n = float(mean.n);
  for (std::size_t r = 0; r < mean.wide_grads.size(); ++r)
    BOOST_TEST(sum.wide_grads[r] == n * mean.wide_grads[r], boost::test_tools::tolerance(1e-4f));
  for (std::size_t r = 0; r < mean.deep_grads.size(); ++r)
    BOOST_TEST(sum.deep_grads[r] == n * mean.deep_grads[r], boost::test_tools::tolerance(1e-4f));
  const auto g = sum.net.gradients()[0].to_host(), h = mean.net.gradients()[0].to_host();
  for (std::size_t e = 0; e < g.size(); ++e) BOOST_TEST(g[e] == n * h[e], boost::test_tools::tolerance(1e-4f));
}

BOOST_AUTO_TEST_CASE(predict_gives_the_logits_of_the_loss) {
  fixture f;
  const float loss = f.loss();
  std::vector<float> logits(f.n);
  f.net.predict(f.examples(), {f.wide_rows, f.wide_inverse}, {f.deep_rows, f.deep_inverse}, logits);
  double expected = 0;
  for (std::size_t i = 0; i < f.n; ++i) {
    const double p = wide_deep::sigmoid(logits[i]);
    expected -= f.labels[i] ? std::log(p) : std::log(1 - p);
  }
  BOOST_TEST(loss == expected / double(f.n), boost::test_tools::tolerance(1e-5));
  BOOST_TEST(f.net.names().front() == "dnn/hiddenlayer_0/kernel");
  BOOST_TEST(f.net.names().back() == "dnn/logits/bias");
  BOOST_TEST(f.net.parameter_count() == (11u * 5 + 5) + (5 * 3 + 3) + (3 + 1));
}

// One process, the tables as hash maps with Adagrad on every part: the model learns the click
// stream well past chance and near the teacher (whose AUC is the best reachable).
BOOST_AUTO_TEST_CASE(learns_the_click_stream_in_one_process) {
  using dsgd::data::click_stream;
  wide_deep net({.dim = 4, .hidden = {16}});
  const float lr = 0.05f;
  struct row {
    std::vector<float> v, acc;
  };
  std::unordered_map<std::uint64_t, row> wide, deep;
  auto rows_of = [](auto& table, std::span<const std::uint64_t> keys, std::size_t dim, std::vector<float>& out) {
    out.resize(keys.size() * dim);
    for (std::size_t u = 0; u < keys.size(); ++u) {
      auto [it, fresh] = table.try_emplace(keys[u]);
      if (fresh) {
        it->second.v = random_floats(dim, keys[u], dim == 1 ? 0.f : 0.05f);
        it->second.acc.assign(dim, 0.1f);
      }
      std::copy(it->second.v.begin(), it->second.v.end(), out.begin() + u * dim);
    }
  };
  auto adagrad = [&](float* v, float* acc, const float* g, std::size_t n) {
    for (std::size_t e = 0; e < n; ++e) {
      acc[e] += g[e] * g[e];
      v[e] -= lr * g[e] / std::sqrt(acc[e]);
    }
  };
  std::vector<std::vector<float>> dense_acc;
  for (const auto& p : net.parameters()) dense_acc.emplace_back(p.size(), 0.1f);
  click_stream train({.seed = 3, .batch = 256, .cardinality_scale = 0.001});
  dsgd::embedding::deduplicator wd, dd;
  std::vector<std::uint64_t> keys;
  std::vector<float> wide_rows, deep_rows, wide_grads, deep_grads;
  for (int step = 0; step < 300; ++step) {
    const auto& b = train.next();
    net.wide_keys(b.keys, b.size, keys);
    const auto& w = wd.run(keys);
    const auto& d = dd.run(b.keys);
    rows_of(wide, w.unique, 1, wide_rows);
    rows_of(deep, d.unique, 4, deep_rows);
    wide_grads.resize(wide_rows.size());
    deep_grads.resize(deep_rows.size());
    net.forward_backward({b.size, b.dense, b.keys, b.labels}, {wide_rows, w.inverse}, {deep_rows, d.inverse},
                         wide_grads, deep_grads);
    for (std::size_t u = 0; u < w.unique.size(); ++u) {
      auto& r = wide[w.unique[u]];
      adagrad(r.v.data(), r.acc.data(), &wide_grads[u], 1);
    }
    for (std::size_t u = 0; u < d.unique.size(); ++u) {
      auto& r = deep[d.unique[u]];
      adagrad(r.v.data(), r.acc.data(), &deep_grads[u * 4], 4);
    }
    for (std::size_t p = 0; p < net.parameters().size(); ++p)
      adagrad(net.parameters()[p].data(), dense_acc[p].data(), net.gradients()[p].data(), dense_acc[p].size());
  }
  click_stream test(
      {.seed = 3, .part = click_stream::split::test, .batch = 20000, .start = 300 * 256, .cardinality_scale = 0.001});
  const auto& b = test.next();
  net.wide_keys(b.keys, b.size, keys);
  const auto& w = wd.run(keys);
  const auto& d = dd.run(b.keys);
  rows_of(wide, w.unique, 1, wide_rows);
  rows_of(deep, d.unique, 4, deep_rows);
  std::vector<float> logits(b.size);
  net.predict({b.size, b.dense, b.keys, {}}, {wide_rows, w.inverse}, {deep_rows, d.inverse}, logits);
  const double auc = dsgd::data::auc(std::span<const float>(logits), b.labels);
  const double best = dsgd::data::auc(std::span<const float>(b.probabilities), b.labels);
  BOOST_TEST_MESSAGE("one process: test AUC " << auc << ", the teacher's " << best);
  BOOST_TEST(auc > 0.5 + 0.6 * (best - 0.5));
}

BOOST_AUTO_TEST_CASE(bad_inputs_are_named) {
  fixture f;
  auto fails = [&](auto&& call, dsgd::errc code, const std::string& words) {
    BOOST_CHECK_EXCEPTION(call(), dsgd::error, [&](const dsgd::error& e) {
      BOOST_TEST_MESSAGE(e.what());
      return e.code() == code && std::string(e.what()).find(words) != std::string::npos;
    });
  };
  f.labels[2] = 0.5f;
  fails([&] { f.loss(); }, dsgd::errc::invalid_argument, "label 2 is 0.5");
  f.labels[2] = 0.f;
  f.deep_inverse[7] = 1000;
  fails([&] { f.loss(); }, dsgd::errc::invalid_argument, "deep lookup's position 7 names row 1000");
  f.deep_inverse[7] = 0;
  f.deep_grads.pop_back();
  fails([&] { f.loss(); }, dsgd::errc::shape_mismatch, "deep_grads holds");
  f.deep_grads.push_back(0);
  f.wide_rows.push_back(0);
  f.wide_grads.push_back(0);
  f.deep_rows.push_back(0);
  f.deep_grads.push_back(0);
  fails([&] { f.loss(); }, dsgd::errc::shape_mismatch, "the deep rows hold");
  fails(
      [&] {
        wide_deep({.fields = 4, .crosses = {{1, 4}}});
      },
      dsgd::errc::invalid_argument, "crosses[0] names field 4 of 4");
  fails([&] { wide_deep({.hidden = {8, 0}}); }, dsgd::errc::invalid_argument, "hidden[1] is 0");
}

BOOST_AUTO_TEST_SUITE_END()
