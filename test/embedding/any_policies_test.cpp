// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for the run-time table policies (<dsgd/embedding/any_policies.hpp>: any_initializer,
// any_admission, any_eviction, any_row_optimizer, any_table and make_table): each made from the
// spec of a configured compile-time model (of()) behaves as that model bit for bit: initial
// rows, admission decisions with by_count's state and bytes, eviction ranks and sweeps, row
// updates; a table made by make_table runs a stream of lookups, pushes, cap evictions and sweeps
// exactly as a row_table of the compile-time policies; eviction none at the cap refuses, naming
// the table and ps task; bad specs are refused naming the table and field.
#include <dsgd/embedding/any_policies.hpp>

#include <support/error_checks.hpp>

#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(embedding_any_policies_test)

namespace {

namespace emb = dsgd::embedding;
namespace optim = dsgd::optim;
using dsgd::test::contains;

static_assert(emb::RowInitializer<emb::any_initializer>);
static_assert(emb::AdmissionPolicy<emb::any_admission>);
static_assert(emb::EvictionPolicy<emb::any_eviction>);
static_assert(optim::row_optimizer<emb::any_row_optimizer>);
static_assert(!emb::AdmissionPolicy<emb::any_eviction>);  // another family
static_assert(!emb::RowInitializer<emb::any_admission>);  // another family

// Whether two float ranges hold the same bits (NaN and -0 included).
bool same_bits(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return false;
  return a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;  // no null to memcmp
}

// Keys drawn from a skewed distribution over [0, 2000), as a click log's ids.
std::vector<std::uint64_t> key_stream(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::geometric_distribution<std::uint64_t> skewed(0.01);
  std::vector<std::uint64_t> keys(n);
  for (auto& k : keys) k = skewed(rng) % 2000;
  return keys;
}

// Each shipped row optimizer with every setting away from its default.
template <class O>
O configured();
template <>
optim::sgd configured() {
  return {.learning_rate = 0.3f, .weight_decay = 0.01f};
}
template <>
optim::momentum configured() {
  return {.learning_rate = 0.2f, .momentum = 0.8f, .nesterov = true, .weight_decay = 0.01f};
}
template <>
optim::adagrad configured() {
  return {.learning_rate = 0.2f, .initial_accumulator = 0.3f, .epsilon = 1e-5f, .weight_decay = 0.01f};
}
template <>
optim::rowwise_adagrad configured() {
  return {.learning_rate = 0.2f, .initial_accumulator = 0.3f, .epsilon = 1e-5f, .weight_decay = 0.01f};
}
template <>
optim::adam configured() {
  return {.learning_rate = 0.01f, .beta1 = 0.8f, .beta2 = 0.99f, .epsilon = 1e-6f, .weight_decay = 0.01f};
}
template <>
optim::lazy_adam configured() {
  return {.learning_rate = 0.01f, .beta1 = 0.7f, .beta2 = 0.98f, .epsilon = 1e-5f, .weight_decay = 0.02f};
}
template <>
optim::ftrl configured() {
  return {.learning_rate = 0.2f,
          .learning_rate_power = -0.4f,
          .initial_accumulator_value = 0.3f,
          .l1_regularization_strength = 0.01f,
          .l2_regularization_strength = 0.02f,
          .l2_shrinkage_regularization_strength = 0.03f};
}

using row_optimizers = boost::mpl::list<optim::sgd, optim::momentum, optim::adagrad, optim::rowwise_adagrad,
                                        optim::adam, optim::lazy_adam, optim::ftrl>;

// Runs the same stream of training lookups, pushes (the optimizer's row rule over the rows
// found) and sweeps on a table made by make_table(spec) and on a compile-time row_table, and
// checks after every step that they agree: statuses, rows to the bit, stats, bytes, tombstones.
template <class Table, class O>
void check_same_stream(const emb::table_spec& spec, Table& expected, const O& opt, std::uint64_t seed) {
  emb::any_table actual = emb::make_table(spec, 3);
  const emb::any_row_optimizer any_opt = emb::make_row_optimizer(spec.optimizer);
  BOOST_TEST_REQUIRE(actual.state_floats() == expected.state_floats());
  BOOST_TEST_REQUIRE(actual.max_rows() == expected.max_rows());
  const std::size_t dim = spec.dim;
  std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
  std::normal_distribution<float> grad(0.f, 1.f);
  const std::vector<std::uint64_t> stream = key_stream(60 * 48, seed);
  std::size_t created = 0, rejected = 0;
  for (std::uint64_t step = 1; step <= 60; ++step) {
    std::set<std::uint64_t> unique(stream.begin() + (step - 1) * 48, stream.begin() + step * 48);
    const std::vector<std::uint64_t> keys(unique.begin(), unique.end());
    for (std::uint64_t key : keys) {
      const auto a = actual.find_or_admit(key, step);
      const auto e = expected.find_or_admit(key, step);
      BOOST_TEST_REQUIRE((a.status == e.status), "key " << key << " at step " << step);
      created += a.status == emb::lookup_status::created;
      rejected += a.status == emb::lookup_status::rejected;
      if (a) {
        BOOST_TEST_REQUIRE(same_bits(a.row.weights(), e.row.weights()));
        BOOST_TEST_REQUIRE(same_bits(a.row.state(), e.row.state()));
      }
    }
    std::vector<float> grads(keys.size() * dim);
    for (float& g : grads) g = grad(rng);
    std::size_t found_a = 0, found_e = 0;
    any_opt.with_row_rule(0.5f, optim::row_step{step}, [&](const auto& rule) {
      found_a = actual.update_batch(keys, step, [&](std::size_t i, const auto& row) {
        rule(row.weights().data(), row.state().data(), grads.data() + i * dim, dim);
      });
    });
    opt.with_row_rule(0.5f, optim::row_step{step}, [&](const auto& rule) {
      found_e = expected.update_batch(keys, step, [&](std::size_t i, const auto& row) {
        rule(row.weights().data(), row.state().data(), grads.data() + i * dim, dim);
      });
    });
    BOOST_TEST_REQUIRE(found_a == found_e);
    if (step % 7 == 0) BOOST_TEST_REQUIRE(actual.evict_expired(step) == expected.evict_expired(step));
    BOOST_TEST_REQUIRE(actual.size() == expected.size());
    BOOST_TEST_REQUIRE(actual.stats().admitted == expected.stats().admitted);
    BOOST_TEST_REQUIRE(actual.stats().rejected == expected.stats().rejected);
    BOOST_TEST_REQUIRE(actual.stats().evicted == expected.stats().evicted);
    // Every heap byte alike, the admission state's included (the objects differ in size).
    BOOST_TEST_REQUIRE(actual.bytes_used() - sizeof(actual) == expected.bytes_used() - sizeof(expected));
  }
  std::map<std::uint64_t, std::vector<float>> rows_a, rows_e;
  const auto collect = [](auto& into) {
    return [&into](const emb::const_row_view& r, emb::row_stats) {
      std::vector<float> v(r.weights().begin(), r.weights().end());
      v.insert(v.end(), r.state().begin(), r.state().end());
      into[r.key()] = std::move(v);
    };
  };
  actual.for_each(collect(rows_a));
  expected.for_each(collect(rows_e));
  BOOST_TEST_REQUIRE(rows_a.size() == rows_e.size());
  for (const auto& [key, row] : rows_a) {
    BOOST_TEST_REQUIRE(rows_e.count(key) == 1u, "key " << key);
    BOOST_TEST_REQUIRE(same_bits(row, rows_e.at(key)), "key " << key);
  }
  std::set<std::uint64_t> tomb_a, tomb_e;
  actual.for_each_tombstone([&](std::uint64_t k) { tomb_a.insert(k); });
  expected.for_each_tombstone([&](std::uint64_t k) { tomb_e.insert(k); });
  BOOST_TEST((tomb_a == tomb_e));
  // The stream exercised what it is for.
  BOOST_TEST(created > 0u);
  BOOST_TEST_MESSAGE(spec.describe() << ": " << created << " created, " << rejected << " rejected, "
                                     << actual.stats().evicted << " evicted");
}

// The table_options of the compile-time side, made by hand from the compile-time optimizer.
template <class O>
emb::table_options options_for(const emb::table_spec& spec, const O& opt) {
  emb::table_options o;
  o.name = spec.name;
  o.dim = spec.dim;
  o.state_floats = opt.row_slots(spec.dim);
  o.initial_state.assign(o.state_floats, 0.f);
  if (o.state_floats) opt.init_row_slots(o.initial_state.data(), spec.dim);
  o.max_rows = spec.max_rows;
  o.max_bytes = spec.max_bytes;
  o.evict_fraction = spec.evict_fraction;
  o.ps_task = 3;
  return o;
}

// A spec of the compile-time models given, and the compile-time table of them.
template <class I, class A, class E, class O>
void check_table(std::string name, std::uint32_t dim, I init, A admit, E evict, O opt, std::uint64_t max_rows,
                 std::uint64_t max_bytes, double evict_fraction, std::uint64_t seed) {
  emb::table_spec spec{.name = std::move(name),
                       .dim = dim,
                       .rule = emb::table_rule::async(),
                       .optimizer = emb::row_optimizer_spec::of(opt),
                       .initializer = emb::initializer_spec::of(init),
                       .admission = emb::admission_spec::of(admit),
                       .eviction = emb::eviction_spec::of(evict),
                       .max_rows = max_rows,
                       .max_bytes = max_bytes,
                       .evict_fraction = evict_fraction};
  emb::row_table<I, A, E> expected(options_for(spec, opt), init, std::move(admit), evict);
  check_same_stream(spec, expected, opt, seed);
}

}  // namespace

BOOST_AUTO_TEST_CASE(any_initializer_writes_the_rows_of_the_initializer_it_holds) {
  const auto check = [](const auto& init) {
    const emb::any_initializer any(emb::initializer_spec::of(init));
    BOOST_TEST((any.spec() == emb::initializer_spec::of(init)));
    using I = std::remove_cvref_t<decltype(init)>;
    BOOST_TEST(any.template get_if<I>() != nullptr);
    for (std::size_t dim : {1u, 3u, 16u, 33u}) {
      for (std::uint64_t key : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{42}, ~std::uint64_t{0},
                                std::uint64_t{0x9e3779b97f4a7c15ull}}) {
        std::vector<float> a(dim, -1.f), e(dim, -2.f);
        any(key, a);
        init(key, e);
        BOOST_TEST_REQUIRE(same_bits(a, e), "key " << key << ", dim " << dim);
        for (std::size_t c = 0; c < dim; ++c) BOOST_TEST_REQUIRE(any.at(key, c) == init.at(key, c));
      }
    }
  };
  check(emb::initializer::zeros{});
  check(emb::initializer::constant{0.75f});
  check(emb::initializer::uniform{-0.3f, 0.2f, 11});
  check(emb::initializer::truncated_normal{.mean = 0.5f, .stddev = 0.25f, .seed = 13});
  // Seeds reach the initializer: another seed, other rows.
  std::vector<float> a(8), b(8);
  emb::any_initializer(emb::initializer_spec::uniform(-1.f, 1.f, 1))(5, a);
  emb::any_initializer(emb::initializer_spec::uniform(-1.f, 1.f, 2))(5, b);
  BOOST_TEST(!same_bits(a, b));
}

BOOST_AUTO_TEST_CASE(any_admission_by_count_keeps_the_state_and_bytes_of_by_count) {
  // A small pending map, so the stream forces decays (the state, not only the rule, must agree).
  emb::admission::by_count expected({.count = 3, .max_pending = 64});
  emb::any_admission actual(emb::admission_spec::of(expected));
  std::uint64_t step = 0, admitted = 0;
  for (std::uint64_t key : key_stream(20000, 17)) {
    const bool e = expected.admit(key, step / 100);
    BOOST_TEST_REQUIRE(actual.admit(key, step / 100) == e, "sighting " << step << " of key " << key);
    admitted += e;
    BOOST_TEST_REQUIRE(actual.bytes_used() == expected.bytes_used());
    ++step;
  }
  const auto* held = actual.get_if<emb::admission::by_count>();
  BOOST_TEST_REQUIRE(held != nullptr);
  BOOST_TEST(held->decays() == expected.decays());
  BOOST_TEST(held->decays() > 0u);
  BOOST_TEST(held->pending() == expected.pending());
  for (std::uint64_t key = 0; key < 2000; ++key)
    BOOST_TEST_REQUIRE(held->pending_count(key) == expected.pending_count(key));
  BOOST_TEST(admitted > 0u);
  BOOST_TEST(actual.bytes_used() > 0u);
  BOOST_TEST((actual.spec() == emb::admission_spec::by_count(3, 64)));
  // Moved, it keeps its state.
  emb::any_admission moved(std::move(actual));
  BOOST_TEST(moved.bytes_used() == expected.bytes_used());
  BOOST_TEST(moved.get_if<emb::admission::by_count>()->pending() == expected.pending());
}

BOOST_AUTO_TEST_CASE(any_admission_by_probability_and_always_decide_as_theirs) {
  emb::admission::by_probability expected{.probability = 0.3, .seed = 5};
  emb::any_admission actual(emb::admission_spec::of(expected));
  emb::any_admission always(emb::admission_spec::always());
  std::size_t yes = 0, n = 0;
  for (std::uint64_t key : key_stream(5000, 3)) {
    const bool e = expected.admit(key, n / 50);
    BOOST_TEST_REQUIRE(actual.admit(key, n / 50) == e);
    BOOST_TEST_REQUIRE(always.admit(key, n));
    yes += e;
    ++n;
  }
  BOOST_TEST(yes > 0u);
  BOOST_TEST(yes < n);
  BOOST_TEST(actual.bytes_used() == 0u);
  // A bad probability is refused when made, and by the table's validate() hook when held.
  const std::string msg = dsgd::test::error_of([] { emb::any_admission(emb::admission_spec::by_probability(2.0)); },
                                               dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "probability must be in [0, 1]"));
  emb::any_admission held(emb::admission::by_probability{.probability = -1});
  dsgd::test::error_of([&] { held.validate(); }, dsgd::errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(any_eviction_ranks_and_sweeps_as_the_policy_it_holds) {
  const auto check = [](const auto& policy) {
    const emb::any_eviction any(emb::eviction_spec::of(policy));
    BOOST_TEST(any.evicts_rows());
    BOOST_TEST((any.spec() == emb::eviction_spec::of(policy)));
    std::mt19937_64 rng(9);
    for (int i = 0; i < 2000; ++i) {
      const emb::row_stats s{rng() % 100, static_cast<std::uint32_t>(rng() % 10)};
      const std::uint64_t step = rng() % 200;
      BOOST_TEST_REQUIRE((any.rank(s) == policy.rank(s)));
      BOOST_TEST_REQUIRE(any.expired(s, step) == policy.expired(s, step));
    }
  };
  check(emb::eviction::by_age{.max_age = 30});
  check(emb::eviction::by_age{});
  check(emb::eviction::least_frequent{.min_uses = 4, .max_age = 20});
  check(emb::eviction::least_frequent{});
  // none never sweeps, and refuses to rank: a full table refuses the new row.
  const emb::any_eviction none(emb::eviction_spec::none(), "embedding table 'ids' on ps task 2");
  BOOST_TEST(!none.evicts_rows());
  BOOST_TEST(!none.expired({0, 0}, 1'000'000));
  const std::string msg = dsgd::test::error_of([&] { (void)none.rank({}); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "embedding table 'ids' on ps task 2"));
  BOOST_TEST(contains(msg, "eviction policy is none"));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(any_row_optimizer_updates_rows_bit_for_bit_as_the_optimizer_it_holds, O, row_optimizers) {
  const O opt = configured<O>();
  const emb::any_row_optimizer any = emb::make_row_optimizer(emb::row_optimizer_spec::of(opt));
  BOOST_TEST_REQUIRE(any.template get_if<O>() != nullptr);
  BOOST_TEST((any.spec() == emb::row_optimizer_spec::of(opt)));
  for (std::size_t dim : {1u, 5u, 16u}) {
    const std::size_t slots = opt.row_slots(dim);
    BOOST_TEST_REQUIRE(any.row_slots(dim) == slots);
    std::vector<float> sa(slots + 1, -7.f), se(slots + 1, -7.f);  // one float past: untouched
    any.init_row_slots(sa.data(), dim);
    opt.init_row_slots(se.data(), dim);
    BOOST_TEST_REQUIRE(same_bits(sa, se));
    // Three rows; each update through apply_row for row 0 and through the push's rule for all.
    constexpr std::size_t rows = 3;
    std::mt19937 rng(static_cast<std::mt19937::result_type>(dim));
    std::normal_distribution<float> normal(0.f, 1.f);
    std::vector<float> wa(rows * dim), ga(rows * dim);
    for (float& x : wa) x = normal(rng);
    std::vector<float> we = wa;
    std::vector<float> state_a, state_e;
    for (std::size_t r = 0; r < rows; ++r) {
      state_a.insert(state_a.end(), se.begin(), se.begin() + static_cast<std::ptrdiff_t>(slots));
      state_e.insert(state_e.end(), se.begin(), se.begin() + static_cast<std::ptrdiff_t>(slots));
    }
    for (std::uint64_t t = 1; t <= 6; ++t) {
      for (float& g : ga) g = normal(rng);
      const optim::row_step step{t};
      any.apply_row(wa.data(), state_a.data(), ga.data(), dim, 0.5f, step);
      opt.apply_row(we.data(), state_e.data(), ga.data(), dim, 0.5f, step);
      any.with_row_rule(0.25f, step, [&](const auto& rule) {
        for (std::size_t r = 0; r < rows; ++r)
          rule(wa.data() + r * dim, state_a.data() + r * slots, ga.data() + r * dim, dim);
      });
      opt.with_row_rule(0.25f, step, [&](const auto& rule) {
        for (std::size_t r = 0; r < rows; ++r)
          rule(we.data() + r * dim, state_e.data() + r * slots, ga.data() + r * dim, dim);
      });
      BOOST_TEST_REQUIRE(same_bits(wa, we), "dim " << dim << ", update " << t);
      BOOST_TEST_REQUIRE(same_bits(state_a, state_e), "dim " << dim << ", update " << t);
    }
    // The weights moved (the comparison was of something).
    BOOST_TEST(wa[0] != 0.f);
  }
}

BOOST_AUTO_TEST_CASE(any_row_optimizer_refuses_what_its_optimizer_refuses) {
  const emb::any_row_optimizer adam(emb::row_optimizer_spec::lazy_adam(0.01f));
  float w = 0, s[2] = {0, 0}, g = 1;
  const std::string msg = dsgd::test::error_of([&] { adam.apply_row(&w, s, &g, 1, 1.f, optim::row_step{0}); },
                                               dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "row_step.t is 0"));
  const std::string bad = dsgd::test::error_of([] { emb::any_row_optimizer(emb::row_optimizer_spec::ftrl(-1.f)); },
                                               dsgd::errc::invalid_argument);
  BOOST_TEST(contains(bad, "learning_rate must be positive"));
}

BOOST_AUTO_TEST_CASE(make_table_runs_a_stream_as_the_compile_time_table) {
  // Cap eviction by least use, admission by count with decays.
  check_table("ids", 8, emb::initializer::uniform{-0.1f, 0.1f, 7},
              emb::admission::by_count({.count = 2, .max_pending = 128}), emb::eviction::least_frequent{},
              configured<optim::adagrad>(), 150, 0, 1.0 / 16, 1);
  // A byte cap, admission by coin, sweeps by age.
  check_table("wide", 4, emb::initializer::truncated_normal{.mean = 0.1f, .stddev = 0.2f, .seed = 3},
              emb::admission::by_probability{.probability = 0.5, .seed = 9}, emb::eviction::by_age{.max_age = 5},
              configured<optim::ftrl>(), 0, 16 << 10, 1.0 / 64, 2);
  // Cap eviction by age, every key admitted, lazy Adam (the update count matters).
  check_table("ads", 6, emb::initializer::constant{0.5f}, emb::admission::always{}, emb::eviction::by_age{},
              configured<optim::lazy_adam>(), 100, 0, 0.01, 3);
  // Sweeps of rarely used rows, one accumulator per row.
  check_table("geo", 5, emb::initializer::zeros{}, emb::admission::by_count({.count = 3}),
              emb::eviction::least_frequent{.min_uses = 3, .max_age = 4}, configured<optim::rowwise_adagrad>(), 200, 0,
              1.0 / 64, 4);
  // No cap, no eviction, momentum.
  check_table("items", 3, emb::initializer::uniform{}, emb::admission::always{}, emb::eviction::none{},
              configured<optim::momentum>(), 0, 0, 1.0 / 64, 5);
}

BOOST_AUTO_TEST_CASE(make_table_lays_rows_out_for_the_spec_optimizer) {
  const emb::table_spec spec{.name = "user_id",
                             .dim = 4,
                             .rule = emb::table_rule::async(),
                             .optimizer = emb::row_optimizer_spec::ftrl(0.1f),
                             .initializer = emb::initializer_spec::constant(0.25f),
                             .max_rows = 10};
  emb::any_table t = emb::make_table(spec, 1);
  BOOST_TEST(t.name() == "user_id");
  BOOST_TEST(t.dim() == 4u);
  BOOST_TEST(t.state_floats() == 8u);  // ftrl: accumulators, then linear terms
  BOOST_TEST(t.max_rows() == 10u);
  const auto r = t.find_or_admit(42, 1);
  BOOST_TEST_REQUIRE(static_cast<bool>(r));
  for (float w : r.row.weights()) BOOST_TEST(w == 0.25f);
  const std::vector<float> state(r.row.state().begin(), r.row.state().end());
  BOOST_TEST(state == (std::vector<float>{0.1f, 0.1f, 0.1f, 0.1f, 0.f, 0.f, 0.f, 0.f}));
  BOOST_TEST((t.admission().spec() == spec.admission));
  BOOST_TEST((t.eviction().spec() == spec.eviction));
  BOOST_TEST((t.initializer().spec() == spec.initializer));
}

BOOST_AUTO_TEST_CASE(a_full_table_without_eviction_refuses_a_new_row_naming_table_task_and_key) {
  emb::any_table t = emb::make_table({.name = "user_id", .dim = 2, .max_rows = 2}, 5);
  BOOST_TEST_REQUIRE(static_cast<bool>(t.find_or_admit(1, 1)));
  BOOST_TEST_REQUIRE(static_cast<bool>(t.find_or_admit(2, 1)));
  const std::string msg = dsgd::test::error_of([&] { (void)t.find_or_admit(3, 2); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "embedding table 'user_id' on ps task 5, key 3"));
  BOOST_TEST(contains(msg, "full (2 rows, its cap) and its eviction policy is none"));
  BOOST_TEST(t.size() == 2u);
  BOOST_TEST(!t.contains(3));
  BOOST_TEST(t.stats().evicted == 0u);
  BOOST_TEST(t.evict_expired(1'000'000) == 0u);  // none never sweeps
  // The rows that are there still work.
  BOOST_TEST((t.find_or_admit(1, 3).status == emb::lookup_status::found));
}

BOOST_AUTO_TEST_CASE(make_table_refuses_a_bad_spec_naming_the_table_and_field) {
  emb::table_spec spec{.name = "user_id", .dim = 4, .optimizer = emb::row_optimizer_spec::adagrad(-0.5f)};
  std::string msg = dsgd::test::error_of([&] { (void)emb::make_table(spec); }, dsgd::errc::invalid_argument);
  BOOST_TEST(msg == "table 'user_id': optimizer.learning_rate must be positive (it is -0.5)");
  spec.optimizer = emb::row_optimizer_spec::adagrad(0.5f);
  spec.max_bytes = 16;  // not one row
  msg = dsgd::test::error_of([&] { (void)emb::make_table(spec); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "max_bytes"));
}

BOOST_AUTO_TEST_SUITE_END()
