// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/model/blas.hpp>, <dsgd/model/feed_forward.hpp>, <dsgd/model/mlp.hpp>,
// <dsgd/model/softmax_regression.hpp> and <dsgd/model/train.hpp>: GEMM against a naive product,
// gradients against finite differences, training on a synthetic problem, replicas.
#include <dsgd/device/cpu.hpp>
#include <dsgd/model/blas.hpp>
#include <dsgd/model/feed_forward.hpp>
#include <dsgd/model/mlp.hpp>
#include <dsgd/model/softmax_regression.hpp>
#include <dsgd/model/train.hpp>
#include <dsgd/optim/sgd.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(model_feed_forward_test)

using cpu = dsgd::device::cpu;
using dsgd::model::feed_forward;

static_assert(std::copy_constructible<dsgd::model::mlp<cpu>>);
static_assert(std::copy_constructible<dsgd::model::softmax_regression<cpu>>);
static_assert(std::derived_from<dsgd::model::mlp<cpu>, feed_forward<cpu>>);

namespace {

std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float scale = 1.f) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> dist(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(g);
  return v;
}

std::vector<std::int32_t> random_labels(std::size_t n, std::size_t classes, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<std::int32_t> v(n);
  for (auto& y : v) y = static_cast<std::int32_t>(g() % classes);
  return v;
}

/// Gives every parameter random values so that biases and kernels all matter.
void randomise(feed_forward<cpu>& model, std::uint64_t seed) {
  for (auto& p : model.parameters()) {
    auto v = random_floats(p.size(), seed++, p.shape().rank() == 2 ? 0.5f : 0.2f);
    p.assign(v);
  }
}

/// Points in `classes` Gaussian clusters around random centres in `features` dimensions.
struct clusters {
  std::vector<float> x;
  std::vector<std::int32_t> y;
  clusters(std::size_t n, std::size_t features, std::size_t classes, std::uint64_t seed) {
    auto centres = random_floats(classes * features, seed, 1.f);
    auto noise = random_floats(n * features, seed + 1, 0.5f);
    y = random_labels(n, classes, seed + 2);
    x.resize(n * features);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t f = 0; f < features; ++f)
        x[i * features + f] = centres[static_cast<std::size_t>(y[i]) * features + f] + noise[i * features + f];
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(model_blas)

BOOST_AUTO_TEST_CASE(gemm_matches_a_naive_product_for_every_transposition) {
  const int m = 5, n = 4, k = 3;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      auto a = random_floats(m * k, 1), b = random_floats(k * n, 2), c = random_floats(m * n, 3);
      auto at = [&](int i, int p) { return ta ? a[p * m + i] : a[i * k + p]; };
      auto bt = [&](int p, int j) { return tb ? b[j * k + p] : b[p * n + j]; };
      std::vector<float> expected(m * n);
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          float s = 0;
          for (int p = 0; p < k; ++p) s += at(i, p) * bt(p, j);
          expected[i * n + j] = 2.f * s + 0.5f * c[i * n + j];
        }
      dsgd::model::blas<cpu>::gemm(cpu{}, ta, tb, m, n, k, 2.f, a.data(), ta ? m : k, b.data(), tb ? k : n, 0.5f,
                                   c.data(), n);
      BOOST_TEST(c == expected, boost::test_tools::tolerance(1e-5f) << boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(the_blas_thread_count_can_be_set) {
  const int before = dsgd::model::blas_threads();
  dsgd::model::set_blas_threads(1);
  BOOST_TEST(dsgd::model::blas_threads() == 1);
  dsgd::model::set_blas_threads(before);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(model_feed_forward)

BOOST_AUTO_TEST_CASE(parameters_are_named_shaped_and_initialised_in_creation_order) {
  dsgd::model::mlp<cpu> net({}, {.seed = 3});
  BOOST_TEST(net.widths() == (std::vector<std::size_t>{784, 256, 128, 10}), boost::test_tools::per_element());
  BOOST_TEST(net.names() == (std::vector<std::string>{"dense0/kernel", "dense0/bias", "dense1/kernel", "dense1/bias",
                                                      "dense2/kernel", "dense2/bias"}),
             boost::test_tools::per_element());
  BOOST_REQUIRE(net.parameters().size() == 6u);
  BOOST_TEST((net.parameters()[0].shape() == dsgd::shape{784, 256}));
  BOOST_TEST((net.parameters()[3].shape() == dsgd::shape{128}));
  BOOST_TEST(net.parameter_count() == 784u * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  for (std::size_t i = 0; i < 6; ++i) BOOST_TEST((net.gradients()[i].shape() == net.parameters()[i].shape()));
  auto k0 = net.parameters()[0].to_host();
  const float limit = std::sqrt(6.f / (784 + 256));
  BOOST_TEST(*std::max_element(k0.begin(), k0.end()) <= limit);
  BOOST_TEST(*std::min_element(k0.begin(), k0.end()) >= -limit);
  BOOST_TEST(*std::max_element(k0.begin(), k0.end()) > 0.9f * limit);
  auto b0 = net.parameters()[1].to_host();
  BOOST_TEST(std::all_of(b0.begin(), b0.end(), [](float x) { return x == 0.f; }));
  // Layers draw from different streams.
  BOOST_TEST(net.parameters()[2].to_host()[0] != net.parameters()[0].to_host()[0]);

  dsgd::model::softmax_regression<cpu> lr({}, {.seed = 3});
  BOOST_TEST(lr.names() == (std::vector<std::string>{"dense0/kernel", "dense0/bias"}),
             boost::test_tools::per_element());
  BOOST_TEST((lr.parameters()[0].shape() == dsgd::shape{784, 10}));
}

BOOST_AUTO_TEST_CASE(gradients_match_central_finite_differences) {
  const std::size_t batch = 8;
  for (const auto& widths : {std::vector<std::size_t>{20, 16, 12, 5}, std::vector<std::size_t>{30, 7}}) {
    feed_forward<cpu> model({}, widths, 11);
    randomise(model, 100);
    const auto x = random_floats(batch * widths.front(), 5);
    const auto y = random_labels(batch, widths.back(), 6);
    const float loss = model.forward_backward(x.data(), y.data(), batch);
    BOOST_TEST(loss == model.loss(x.data(), y.data(), batch), boost::test_tools::tolerance(1e-5f));
    std::mt19937_64 pick(9);
    const float eps = 1e-2f;
    double worst = 0;
    for (std::size_t t = 0; t < model.parameters().size(); ++t) {
      auto& p = model.parameters()[t];
      const auto grad = model.gradients()[t].to_host();
      auto values = p.to_host();
      for (int c = 0; c < 40; ++c) {
        const std::size_t i = pick() % values.size();
        const float original = values[i];
        values[i] = original + eps;
        p.assign(values);
        const double up = model.loss(x.data(), y.data(), batch);
        values[i] = original - eps;
        p.assign(values);
        const double down = model.loss(x.data(), y.data(), batch);
        values[i] = original;
        p.assign(values);
        const double numeric = (up - down) / (2 * eps);
        const double error = std::abs(numeric - grad[i]) / (std::abs(numeric) + std::abs(grad[i]) + 1e-2);
        worst = std::max(worst, error);
        BOOST_TEST(error < 1e-2, model.names()[t] << "[" << i << "]: numeric " << numeric << ", backprop " << grad[i]);
      }
    }
    BOOST_TEST_MESSAGE("worst relative gradient error " << worst);
  }
}

// What trainer::overlap relies on: each parameter is announced before its first read, each
// gradient once final, in the order the passes run; and the hooks change nothing computed.
BOOST_AUTO_TEST_CASE(step_hooks_hear_of_each_layer_in_the_order_of_the_passes) {
  struct recorder {
    feed_forward<cpu>* model;
    std::vector<std::string> events;
    std::vector<std::vector<float>> gradients;  // as each was announced
    void parameters_needed(std::size_t i) { events.push_back("need " + model->names()[i]); }
    void gradient_ready(std::size_t i) {
      events.push_back("ready " + model->names()[i]);
      gradients.push_back(model->gradients()[i].to_host());
    }
  };
  static_assert(dsgd::model::step_hooks<recorder>);
  const std::size_t batch = 8;
  feed_forward<cpu> hooked({}, {20, 16, 12, 5}, 11), plain({}, {20, 16, 12, 5}, 11);
  const auto x = random_floats(batch * 20, 5);
  const auto y = random_labels(batch, 5, 6);
  recorder r{&hooked, {}, {}};
  const float loss = hooked.forward_backward(x.data(), y.data(), batch, r);
  BOOST_TEST(loss == plain.forward_backward(x.data(), y.data(), batch));
  const std::vector<std::string> expected{"need dense0/kernel",  "need dense0/bias",    "need dense1/kernel",
                                          "need dense1/bias",    "need dense2/kernel",  "need dense2/bias",
                                          "ready dense2/kernel", "ready dense2/bias",   "ready dense1/kernel",
                                          "ready dense1/bias",   "ready dense0/kernel", "ready dense0/bias"};
  BOOST_TEST(r.events == expected, boost::test_tools::per_element());
  // Announced gradients are final: the backward pass does not write them again.
  const std::vector<std::size_t> order{4, 5, 2, 3, 0, 1};
  for (std::size_t k = 0; k < order.size(); ++k) {
    BOOST_TEST(r.gradients[k] == hooked.gradients()[order[k]].to_host(), boost::test_tools::per_element());
    BOOST_TEST(r.gradients[k] == plain.gradients()[order[k]].to_host(), boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(sgd_on_separable_clusters_drives_the_loss_down) {
  const std::size_t n = 512, features = 16, classes = 4;
  clusters data(n, features, classes, 21);
  dsgd::model::mlp<cpu> net({}, {.hidden = {32}, .inputs = features, .classes = classes, .seed = 1});
  const float initial = net.loss(data.x.data(), data.y.data(), n);
  dsgd::optim::sgd opt{0.1f};
  std::vector<dsgd::optim::sgd::state<cpu>> states;
  for (auto& p : net.parameters()) states.emplace_back(cpu{}, p.size());
  dsgd::model::shuffled_batches batches(data.x.data(), data.y.data(), n, features, {.batch = 32, .seed = 2});
  for (int epoch = 0; epoch < 10; ++epoch) {
    batches.run_epoch([&](const dsgd::model::batch_view& b) {
      float l = net.forward_backward(b.images, b.labels, b.size);
      for (std::size_t i = 0; i < states.size(); ++i)
        opt.apply(cpu{}, states[i], net.parameters()[i].data(), net.gradients()[i].data(), net.parameters()[i].size());
      return l;
    });
  }
  const auto final = net.evaluate(data.x.data(), data.y.data(), n, 100);
  BOOST_TEST_MESSAGE("loss " << initial << " -> " << final.loss << ", accuracy " << final.accuracy);
  BOOST_TEST(final.loss < 0.2 * initial);
  BOOST_TEST(final.accuracy > 0.95);
}

BOOST_AUTO_TEST_CASE(evaluation_in_batches_does_not_depend_on_the_batch_size) {
  feed_forward<cpu> model({}, {10, 8, 3}, 4);
  randomise(model, 40);
  const std::size_t n = 37;
  const auto x = random_floats(n * 10, 1);
  const auto y = random_labels(n, 3, 2);
  const auto whole = model.evaluate(x.data(), y.data(), n, n);
  for (std::size_t batch : {1u, 5u, 36u, 100u}) {
    const auto parts = model.evaluate(x.data(), y.data(), n, batch);
    BOOST_TEST(parts.loss == whole.loss, boost::test_tools::tolerance(1e-6));
    BOOST_TEST(parts.accuracy == whole.accuracy);
  }
  BOOST_TEST(whole.accuracy * n == std::round(whole.accuracy * n), boost::test_tools::tolerance(1e-9));
}

BOOST_AUTO_TEST_CASE(replicas_with_one_seed_are_identical_and_copies_are_independent) {
  dsgd::model::mlp<cpu> a({}, {.seed = 5}), b({}, {.seed = 5}), c({}, {.seed = 6});
  for (std::size_t i = 0; i < a.parameters().size(); i += 2) {
    BOOST_TEST(a.parameters()[i].to_host() == b.parameters()[i].to_host());
    BOOST_TEST(a.parameters()[i].to_host() != c.parameters()[i].to_host());
  }
  auto copy = a;
  auto before = a.parameters()[0].to_host();
  std::vector<float> ones(copy.parameters()[0].size(), 1.f);
  copy.parameters()[0].assign(ones);
  BOOST_TEST(a.parameters()[0].to_host() == before);
  c.copy_parameters_from(a);
  for (std::size_t i = 0; i < a.parameters().size(); ++i)
    BOOST_TEST(c.parameters()[i].to_host() == a.parameters()[i].to_host());
}

BOOST_AUTO_TEST_CASE(replicas_on_separate_threads_compute_what_one_thread_computes) {
  const std::size_t batch = 64, replicas = 4;
  dsgd::model::mlp<cpu> reference({}, {.hidden = {64, 32}, .seed = 8});
  std::vector<std::vector<float>> x;
  std::vector<std::vector<std::int32_t>> y;
  std::vector<float> expected_loss;
  std::vector<std::vector<float>> expected_grad;
  for (std::size_t r = 0; r < replicas; ++r) {
    x.push_back(random_floats(batch * 784, 50 + r));
    y.push_back(random_labels(batch, 10, 60 + r));
    expected_loss.push_back(reference.forward_backward(x[r].data(), y[r].data(), batch));
    expected_grad.push_back(reference.gradients()[0].to_host());
  }
  std::vector<dsgd::model::mlp<cpu>> nets(replicas, reference);
  std::vector<float> loss(replicas);
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < replicas; ++r)
    threads.emplace_back([&, r] {
      for (int repeat = 0; repeat < 20; ++repeat) loss[r] = nets[r].forward_backward(x[r].data(), y[r].data(), batch);
    });
  for (auto& t : threads) t.join();
  for (std::size_t r = 0; r < replicas; ++r) {
    BOOST_TEST(loss[r] == expected_loss[r], boost::test_tools::tolerance(1e-5f));
    BOOST_TEST(nets[r].gradients()[0].to_host() == expected_grad[r], boost::test_tools::tolerance(1e-4f)
                                                                         << boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(bad_input_throws_naming_the_problem) {
  feed_forward<cpu> model({}, {4, 3}, 1);
  std::vector<float> x(8, 0.f);
  std::vector<std::int32_t> y{0, 3};
  BOOST_CHECK_EXCEPTION(model.forward_backward(x.data(), y.data(), 2), dsgd::error, [](const dsgd::error& e) {
    return e.code() == dsgd::make_error_code(dsgd::errc::invalid_argument) &&
           std::string(e.what()).find("label 3 at batch position 1") != std::string::npos;
  });
  BOOST_CHECK_THROW(model.forward_backward(x.data(), y.data(), 0), dsgd::error);
  BOOST_CHECK_THROW(model.evaluate(x.data(), y.data(), 1, 0), dsgd::error);
  BOOST_CHECK_THROW(feed_forward<cpu>({}, {4}, 1), dsgd::error);
  BOOST_CHECK_THROW(feed_forward<cpu>({}, {4, 0, 3}, 1), dsgd::error);
  feed_forward<cpu> other({}, {4, 2}, 1);
  BOOST_CHECK_EXCEPTION(model.copy_parameters_from(other), dsgd::error, [](const dsgd::error& e) {
    return e.code() == dsgd::make_error_code(dsgd::errc::shape_mismatch) &&
           std::string(e.what()).find("dense0/kernel") != std::string::npos;
  });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(model_shuffled_batches)

BOOST_AUTO_TEST_CASE(every_epoch_visits_every_example_once_in_a_new_order) {
  const std::size_t n = 10, features = 2;
  std::vector<float> x(n * features);
  std::vector<std::int32_t> y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i * features] = static_cast<float>(i);
    x[i * features + 1] = -static_cast<float>(i);
    y[i] = static_cast<std::int32_t>(i);
  }
  dsgd::model::shuffled_batches batches(x.data(), y.data(), n, features, {.batch = 4, .seed = 3});
  BOOST_TEST(batches.batches_per_epoch() == 3u);
  std::vector<std::vector<std::int32_t>> orders;
  for (int epoch = 1; epoch <= 3; ++epoch) {
    std::vector<std::int32_t> seen;
    auto stats = batches.run_epoch([&](const dsgd::model::batch_view& b) {
      for (std::size_t r = 0; r < b.size; ++r) {
        BOOST_TEST(b.images[r * features] == static_cast<float>(b.labels[r]));
        BOOST_TEST(b.images[r * features + 1] == -static_cast<float>(b.labels[r]));
        seen.push_back(b.labels[r]);
      }
      return 1.0;
    });
    BOOST_TEST(stats.epoch == static_cast<std::size_t>(epoch));
    BOOST_TEST(stats.steps == 3u);
    BOOST_TEST(stats.examples == n);
    BOOST_TEST(stats.mean_loss == 1.0);
    orders.push_back(seen);
    std::sort(seen.begin(), seen.end());
    for (std::size_t i = 0; i < n; ++i) BOOST_TEST(seen[i] == static_cast<std::int32_t>(i));
  }
  BOOST_TEST(orders[0] != orders[1]);
  dsgd::model::shuffled_batches again(x.data(), y.data(), n, features, {.batch = 4, .seed = 3});
  std::vector<std::int32_t> first;
  again.run_epoch([&](const dsgd::model::batch_view& b) {
    first.insert(first.end(), b.labels, b.labels + b.size);
    return 0.0;
  });
  BOOST_TEST(first == orders[0], boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(shards_partition_the_examples) {
  const std::size_t n = 11;
  std::vector<float> x(n);
  std::vector<std::int32_t> y(n);
  for (std::size_t i = 0; i < n; ++i) y[i] = static_cast<std::int32_t>(i);
  std::vector<int> count(n);
  for (std::size_t shard = 0; shard < 3; ++shard) {
    dsgd::model::shuffled_batches b(x.data(), y.data(), n, 1, {.batch = 2, .seed = 1, .shard = shard, .shards = 3});
    b.run_epoch([&](const dsgd::model::batch_view& v) {
      for (std::size_t r = 0; r < v.size; ++r) {
        BOOST_TEST(static_cast<std::size_t>(v.labels[r]) % 3 == shard);
        ++count[static_cast<std::size_t>(v.labels[r])];
      }
      return 0.0;
    });
  }
  BOOST_TEST(std::all_of(count.begin(), count.end(), [](int c) { return c == 1; }));
  BOOST_CHECK_THROW(dsgd::model::shuffled_batches(x.data(), y.data(), n, 1, {.shard = 3, .shards = 3}), dsgd::error);
  BOOST_CHECK_THROW(dsgd::model::shuffled_batches(x.data(), y.data(), n, 1, {.batch = 0}), dsgd::error);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
