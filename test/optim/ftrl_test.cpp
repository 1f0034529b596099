// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/optim/ftrl.hpp>: a hand-computed step, every step against a scalar reference
// in double written from TensorFlow's ApplyFtrl/ApplyFtrlV2 formula, the chunked and row maps
// against the whole apply, the settings it refuses, and FTRL's sparsity on a toy logistic
// regression whose noise features end exactly at 0.
#include <dsgd/device/cpu.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/ftrl.hpp>
#include <dsgd/update/chunked_apply.hpp>

#include <support/host_steps.hpp>
#include <support/reference_optim.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(optim_ftrl_test)

using cpu = dsgd::device::cpu;
using dsgd::optim::ftrl;

static_assert(dsgd::Optimizer<ftrl, cpu>);
static_assert(dsgd::optim::elementwise<ftrl>);
static_assert(!dsgd::optim::counts_updates_v<ftrl>);
static_assert(dsgd::checkpointable_state<ftrl::state<cpu>>);
static_assert(dsgd::update::chunked_apply<ftrl>::available);
static_assert(dsgd::update::sparse_apply<ftrl>::available);

namespace {

using dsgd::test::random_values;
using dsgd::test::reference_ftrl;

reference_ftrl reference_of(const ftrl& o) {
  return {o.learning_rate,
          o.learning_rate_power,
          o.initial_accumulator_value,
          o.l1_regularization_strength,
          o.l2_regularization_strength,
          o.l2_shrinkage_regularization_strength,
          {},
          {}};
}

// Settings under test: TF1's defaults but for the rate, then l1 and l2 (both branches of the
// soft threshold), a power other than -0.5, a fixed rate (power 0), and ApplyFtrlV2's shrinkage
// with a zero initial accumulator.
std::vector<ftrl> configurations() {
  return {ftrl{0.1f}, ftrl{0.2f, -0.5f, 0.1f, 0.6f, 0.3f}, ftrl{0.15f, -0.6f, 0.25f, 0.4f, 0.1f},
          ftrl{0.05f, 0.f, 0.1f, 0.3f, 0.f}, ftrl{0.1f, -0.5f, 0.f, 0.4f, 0.05f, 0.1f}};
}

// The slots of @p s as vectors.
std::vector<float> accumulator_of(const ftrl::state<cpu>& s) { return {s.accumulator.begin(), s.accumulator.end()}; }
std::vector<float> linear_of(const ftrl::state<cpu>& s) { return {s.linear.begin(), s.linear.end()}; }

bool same_bits(const float* a, const float* b, std::size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

}  // namespace

BOOST_AUTO_TEST_SUITE(optimizers_on_cpu)

BOOST_AUTO_TEST_CASE(one_step_from_the_initial_accumulator_by_hand) {
  namespace tt = boost::test_tools;
  // lr = 0.5, n0 = 1, w0 = 0, g = 3: n = 1 + 9 = 10, z = 3 - sigma * 0 = 3, and
  // w = -(z - sign(z) l1) / (sqrt(10) / 0.5), or exactly 0 once |z| <= l1.
  dsgd::test::host_steps plain(ftrl{0.5f, -0.5f, 1.f}, {0.f}, {3.f});
  dsgd::test::host_steps l1_below(ftrl{0.5f, -0.5f, 1.f, 1.f}, {0.f}, {3.f});
  dsgd::test::host_steps l1_at(ftrl{0.5f, -0.5f, 1.f, 3.f}, {0.f}, {3.f});
  BOOST_TEST(plain.s.accumulator[0] == 0.f);  // "never updated": read as initial_accumulator_value
  plain.step();
  l1_below.step();
  l1_at.step();
  BOOST_TEST(plain.s.accumulator[0] == 10.f);
  BOOST_TEST(plain.s.linear[0] == 3.f);
  BOOST_TEST(double{plain.w[0]} == -1.5 / std::sqrt(10.0), tt::tolerance(1e-6));
  BOOST_TEST(double{l1_below.w[0]} == -1.0 / std::sqrt(10.0), tt::tolerance(1e-6));
  BOOST_TEST(l1_at.w[0] == 0.f);  // |z| = l1: TensorFlow's `|linear| > l1 ? ... : 0`
  BOOST_TEST(l1_at.s.linear[0] == 3.f);
}

BOOST_AUTO_TEST_CASE(every_step_matches_a_reference_in_double) {
  constexpr std::size_t n = 1001;
  constexpr int steps = 6;
  std::uint32_t seed = 7;
  for (const ftrl& optimizer : configurations()) {
    for (float grad_scale : {1.f, 0.3f}) {
      BOOST_TEST_CONTEXT("power " << optimizer.learning_rate_power << ", l1 " << optimizer.l1_regularization_strength
                                  << ", l2 " << optimizer.l2_regularization_strength << ", shrinkage "
                                  << optimizer.l2_shrinkage_regularization_strength << ", grad_scale " << grad_scale) {
        const auto w0 = random_values(n, seed++, -1.f, 1.f);
        cpu::vector<float> w(w0.begin(), w0.end());
        std::vector<double> expected(w0.begin(), w0.end());
        ftrl::state<cpu> s(cpu{}, n);
        auto ref = reference_of(optimizer);
        const double l1 = optimizer.l1_regularization_strength;
        std::size_t zeros = 0, nonzeros = 0;
        for (int step = 1; step <= steps; ++step) {
          const auto grad = random_values(n, seed++, -1.f, 1.f);
          optimizer.apply(cpu{}, s, w.data(), grad.data(), n, grad_scale);
          ref.step(expected, grad, grad_scale);
          const auto acc = accumulator_of(s);
          const auto lin = linear_of(s);
          std::size_t bad = 0;
          zeros = nonzeros = 0;
          for (std::size_t i = 0; i < n; ++i) {
            // w is continuous in z (a soft threshold), so an absolute bound holds across the
            // branch even where float and double fall on either side of |z| = l1.
            bad += !(std::abs(double{w[i]} - expected[i]) <= 1e-5 * (1.0 + std::abs(expected[i])));
            bad += !(std::abs(double{acc[i]} - ref.n[i]) <= 1e-6 * ref.n[i]);
            bad += !(std::abs(double{lin[i]} - ref.z[i]) <= 1e-5 * (1.0 + std::abs(ref.z[i])));
            // Clearly inside the threshold: exactly 0 in float too.
            if (std::abs(ref.z[i]) < l1 - 1e-4) bad += w[i] != 0.f;
            zeros += w[i] == 0.f;
            nonzeros += w[i] != 0.f;
          }
          BOOST_TEST_CONTEXT("step " << step) { BOOST_TEST(bad == 0u); }
        }
        // Both branches are taken where l1 > 0, and none is zeroed without it.
        BOOST_TEST(nonzeros > n / 10);
        if (l1 > 0) {
          BOOST_TEST(zeros > n / 20);
        } else {
          BOOST_TEST(zeros == 0u);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_chunked_apply_equals_the_whole_apply_bit_for_bit) {
  constexpr std::size_t n = 257;
  const std::size_t cuts[] = {0, 3, 100, 101, n};  // uneven chunks, one of a single element
  std::uint32_t seed = 301;
  for (const ftrl& optimizer : configurations()) {
    const auto w0 = random_values(n, seed++, -1.f, 1.f);
    cpu::vector<float> w_whole(w0.begin(), w0.end()), w_chunks(w0.begin(), w0.end());
    ftrl::state<cpu> s_whole(cpu{}, n), s_chunks(cpu{}, n);
    for (int step = 1; step <= 4; ++step) {
      const float scale = step % 2 ? 1.f : 0.5f;
      const auto grad = random_values(n, seed++, -2.f, 2.f);
      optimizer.apply(cpu{}, s_whole, w_whole.data(), grad.data(), n, scale);
      cpu::vector<float> w_next(n);
      ftrl::state<cpu> s_next(cpu{}, n);
      for (std::size_t c = 0; c + 1 < std::size(cuts); ++c)
        dsgd::update::chunked_apply<ftrl>::apply(optimizer, cpu{}, s_chunks, s_next, w_chunks.data(), w_next.data(),
                                                 grad.data(), cuts[c], cuts[c + 1] - cuts[c], scale);
      w_chunks = w_next;
      s_chunks = std::move(s_next);
      BOOST_TEST_CONTEXT("power " << optimizer.learning_rate_power << ", step " << step) {
        BOOST_TEST(same_bits(w_whole.data(), w_chunks.data(), n));
        BOOST_TEST(same_bits(s_whole.accumulator.data(), s_chunks.accumulator.data(), n));
        BOOST_TEST(same_bits(s_whole.linear.data(), s_chunks.linear.data(), n));
      }
    }
  }
}

// TensorFlow's SparseApplyFtrl: the rows of a sparse push are updated as the dense apply would
// update them, every other row and its slots stay as they are, and a row first touched late
// starts from the initial accumulator like any other.
BOOST_AUTO_TEST_CASE(a_sparse_apply_updates_its_rows_as_the_dense_apply_and_no_other) {
  constexpr std::size_t dim = 3, rows = 8, n = rows * dim;
  const std::vector<std::vector<std::uint64_t>> pushes = {{4, 1}, {1, 5, 0}, {7, 4}, {5}};  // rows 2, 3, 6: never
  std::uint32_t seed = 501;
  for (const ftrl& optimizer : configurations()) {
    BOOST_TEST_CONTEXT("power " << optimizer.learning_rate_power << ", l1 " << optimizer.l1_regularization_strength) {
      const auto w0 = random_values(n, seed++, -1.f, 1.f);
      cpu::vector<float> w(w0.begin(), w0.end());
      ftrl::state<cpu> s(cpu{}, n);
      // Each row on its own, as a dense variable of dim elements.
      std::vector<cpu::vector<float>> row_w;
      std::vector<ftrl::state<cpu>> row_s;
      for (std::size_t r = 0; r < rows; ++r) {
        row_w.emplace_back(w0.begin() + std::ptrdiff_t(r * dim), w0.begin() + std::ptrdiff_t((r + 1) * dim));
        row_s.emplace_back(cpu{}, dim);
      }
      float scale = 1.f;
      for (const auto& push : pushes) {
        const auto packed = random_values(push.size() * dim, seed++, -2.f, 2.f);
        dsgd::update::sparse_apply<ftrl>::apply(optimizer, cpu{}, s, w.data(), push.data(), push.size(), dim,
                                                packed.data(), scale);
        for (std::size_t k = 0; k < push.size(); ++k)
          optimizer.apply(cpu{}, row_s[push[k]], row_w[push[k]].data(), packed.data() + k * dim, dim, scale);
        for (std::size_t r = 0; r < rows; ++r) {
          BOOST_TEST_CONTEXT("row " << r) {
            BOOST_TEST(same_bits(w.data() + r * dim, row_w[r].data(), dim));
            BOOST_TEST(same_bits(s.accumulator.data() + r * dim, row_s[r].accumulator.data(), dim));
            BOOST_TEST(same_bits(s.linear.data() + r * dim, row_s[r].linear.data(), dim));
          }
        }
        scale = 0.5f;
      }
      for (std::size_t r : {2u, 3u, 6u}) {
        for (std::size_t j = 0; j < dim; ++j) {
          BOOST_TEST(w[r * dim + j] == w0[r * dim + j]);
          BOOST_TEST(s.accumulator[r * dim + j] == 0.f);
          BOOST_TEST(s.linear[r * dim + j] == 0.f);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(its_state_names_both_slots_for_checkpoints) {
  ftrl::state<cpu> s(cpu{}, 5);
  std::vector<std::string> names;
  std::size_t counters = 0;
  s.visit([&](const char* name, auto& slot) {
    if constexpr (std::is_same_v<std::decay_t<decltype(slot)>, std::uint64_t>) {
      ++counters;
    } else {
      BOOST_TEST(slot.size() == 5u);
      names.emplace_back(name);
    }
  });
  BOOST_TEST(names == (std::vector<std::string>{"accumulator", "linear"}), boost::test_tools::per_element());
  BOOST_TEST(counters == 0u);
}

BOOST_AUTO_TEST_CASE(bad_settings_are_refused_naming_the_field) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::pair<std::function<void(ftrl&)>, std::string>> cases = {
      {[](ftrl& o) { o.learning_rate = 0.f; }, "learning_rate"},
      {[](ftrl& o) { o.learning_rate = -0.1f; }, "learning_rate"},
      {[nan](ftrl& o) { o.learning_rate = nan; }, "learning_rate"},
      {[](ftrl& o) { o.learning_rate_power = 0.5f; }, "learning_rate_power"},
      {[](ftrl& o) { o.initial_accumulator_value = -0.1f; }, "initial_accumulator_value"},
      {[](ftrl& o) { o.l1_regularization_strength = -1.f; }, "l1_regularization_strength"},
      {[](ftrl& o) { o.l2_regularization_strength = -1e-3f; }, "l2_regularization_strength"},
      {[nan](ftrl& o) { o.l2_regularization_strength = nan; }, "l2_regularization_strength"},
      {[](ftrl& o) { o.l2_shrinkage_regularization_strength = -2.f; }, "l2_shrinkage_regularization_strength"},
  };
  const std::vector<float> w0{0.5f, -0.5f}, g{1.f, 2.f};
  for (const auto& c : cases) {
    const std::string& field = c.second;
    BOOST_TEST_CONTEXT(field) {
      ftrl o{0.1f};
      c.first(o);
      auto names_it = [&field](const dsgd::error& e) {
        return e.code() == dsgd::errc::invalid_argument &&
               std::string(e.what()).find("optim::ftrl." + field + ":") != std::string::npos;
      };
      cpu::vector<float> w(w0.begin(), w0.end());
      ftrl::state<cpu> s(cpu{}, 2);
      BOOST_CHECK_EXCEPTION(o.apply(cpu{}, s, w.data(), g.data(), 2), dsgd::error, names_it);
      const std::uint64_t row = 1;
      BOOST_CHECK_EXCEPTION(dsgd::update::sparse_apply<ftrl>::apply(o, cpu{}, s, w.data(), &row, 1, 1, g.data(), 1.f),
                            dsgd::error, names_it);
      BOOST_CHECK_EXCEPTION(o.validate(), dsgd::error, names_it);
      BOOST_TEST(std::vector<float>(w.begin(), w.end()) == w0, boost::test_tools::per_element());  // nothing written
      BOOST_TEST(accumulator_of(s) == std::vector<float>(2, 0.f), boost::test_tools::per_element());
    }
  }
  BOOST_CHECK_NO_THROW(ftrl{}.validate());
  BOOST_CHECK_NO_THROW((ftrl{1.f, 0.f, 0.f}.validate()));  // power 0 and accumulator 0 are allowed
  BOOST_CHECK_EXCEPTION(ftrl{-1.f}.validate("ps_options.optimizer"), dsgd::error, [](const dsgd::error& e) {
    return std::string(e.what()).find("ps_options.optimizer.learning_rate") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(a_state_of_the_wrong_size_is_rejected) {
  cpu::vector<float> w(4, 0.f), g(4, 1.f);
  ftrl::state<cpu> s(cpu{}, 3);
  BOOST_CHECK_EXCEPTION(ftrl{}.apply(cpu{}, s, w.data(), g.data(), 4), dsgd::error,
                        [](const dsgd::error& e) { return e.code() == dsgd::errc::shape_mismatch; });
}

// FTRL's point: with l1 > 0 the weights of features that carry no signal are exactly 0. A
// logistic regression on 20 standard normal features, 3 of them informative (true weights 2,
// -2, 1.5), trained on mini-batches: the 17 noise weights end at 0 exactly, the informative
// ones away from 0 with their true signs; without l1 no weight is 0.
BOOST_AUTO_TEST_CASE(l1_makes_the_noise_features_of_a_logistic_regression_exactly_zero) {
  constexpr std::size_t features = 20, batch = 32;
  constexpr int steps = 300;
  const std::vector<std::pair<std::size_t, double>> informative = {{3, 2.0}, {11, -2.0}, {17, 1.5}};
  auto train = [&](const ftrl& optimizer) {
    std::mt19937 rng(2026);
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> uniform;
    cpu::vector<float> w(features, 0.f);
    ftrl::state<cpu> s(cpu{}, features);
    std::vector<float> grad(features);
    std::size_t right = 0, seen = 0;
    for (int step = 0; step < steps; ++step) {
      std::vector<double> sum(features, 0.0);
      for (std::size_t b = 0; b < batch; ++b) {
        std::vector<double> x(features);
        for (double& xi : x) xi = normal(rng);
        double truth = 0, logit = 0;
        for (const auto& [i, wi] : informative) truth += wi * x[i];
        for (std::size_t i = 0; i < features; ++i) logit += double{w[i]} * x[i];
        const double y = uniform(rng) < 1.0 / (1.0 + std::exp(-truth)) ? 1.0 : 0.0;
        const double p = 1.0 / (1.0 + std::exp(-logit));
        if (step >= steps - 50) {
          right += (p > 0.5) == (y > 0.5);
          ++seen;
        }
        for (std::size_t i = 0; i < features; ++i) sum[i] += (p - y) * x[i];
      }
      for (std::size_t i = 0; i < features; ++i) grad[i] = static_cast<float>(sum[i]);
      optimizer.apply(cpu{}, s, w.data(), grad.data(), features, 1.f / float(batch));  // the mean
    }
    BOOST_TEST(double(right) / double(seen) > 0.75);  // it did learn
    return std::vector<float>(w.begin(), w.end());
  };
  auto is_informative = [&](std::size_t i) {
    return std::any_of(informative.begin(), informative.end(), [i](const auto& f) { return f.first == i; });
  };

  const auto sparse = train(ftrl{0.5f, -0.5f, 0.1f, 5.f, 0.f});
  for (std::size_t i = 0; i < features; ++i) {
    if (!is_informative(i)) {
      BOOST_TEST_CONTEXT("noise feature " << i) { BOOST_TEST(sparse[i] == 0.f); }
    }
  }
  for (const auto& [i, wi] : informative) {
    BOOST_TEST_CONTEXT("informative feature " << i) {
      BOOST_TEST(sparse[i] != 0.f);
      BOOST_TEST(double{sparse[i]} * wi > 0.5);  // the true sign, well away from 0
    }
  }

  const auto dense = train(ftrl{0.5f, -0.5f, 0.1f, 0.f, 0.f});
  BOOST_TEST(std::count(dense.begin(), dense.end(), 0.f) == 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
