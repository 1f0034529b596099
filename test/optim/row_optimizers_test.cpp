// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for optim::row_optimizer (<dsgd/optim/concepts.hpp>) over every shipped row optimizer,
// on a table laid out as an embedding table keeps it (each row's weights, then its state):
// each row rule against the scalar references in support/reference_optim.hpp, a push's rows
// applied in a loop and in parallel agreeing bit for bit, a row updated alone ending where the
// dense apply leaves that row (sgd, momentum, adagrad, ftrl, rowwise_adagrad), adam's rows
// being dense Adam when every row is in every push, new rows' state, and near-misses of the
// concept.
#include <dsgd/device/cpu.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/optim/exponential_decay.hpp>
#include <dsgd/optim/ftrl.hpp>
#include <dsgd/optim/lazy_adam.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/rowwise_adagrad.hpp>
#include <dsgd/optim/sgd.hpp>

#include <support/reference_optim.hpp>

#include <boost/test/unit_test.hpp>

#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

BOOST_AUTO_TEST_SUITE(optim_row_optimizers_test)

namespace optim = dsgd::optim;
using cpu = dsgd::device::cpu;
using optim::row_optimizer;

static_assert(row_optimizer<optim::sgd>);
static_assert(row_optimizer<optim::momentum>);
static_assert(row_optimizer<optim::adagrad>);
static_assert(row_optimizer<optim::adam>);
static_assert(row_optimizer<optim::ftrl>);
static_assert(row_optimizer<optim::rowwise_adagrad>);
static_assert(row_optimizer<optim::lazy_adam>);

// Near-misses: each lacks one member of the concept, or has it with the wrong shape.
struct dense_only {  // an Optimizer with no rows at all
  template <class D>
  struct state {
    state(const D&, std::size_t) {}
  };
  template <class D>
  void apply(const D&, state<D>&, float*, const float*, std::size_t, float = 1.f) const {}
};
struct no_init {
  std::size_t row_slots(std::size_t) const { return 0; }
  template <class F>
  void with_row_rule(float, optim::row_step, F&&) const {}
  void apply_row(float*, float*, const float*, std::size_t, float, optim::row_step) const {}
};
struct no_rule {  // rows one by one only: a table could not map them in parallel
  std::size_t row_slots(std::size_t) const { return 0; }
  void init_row_slots(float*, std::size_t) const {}
  void apply_row(float*, float*, const float*, std::size_t, float, optim::row_step) const {}
};
struct apply_row_without_slots {
  std::size_t row_slots(std::size_t) const { return 0; }
  void init_row_slots(float*, std::size_t) const {}
  template <class F>
  void with_row_rule(float, optim::row_step, F&&) const {}
  void apply_row(float*, const float*, std::size_t, float, optim::row_step) const {}
};
struct mutating_apply_row {  // apply_row not const: rows of one push could not run in parallel
  std::size_t row_slots(std::size_t) const { return 0; }
  void init_row_slots(float*, std::size_t) const {}
  template <class F>
  void with_row_rule(float, optim::row_step, F&&) const {}
  void apply_row(float*, float*, const float*, std::size_t, float, optim::row_step) {}
};
static_assert(dsgd::Optimizer<dense_only, cpu>);
static_assert(!row_optimizer<dense_only>);
static_assert(!row_optimizer<no_init>);
static_assert(!row_optimizer<no_rule>);
static_assert(!row_optimizer<apply_row_without_slots>);
static_assert(!row_optimizer<mutating_apply_row>);
static_assert(!row_optimizer<int>);
// A learning-rate schedule has no rows (yet): a table takes the optimizer inside it.
static_assert(!row_optimizer<optim::exponential_decay<optim::adagrad>>);

namespace {

namespace tt = boost::test_tools;
using dsgd::test::random_values;

constexpr std::size_t table_rows = 8;
constexpr std::size_t table_dim = 5;  // odd: no vector width
// The pushes of every test: rows 3 and 6 only in the last, which has every row once.
const std::vector<std::vector<std::uint64_t>> pushes = {{4, 1}, {1, 5, 0}, {7, 4, 2},
                                                        {5},    {2, 0, 7}, {6, 3, 1, 0, 5, 2, 7, 4}};

// One push's rows through a rule, row k of the push at data + rows[k] * stride: the kernel a
// table maps over a push's rows in parallel.
template <class Rule>
struct rows_kernel {
  Rule rule;
  float* data;
  std::size_t stride;
  std::size_t dim;
  const std::uint64_t* rows;
  const float* g;
  void operator()(std::size_t k) const {
    float* row = data + rows[k] * stride;
    rule(row, row + dim, g + k * dim, dim);
  }
};

// A table as an embedding table keeps it: row r is `dim` weights, then the optimizer's
// `row_slots(dim)` floats, made by init_row_slots; `updates` counts pushes (row_step::t).
template <class O>
struct table {
  O o;
  std::size_t dim;
  std::size_t stride;
  std::vector<float> data;
  std::uint64_t updates = 0;

  table(const O& opt, const std::vector<float>& w0, std::size_t d)
      : o(opt), dim(d), stride(d + opt.row_slots(d)), data(w0.size() / d * stride) {
    for (std::size_t r = 0; r < w0.size() / d; ++r) {
      std::memcpy(weights(r), w0.data() + r * d, d * sizeof(float));
      o.init_row_slots(slots(r), d);
    }
  }
  float* weights(std::size_t r) { return data.data() + r * stride; }
  float* slots(std::size_t r) { return weights(r) + dim; }
  std::vector<float> row(std::size_t r) { return {weights(r), weights(r) + dim}; }

  // One push, its rows one by one through apply_row.
  void push_loop(const std::vector<std::uint64_t>& rows, const std::vector<float>& g, float scale) {
    ++updates;
    for (std::size_t k = 0; k < rows.size(); ++k)
      o.apply_row(weights(rows[k]), slots(rows[k]), g.data() + k * dim, dim, scale, {updates});
  }
  // One push, its rows in parallel: the rule made once, mapped by Thrust (OpenMP threads).
  void push_parallel(const std::vector<std::uint64_t>& rows, const std::vector<float>& g, float scale) {
    ++updates;
    o.with_row_rule(scale, {updates}, [&](const auto& rule) {
      thrust::for_each_n(
          cpu::policy(), thrust::counting_iterator<std::size_t>(0), rows.size(),
          rows_kernel<std::decay_t<decltype(rule)>>{rule, data.data(), stride, dim, rows.data(), g.data()});
    });
  }
};

// The settings under test, away from the defaults so that a rule reading the wrong field
// cannot pass.
template <class O>
std::vector<O> settings();
template <>
std::vector<optim::sgd> settings() {
  return {optim::sgd{0.05f}, optim::sgd{0.05f, 0.2f}};
}
template <>
std::vector<optim::momentum> settings() {
  return {optim::momentum{0.03f, 0.8f, false}, optim::momentum{0.03f, 0.8f, true}};
}
template <>
std::vector<optim::adagrad> settings() {
  return {optim::adagrad{0.1f, 0.25f, 1e-6f}, optim::adagrad{0.1f, 0.f, 1e-6f}};
}
template <>
std::vector<optim::adam> settings() {
  return {optim::adam{2e-3f, 0.8f, 0.99f, 1e-6f}};
}
template <>
std::vector<optim::ftrl> settings() {
  return {optim::ftrl{0.1f}, optim::ftrl{0.2f, -0.5f, 0.1f, 0.6f, 0.3f}, optim::ftrl{0.15f, -0.6f, 0.25f, 0.4f, 0.1f}};
}
template <>
std::vector<optim::rowwise_adagrad> settings() {
  return {optim::rowwise_adagrad{0.1f, 0.25f, 1e-6f}, optim::rowwise_adagrad{0.05f, 0.f, 1e-6f, 0.1f}};
}
template <>
std::vector<optim::lazy_adam> settings() {
  return {optim::lazy_adam{2e-3f, 0.8f, 0.99f, 1e-6f}, optim::lazy_adam{1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f}};
}

// The independent scalar reference of each rule, over a table's rows: `step` one push,
// `weight(r, c)` a weight after it. The elementwise ones run their dense reference on each
// row as a variable of its own, the others run over the table.
template <class O>
struct reference;

template <class Ref, class O>
struct per_row_reference {
  std::vector<Ref> refs;
  std::vector<std::vector<float>> w;
  per_row_reference(Ref r, const std::vector<float>& w0, std::size_t dim) : refs(w0.size() / dim, r) {
    for (std::size_t i = 0; i < w0.size(); i += dim) w.emplace_back(w0.begin() + i, w0.begin() + i + dim);
  }
  void step(const std::vector<std::uint64_t>& rows, const std::vector<float>& g, float scale, std::size_t dim) {
    for (std::size_t k = 0; k < rows.size(); ++k)
      refs[rows[k]].step(w[rows[k]], std::vector<float>(g.begin() + k * dim, g.begin() + (k + 1) * dim), scale);
  }
  double weight(std::size_t r, std::size_t c) const { return w[r][c]; }
};

template <>
struct reference<optim::sgd> : per_row_reference<dsgd::test::reference_sgd, optim::sgd> {
  static constexpr double tolerance = 1e-6;
  reference(const optim::sgd& o, const std::vector<float>& w0, std::size_t dim)
      : per_row_reference({o.learning_rate}, w0, dim) {}
};
template <>
struct reference<optim::momentum> : per_row_reference<dsgd::test::reference_momentum, optim::momentum> {
  static constexpr double tolerance = 1e-6;
  reference(const optim::momentum& o, const std::vector<float>& w0, std::size_t dim)
      : per_row_reference({o.learning_rate, o.momentum, o.nesterov, {}}, w0, dim) {}
};
template <>
struct reference<optim::adagrad> : per_row_reference<dsgd::test::reference_adagrad, optim::adagrad> {
  static constexpr double tolerance = 1e-6;
  reference(const optim::adagrad& o, const std::vector<float>& w0, std::size_t dim)
      : per_row_reference({o.learning_rate, o.initial_accumulator, o.epsilon, {}}, w0, dim) {}
};
template <>
struct reference<optim::ftrl> {
  static constexpr double tolerance = 1e-5;
  std::vector<dsgd::test::reference_ftrl> refs;
  std::vector<std::vector<double>> w;
  reference(const optim::ftrl& o, const std::vector<float>& w0, std::size_t dim)
      : refs(w0.size() / dim, {o.learning_rate,
                               o.learning_rate_power,
                               o.initial_accumulator_value,
                               o.l1_regularization_strength,
                               o.l2_regularization_strength,
                               o.l2_shrinkage_regularization_strength,
                               {},
                               {}}) {
    for (std::size_t i = 0; i < w0.size(); i += dim) w.emplace_back(w0.begin() + i, w0.begin() + i + dim);
  }
  void step(const std::vector<std::uint64_t>& rows, const std::vector<float>& g, float scale, std::size_t dim) {
    for (std::size_t k = 0; k < rows.size(); ++k)
      refs[rows[k]].step(w[rows[k]], std::vector<float>(g.begin() + k * dim, g.begin() + (k + 1) * dim), scale);
  }
  double weight(std::size_t r, std::size_t c) const { return w[r][c]; }
};

template <class Ref>
struct table_reference {
  Ref ref;
  std::vector<double> w;
  std::size_t dim;
  void step(const std::vector<std::uint64_t>& rows, const std::vector<float>& g, float scale, std::size_t) {
    ref.step(w, dim, rows, g, scale);
  }
  double weight(std::size_t r, std::size_t c) const { return w[r * dim + c]; }
};

template <>
struct reference<optim::rowwise_adagrad> : table_reference<dsgd::test::reference_rowwise_adagrad> {
  static constexpr double tolerance = 1e-5;
  reference(const optim::rowwise_adagrad& o, const std::vector<float>& w0, std::size_t dim)
      : table_reference{{o.learning_rate, o.initial_accumulator, o.epsilon, {}}, {w0.begin(), w0.end()}, dim} {
    BOOST_REQUIRE(o.weight_decay == 0.f);
  }
};
template <class O>
struct lazy_adam_reference : table_reference<dsgd::test::reference_lazy_adam> {
  static constexpr double tolerance = 1e-5;
  lazy_adam_reference(const O& o, const std::vector<float>& w0, std::size_t dim)
      : table_reference{{o.learning_rate, o.beta1, o.beta2, o.epsilon, false, {}, {}, 0}, {w0.begin(), w0.end()}, dim} {
    BOOST_REQUIRE(o.weight_decay == 0.f);
  }
};
template <>
struct reference<optim::adam> : lazy_adam_reference<optim::adam> {
  using lazy_adam_reference::lazy_adam_reference;
};
template <>
struct reference<optim::lazy_adam> : lazy_adam_reference<optim::lazy_adam> {
  using lazy_adam_reference::lazy_adam_reference;
};

// Settings the references implement: no weight decay (the dense tests cover it; the element
// rule is the same).
template <class O>
std::vector<O> settings_without_decay() {
  std::vector<O> out;
  for (const O& o : settings<O>()) {
    if constexpr (requires { o.weight_decay; }) {
      if (o.weight_decay != 0.f) continue;
    }
    out.push_back(o);
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

using row_optimizers = std::tuple<optim::sgd, optim::momentum, optim::adagrad, optim::adam, optim::ftrl,
                                  optim::rowwise_adagrad, optim::lazy_adam>;
// Those whose row, updated alone, is the dense apply on that row: every rule that reads no
// counter (adam's rows are that only when the row is in every push, see below).
using counterless_row_optimizers =
    std::tuple<optim::sgd, optim::momentum, optim::adagrad, optim::ftrl, optim::rowwise_adagrad>;
using adams = std::tuple<optim::adam, optim::lazy_adam>;

}  // namespace

BOOST_AUTO_TEST_SUITE(optimizers_on_cpu)

BOOST_AUTO_TEST_CASE_TEMPLATE(every_row_rule_matches_its_scalar_reference, O, row_optimizers) {
  std::uint32_t seed = 11;
  for (const O& o : settings_without_decay<O>()) {
    for (float scale : {1.f, 0.5f}) {
      const auto w0 = random_values(table_rows * table_dim, seed++, -1.f, 1.f);
      table<O> t(o, w0, table_dim);
      reference<O> ref(o, w0, table_dim);
      for (std::size_t p = 0; p < pushes.size(); ++p) {
        const auto g = random_values(pushes[p].size() * table_dim, seed++, -2.f, 2.f);
        t.push_loop(pushes[p], g, scale);
        ref.step(pushes[p], g, scale, table_dim);
        std::size_t bad = 0;
        for (std::size_t r = 0; r < table_rows; ++r)
          for (std::size_t c = 0; c < table_dim; ++c) {
            const double expected = ref.weight(r, c);
            bad +=
                !(std::abs(double{t.weights(r)[c]} - expected) <= reference<O>::tolerance * (1.0 + std::abs(expected)));
          }
        BOOST_TEST_CONTEXT("setting " << seed << ", grad_scale " << scale << ", push " << p) { BOOST_TEST(bad == 0u); }
      }
    }
  }
}

// TF1's LazyAdamOptimizer adds epsilon to sqrt(v) before the bias correction; dsgd adds it to
// sqrt(v_hat) as PyTorch does. Away from tiny v the two agree closely.
BOOST_AUTO_TEST_CASE(lazy_adam_rows_are_close_to_tf1s_epsilon_placement) {
  const optim::lazy_adam o{1e-2f, 0.9f, 0.999f, 1e-8f};
  const auto w0 = random_values(table_rows * table_dim, 5, -1.f, 1.f);
  table<optim::lazy_adam> t(o, w0, table_dim);
  dsgd::test::reference_lazy_adam tf1{o.learning_rate, o.beta1, o.beta2, o.epsilon, true, {}, {}, 0};
  std::vector<double> expected(w0.begin(), w0.end());
  std::uint32_t seed = 70;
  for (const auto& push : pushes) {
    const auto g = random_values(push.size() * table_dim, seed++, -2.f, 2.f);
    t.push_loop(push, g, 1.f);
    tf1.step(expected, table_dim, push, g, 1.0);
  }
  for (std::size_t r = 0; r < table_rows; ++r)
    for (std::size_t c = 0; c < table_dim; ++c)
      BOOST_TEST(double{t.weights(r)[c]} == expected[r * table_dim + c], tt::tolerance(1e-4));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_pushs_rows_in_a_loop_and_in_parallel_agree_bit_for_bit, O, row_optimizers) {
  std::uint32_t seed = 201;
  for (const O& o : settings<O>()) {
    const auto w0 = random_values(table_rows * table_dim, seed++, -1.f, 1.f);
    table<O> loop(o, w0, table_dim), parallel(o, w0, table_dim);
    for (std::size_t p = 0; p < pushes.size(); ++p) {
      const float scale = p % 2 ? 0.5f : 1.f;
      const auto g = random_values(pushes[p].size() * table_dim, seed++, -2.f, 2.f);
      loop.push_loop(pushes[p], g, scale);
      parallel.push_parallel(pushes[p], g, scale);
      BOOST_TEST_CONTEXT("push " << p) { BOOST_TEST(same_bits(loop.data, parallel.data)); }
    }
    BOOST_TEST(!same_bits(loop.data, table<O>(o, w0, table_dim).data));  // something moved
  }
}

// TensorFlow's SparseApply* for a rule without counters: a row updated alone ends bit for bit
// where the dense apply leaves that row (a variable of dim elements, its state fresh), however
// late it is first touched, and a row not pushed stays as it is.
BOOST_AUTO_TEST_CASE_TEMPLATE(a_row_updated_alone_is_the_dense_apply_on_that_row, O, counterless_row_optimizers) {
  std::uint32_t seed = 301;
  for (const O& o : settings<O>()) {
    const auto w0 = random_values(table_rows * table_dim, seed++, -1.f, 1.f);
    table<O> t(o, w0, table_dim);
    std::vector<cpu::vector<float>> dense_w;
    std::vector<typename O::template state<cpu>> dense_s;
    for (std::size_t r = 0; r < table_rows; ++r) {
      dense_w.emplace_back(w0.begin() + std::ptrdiff_t(r * table_dim),
                           w0.begin() + std::ptrdiff_t((r + 1) * table_dim));
      dense_s.emplace_back(cpu{}, table_dim);
    }
    for (std::size_t p = 0; p < pushes.size(); ++p) {
      const float scale = p % 2 ? 0.5f : 1.f;
      const auto g = random_values(pushes[p].size() * table_dim, seed++, -2.f, 2.f);
      std::vector<std::vector<float>> before;
      for (std::size_t r = 0; r < table_rows; ++r) before.push_back(t.row(r));
      t.push_loop(pushes[p], g, scale);
      for (std::size_t k = 0; k < pushes[p].size(); ++k)
        o.apply(cpu{}, dense_s[pushes[p][k]], dense_w[pushes[p][k]].data(), g.data() + k * table_dim, table_dim, scale);
      for (std::size_t r = 0; r < table_rows; ++r) {
        BOOST_TEST_CONTEXT("push " << p << ", row " << r) {
          BOOST_TEST(same_bits(t.row(r), {dense_w[r].begin(), dense_w[r].end()}));
          const bool pushed = std::find(pushes[p].begin(), pushes[p].end(), r) != pushes[p].end();
          if (!pushed) BOOST_TEST(same_bits(t.row(r), before[r]));
        }
      }
    }
  }
}

// Adam's (and lazy Adam's) rows: with every row in every push, t counts the same updates as
// the dense state's t, and the table is dense Adam bit for bit. With some rows left out it is
// lazy (see lazy_adam_test.cpp).
BOOST_AUTO_TEST_CASE_TEMPLATE(adams_rows_in_every_push_are_dense_adam, O, adams) {
  constexpr std::size_t n = table_rows * table_dim;
  std::vector<std::uint64_t> all(table_rows);
  for (std::size_t r = 0; r < table_rows; ++r) all[r] = table_rows - 1 - r;  // every row, in reverse
  std::uint32_t seed = 401;
  for (const O& o : settings<O>()) {
    const auto w0 = random_values(n, seed++, -1.f, 1.f);
    table<O> t(o, w0, table_dim);
    cpu::vector<float> w(w0.begin(), w0.end());
    optim::adam::state<cpu> s(cpu{}, n);
    for (int step = 1; step <= 5; ++step) {
      const auto packed = random_values(n, seed++, -2.f, 2.f);
      std::vector<float> dense(n);
      for (std::size_t k = 0; k < table_rows; ++k)
        std::memcpy(dense.data() + all[k] * table_dim, packed.data() + k * table_dim, table_dim * sizeof(float));
      t.push_parallel(all, packed, 1.f);
      o.apply(cpu{}, s, w.data(), dense.data(), n, 1.f);
      for (std::size_t r = 0; r < table_rows; ++r) BOOST_TEST_CONTEXT("step " << step << ", row " << r) {
          BOOST_TEST(same_bits(
              t.row(r), {w.begin() + std::ptrdiff_t(r * table_dim), w.begin() + std::ptrdiff_t((r + 1) * table_dim)}));
          BOOST_TEST(std::memcmp(t.slots(r), s.m.data() + r * table_dim, table_dim * sizeof(float)) == 0);
          BOOST_TEST(std::memcmp(t.slots(r) + table_dim, s.v.data() + r * table_dim, table_dim * sizeof(float)) == 0);
        }
    }
    BOOST_TEST(s.t == t.updates);
  }
}

BOOST_AUTO_TEST_CASE(a_new_rows_state) {
  constexpr std::size_t dim = 3;
  auto made = [](const auto& o) {
    std::vector<float> slots(o.row_slots(dim) + 1, -7.f);  // one past the end: never written
    o.init_row_slots(slots.data(), dim);
    BOOST_TEST(slots.back() == -7.f);
    slots.pop_back();
    return slots;
  };
  using v = std::vector<float>;
  BOOST_TEST(made(optim::sgd{}) == v{}, tt::per_element());
  BOOST_TEST(made(optim::momentum{}) == v(3, 0.f), tt::per_element());
  BOOST_TEST(made(optim::adagrad{0.1f, 0.3f}) == v(3, 0.3f), tt::per_element());
  BOOST_TEST(made(optim::adam{}) == v(6, 0.f), tt::per_element());
  BOOST_TEST(made(optim::lazy_adam{}) == v(6, 0.f), tt::per_element());
  BOOST_TEST(made(optim::ftrl{0.1f, -0.5f, 0.4f}) == (v{0.4f, 0.4f, 0.4f, 0.f, 0.f, 0.f}), tt::per_element());
  BOOST_TEST(made(optim::rowwise_adagrad{0.1f, 0.3f}) == v{0.3f}, tt::per_element());
  BOOST_TEST(optim::rowwise_adagrad{}.row_slots(1000) == 1u);  // one a row, whatever its width
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_row_of_no_weights_is_left_alone, O, row_optimizers) {
  float w = 1.5f, slots[2] = {0.25f, 0.5f};
  const float g = 3.f;
  BOOST_CHECK_NO_THROW(O{}.apply_row(&w, slots, &g, 0, 1.f, {1}));
  BOOST_TEST(w == 1.5f);
  BOOST_TEST(slots[0] == 0.25f);
  BOOST_TEST(slots[1] == 0.5f);
}

BOOST_AUTO_TEST_CASE(bad_step_and_settings_are_refused_before_anything_is_written) {
  std::vector<float> w{1.f, 2.f}, slots(4, 0.f);
  const std::vector<float> g{1.f, 1.f};
  auto names = [](dsgd::errc code, const std::string& text) {
    return
        [=](const dsgd::error& e) { return e.code() == code && std::string(e.what()).find(text) != std::string::npos; };
  };
  BOOST_CHECK_EXCEPTION(optim::adam{}.apply_row(w.data(), slots.data(), g.data(), 2, 1.f, {0}), dsgd::error,
                        names(dsgd::errc::invalid_argument, "row_step.t"));
  BOOST_CHECK_EXCEPTION(optim::lazy_adam{}.apply_row(w.data(), slots.data(), g.data(), 2, 1.f, {0}), dsgd::error,
                        names(dsgd::errc::invalid_argument, "row_step.t"));
  optim::ftrl bad;
  bad.l1_regularization_strength = -1.f;
  BOOST_CHECK_EXCEPTION(bad.apply_row(w.data(), slots.data(), g.data(), 2, 1.f, {1}), dsgd::error,
                        names(dsgd::errc::invalid_argument, "l1_regularization_strength"));
  BOOST_TEST(w == (std::vector<float>{1.f, 2.f}), tt::per_element());
  BOOST_TEST(slots == std::vector<float>(4, 0.f), tt::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
