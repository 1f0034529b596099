// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/embedding/table_spec.hpp>: factories take each model's own defaults and of()
// every setting of a configured model; a spec survives the wire (Boost binary archive without
// header, as protocol::encode_control) field by field; every setting a model reads changes
// equality and the description, and a setting it ignores changes neither; validate() names the
// table and the first bad field, also of kinds no model has (bad bytes); describe() reads as
// documented; a second create of a table is accepted when equal and refused naming both.
#include <dsgd/embedding/row_table.hpp>
#include <dsgd/embedding/table_spec.hpp>

#include <support/error_checks.hpp>

#include <boost/archive/binary_iarchive.hpp>
#include <boost/archive/binary_oarchive.hpp>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(embedding_table_spec_test)

namespace {

namespace emb = dsgd::embedding;
namespace optim = dsgd::optim;
using dsgd::test::contains;

std::string encode(const emb::table_spec& spec) {
  std::ostringstream out(std::ios::binary);
  {
    boost::archive::binary_oarchive ar(out, boost::archive::no_header);
    ar << spec;
  }
  return std::move(out).str();
}

emb::table_spec decode(const std::string& bytes) {
  emb::table_spec spec;
  std::istringstream in(bytes, std::ios::binary);
  boost::archive::binary_iarchive ar(in, boost::archive::no_header);
  ar >> spec;
  return spec;
}

// The table of the file's comment, every part set.
emb::table_spec user_id() {
  return {.name = "user_id",
          .dim = 16,
          .rule = emb::table_rule::async(),
          .optimizer = emb::row_optimizer_spec::adagrad(0.05f),
          .initializer = emb::initializer_spec::uniform(-0.05f, 0.05f, 7),
          .admission = emb::admission_spec::by_count(2),
          .eviction = emb::eviction_spec::least_frequent(),
          .max_rows = 1'000'000};
}

// One change of one field of a spec of the right kinds.
struct change {
  std::string what;
  std::function<void(emb::table_spec&)> apply;
};
std::ostream& operator<<(std::ostream& os, const change& c) { return os << c.what; }

// A base spec per part's kind, so that each change below touches a setting that kind reads.
emb::table_spec with(emb::row_optimizer_spec o, emb::initializer_spec i = {}, emb::admission_spec a = {},
                     emb::eviction_spec e = {}, emb::table_rule r = {}) {
  emb::table_spec s{.name = "t", .dim = 4};
  s.rule = r;
  s.optimizer = o;
  s.initializer = i;
  s.admission = a;
  s.eviction = e;
  return s;
}

// Every setting each model reads, changed on a spec whose model reads it.
const std::vector<std::pair<emb::table_spec, change>>& changes() {
  using O = emb::row_optimizer_spec;
  using I = emb::initializer_spec;
  using A = emb::admission_spec;
  using E = emb::eviction_spec;
  static const std::vector<std::pair<emb::table_spec, change>> all = [] {
    std::vector<std::pair<emb::table_spec, change>> v;
    const auto add = [&](emb::table_spec base, std::string what, std::function<void(emb::table_spec&)> f) {
      v.push_back({std::move(base), {std::move(what), std::move(f)}});
    };
    const emb::table_spec sgd = with(O::sgd(0.1f));
    add(sgd, "name", [](auto& s) { s.name = "u"; });
    add(sgd, "dim", [](auto& s) { s.dim = 5; });
    add(sgd, "max_rows", [](auto& s) { s.max_rows = 10; });
    add(sgd, "max_bytes", [](auto& s) { s.max_bytes = 1 << 20; });
    add(sgd, "evict_fraction", [](auto& s) { s.evict_fraction = 0.5; });
    add(sgd, "rule.rule", [](auto& s) { s.rule = emb::table_rule::async(); });
    add(with(O::sgd(0.1f), {}, {}, {}, emb::table_rule::bounded_staleness(2)), "rule.staleness",
        [](auto& s) { s.rule.staleness = 3; });
    add(sgd, "optimizer.optimizer", [](auto& s) { s.optimizer.optimizer = O::kind::momentum; });
    add(sgd, "optimizer.learning_rate", [](auto& s) { s.optimizer.learning_rate = 0.2f; });
    add(sgd, "optimizer.weight_decay", [](auto& s) { s.optimizer.weight_decay = 0.01f; });
    const emb::table_spec momentum = with(O::momentum_sgd(0.1f));
    add(momentum, "optimizer.momentum", [](auto& s) { s.optimizer.momentum = 0.5f; });
    add(momentum, "optimizer.nesterov", [](auto& s) { s.optimizer.nesterov = true; });
    for (const O& o : {O::adagrad(0.1f), O::rowwise_adagrad(0.1f)}) {
      add(with(o), "optimizer.initial_accumulator", [](auto& s) { s.optimizer.initial_accumulator = 0.3f; });
      add(with(o), "optimizer.epsilon", [](auto& s) { s.optimizer.epsilon = 1e-3f; });
    }
    for (const O& o : {O::adam(0.1f), O::lazy_adam(0.1f)}) {
      add(with(o), "optimizer.beta1", [](auto& s) { s.optimizer.beta1 = 0.8f; });
      add(with(o), "optimizer.beta2", [](auto& s) { s.optimizer.beta2 = 0.99f; });
      add(with(o), "optimizer.epsilon", [](auto& s) { s.optimizer.epsilon = 1e-6f; });
    }
    const emb::table_spec ftrl = with(O::ftrl(0.1f));
    add(ftrl, "optimizer.learning_rate_power", [](auto& s) { s.optimizer.learning_rate_power = -0.25f; });
    add(ftrl, "optimizer.initial_accumulator", [](auto& s) { s.optimizer.initial_accumulator = 0.5f; });
    add(ftrl, "optimizer.l1", [](auto& s) { s.optimizer.l1 = 1.f; });
    add(ftrl, "optimizer.l2", [](auto& s) { s.optimizer.l2 = 1.f; });
    add(ftrl, "optimizer.l2_shrinkage", [](auto& s) { s.optimizer.l2_shrinkage = 1.f; });
    add(sgd, "initializer.initializer", [](auto& s) { s.initializer.initializer = I::kind::constant; });
    add(with(O::sgd(0.1f), I::constant(1.f)), "initializer.value", [](auto& s) { s.initializer.value = 2.f; });
    const emb::table_spec uniform = with(O::sgd(0.1f), I::uniform(-1.f, 1.f, 3));
    add(uniform, "initializer.low", [](auto& s) { s.initializer.low = -2.f; });
    add(uniform, "initializer.high", [](auto& s) { s.initializer.high = 2.f; });
    add(uniform, "initializer.seed (uniform)", [](auto& s) { s.initializer.seed = 4; });
    const emb::table_spec normal = with(O::sgd(0.1f), I::truncated_normal(0.1f, 3));
    add(normal, "initializer.mean", [](auto& s) { s.initializer.mean = 1.f; });
    add(normal, "initializer.stddev", [](auto& s) { s.initializer.stddev = 0.2f; });
    add(normal, "initializer.seed (truncated_normal)", [](auto& s) { s.initializer.seed = 4; });
    add(sgd, "admission.admission", [](auto& s) { s.admission = A::by_count(2); });
    const emb::table_spec count = with(O::sgd(0.1f), {}, A::by_count(2));
    add(count, "admission.count", [](auto& s) { s.admission.count = 3; });
    add(count, "admission.max_pending", [](auto& s) { s.admission.max_pending = 100; });
    const emb::table_spec coin = with(O::sgd(0.1f), {}, A::by_probability(0.5, 1));
    add(coin, "admission.probability", [](auto& s) { s.admission.probability = 0.25; });
    add(coin, "admission.seed", [](auto& s) { s.admission.seed = 2; });
    add(sgd, "eviction.eviction", [](auto& s) { s.eviction = E::by_age(); });
    add(with(O::sgd(0.1f), {}, {}, E::by_age(10)), "eviction.max_age (by_age)",
        [](auto& s) { s.eviction.max_age = 20; });
    const emb::table_spec lfu = with(O::sgd(0.1f), {}, {}, E::least_frequent(2, 10));
    add(lfu, "eviction.min_uses", [](auto& s) { s.eviction.min_uses = 3; });
    add(lfu, "eviction.max_age (least_frequent)", [](auto& s) { s.eviction.max_age = 20; });
    return v;
  }();
  return all;
}

std::vector<change> change_list() {
  std::vector<change> v;
  for (const auto& [base, c] : changes()) v.push_back(c);
  return v;
}

const emb::table_spec& base_of(const std::string& what) {
  for (const auto& [base, c] : changes())
    if (c.what == what) return base;
  throw std::logic_error("no change " + what);
}

// A bad value of one field, and the text validate() must name it by.
struct bad_field {
  std::string field;
  std::function<void(emb::table_spec&)> apply;
};
std::ostream& operator<<(std::ostream& os, const bad_field& b) { return os << b.field; }

std::vector<bad_field> bad_fields() {
  using O = emb::row_optimizer_spec;
  using I = emb::initializer_spec;
  using A = emb::admission_spec;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  return {
      {"name must not be empty", [](auto& s) { s.name.clear(); }},
      {"dim must be positive", [](auto& s) { s.dim = 0; }},
      {"rule.rule must be sync, async or bounded_staleness (it is 7)",
       [](auto& s) { s.rule.rule = static_cast<emb::table_rule::kind>(7); }},
      {"optimizer.optimizer must be sgd", [](auto& s) { s.optimizer.optimizer = static_cast<O::kind>(9); }},
      {"optimizer.learning_rate must be positive (it is -1)", [](auto& s) { s.optimizer.learning_rate = -1.f; }},
      {"optimizer.learning_rate must be positive (it is 0)", [](auto& s) { s.optimizer.learning_rate = 0.f; }},
      {"optimizer.learning_rate must be positive (it is nan)", [=](auto& s) { s.optimizer.learning_rate = nan; }},
      {"optimizer.learning_rate must be positive (it is inf)", [=](auto& s) { s.optimizer.learning_rate = inf; }},
      {"optimizer.weight_decay must be finite and >= 0", [](auto& s) { s.optimizer.weight_decay = -0.5f; }},
      {"optimizer.momentum must be finite and >= 0", [](auto& s) { s.optimizer = O::momentum_sgd(0.1f, -0.5f); }},
      {"optimizer.initial_accumulator must be finite and >= 0", [](auto& s) { s.optimizer = O::adagrad(0.1f, -1.f); }},
      {"optimizer.epsilon must be finite and >= 0",
       [](auto& s) {
         s.optimizer = O::rowwise_adagrad(0.1f);
         s.optimizer.epsilon = -1e-7f;
       }},
      {"optimizer.epsilon must be positive when initial_accumulator is 0",
       [](auto& s) {
         s.optimizer = O::adagrad(0.1f, 0.f);
         s.optimizer.epsilon = 0.f;
       }},
      {"optimizer.beta1 must be in [0, 1) (it is 1)",
       [](auto& s) {
         s.optimizer = O::adam(0.1f);
         s.optimizer.beta1 = 1.f;
       }},
      {"optimizer.beta2 must be in [0, 1)",
       [](auto& s) {
         s.optimizer = O::lazy_adam(0.1f);
         s.optimizer.beta2 = -0.1f;
       }},
      {"optimizer.epsilon must be positive (it is 0)",
       [](auto& s) {
         s.optimizer = O::adam(0.1f);
         s.optimizer.epsilon = 0.f;
       }},
      {"optimizer.learning_rate_power must be finite and <= 0",
       [](auto& s) {
         s.optimizer = O::ftrl(0.1f);
         s.optimizer.learning_rate_power = 0.5f;
       }},
      {"optimizer.l1 must be finite and >= 0", [](auto& s) { s.optimizer = O::ftrl(0.1f, -1.f); }},
      {"optimizer.l2 must be finite and >= 0", [](auto& s) { s.optimizer = O::ftrl(0.1f, 0.f, -1.f); }},
      {"optimizer.l2_shrinkage must be finite and >= 0",
       [](auto& s) {
         s.optimizer = O::ftrl(0.1f);
         s.optimizer.l2_shrinkage = -1.f;
       }},
      {"initializer.value must be finite", [=](auto& s) { s.initializer = I::constant(nan); }},
      {"initializer.high must be at least low (1)", [](auto& s) { s.initializer = I::uniform(1.f, -1.f); }},
      {"initializer.low must be finite", [=](auto& s) { s.initializer = I::uniform(-inf, 1.f); }},
      {"initializer.stddev must be finite and >= 0", [](auto& s) { s.initializer = I::truncated_normal(-0.1f); }},
      {"initializer.initializer must be zeros", [](auto& s) { s.initializer.initializer = static_cast<I::kind>(4); }},
      {"admission.count must be at least 1 (it is 0)", [](auto& s) { s.admission = A::by_count(0); }},
      {"admission.max_pending must be at least 1", [](auto& s) { s.admission = A::by_count(2, 0); }},
      {"admission.probability must be in [0, 1] (it is 1.5)", [](auto& s) { s.admission = A::by_probability(1.5); }},
      {"admission.admission must be always", [](auto& s) { s.admission.admission = static_cast<A::kind>(3); }},
      {"eviction.eviction must be none",
       [](auto& s) { s.eviction.eviction = static_cast<emb::eviction_spec::kind>(3); }},
      {"max_rows must be below 2^32", [](auto& s) { s.max_rows = std::uint64_t{1} << 32; }},
      {"evict_fraction must be in (0, 1] (it is 0)", [](auto& s) { s.evict_fraction = 0; }},
      {"evict_fraction must be in (0, 1] (it is 1.5)", [](auto& s) { s.evict_fraction = 1.5; }},
  };
}

}  // namespace

BOOST_AUTO_TEST_CASE(factories_take_each_models_own_defaults) {
  using O = emb::row_optimizer_spec;
  BOOST_TEST(O::adam(0.01f).epsilon == optim::adam{}.epsilon);  // 1e-8, not the member default 1e-7
  BOOST_TEST(O::lazy_adam(0.01f).beta2 == optim::lazy_adam{}.beta2);
  BOOST_TEST(O::adagrad(0.01f).epsilon == optim::adagrad{}.epsilon);
  BOOST_TEST(O::adagrad(0.01f).initial_accumulator == optim::adagrad{}.initial_accumulator);
  BOOST_TEST(O::rowwise_adagrad(0.01f).initial_accumulator == optim::rowwise_adagrad{}.initial_accumulator);
  BOOST_TEST(O::ftrl(0.01f).initial_accumulator == optim::ftrl{}.initial_accumulator_value);
  BOOST_TEST(O::ftrl(0.01f).learning_rate_power == optim::ftrl{}.learning_rate_power);
  BOOST_TEST(O::momentum_sgd(0.01f).momentum == optim::momentum{}.momentum);
  BOOST_TEST((O::sgd(0.3f).optimizer == O::kind::sgd));
  BOOST_TEST(O::sgd(0.3f).learning_rate == 0.3f);
  BOOST_TEST(emb::initializer_spec::uniform(-1.f, 2.f, 9).seed == 9u);
  BOOST_TEST(emb::admission_spec::by_count(3).max_pending == emb::admission::by_count::options{}.max_pending);
  BOOST_TEST(emb::admission_spec{}.probability == emb::admission::by_probability{}.probability);
  BOOST_TEST((emb::table_spec{}.evict_fraction == emb::table_options{}.evict_fraction));
  BOOST_TEST(emb::table_rule::bounded_staleness().staleness == 2u);
}

BOOST_AUTO_TEST_CASE(of_takes_every_setting_of_a_configured_model) {
  using O = emb::row_optimizer_spec;
  const O f = O::of(optim::ftrl{.learning_rate = 0.2f,
                                .learning_rate_power = -0.3f,
                                .initial_accumulator_value = 0.4f,
                                .l1_regularization_strength = 0.5f,
                                .l2_regularization_strength = 0.6f,
                                .l2_shrinkage_regularization_strength = 0.7f});
  BOOST_TEST((f.optimizer == O::kind::ftrl));
  BOOST_TEST(f.learning_rate == 0.2f);
  BOOST_TEST(f.learning_rate_power == -0.3f);
  BOOST_TEST(f.initial_accumulator == 0.4f);
  BOOST_TEST(f.l1 == 0.5f);
  BOOST_TEST(f.l2 == 0.6f);
  BOOST_TEST(f.l2_shrinkage == 0.7f);
  const O m = O::of(optim::momentum{.learning_rate = 0.2f, .momentum = 0.5f, .nesterov = true, .weight_decay = 0.1f});
  BOOST_TEST((m.optimizer == O::kind::momentum));
  BOOST_TEST(m.momentum == 0.5f);
  BOOST_TEST(m.nesterov);
  BOOST_TEST(m.weight_decay == 0.1f);
  const O a = O::of(optim::adam{.learning_rate = 0.2f, .beta1 = 0.5f, .beta2 = 0.6f, .epsilon = 0.7f});
  BOOST_TEST((a.optimizer == O::kind::adam));
  BOOST_TEST(a.beta1 == 0.5f);
  BOOST_TEST(a.beta2 == 0.6f);
  BOOST_TEST(a.epsilon == 0.7f);
  const auto t = emb::initializer_spec::of(emb::initializer::truncated_normal{.mean = 1.f, .stddev = 2.f, .seed = 3});
  BOOST_TEST((t.initializer == emb::initializer_spec::kind::truncated_normal));
  BOOST_TEST(t.mean == 1.f);
  BOOST_TEST(t.stddev == 2.f);
  BOOST_TEST(t.seed == 3u);
  const auto c = emb::admission_spec::of(emb::admission::by_count({.count = 5, .max_pending = 77}));
  BOOST_TEST(c.count == 5u);
  BOOST_TEST(c.max_pending == 77u);
  const auto e = emb::eviction_spec::of(emb::eviction::least_frequent{.min_uses = 4, .max_age = 9});
  BOOST_TEST((e.eviction == emb::eviction_spec::kind::least_frequent));
  BOOST_TEST(e.min_uses == 4u);
  BOOST_TEST(e.max_age == 9u);
}

BOOST_AUTO_TEST_CASE(a_spec_survives_the_wire) {
  const emb::table_spec spec = user_id();
  const emb::table_spec back = decode(encode(spec));
  BOOST_TEST((back == spec));
  BOOST_TEST(back.describe() == spec.describe());
  // Every field set away from its default (the unused ones too) comes back as it went.
  emb::table_spec odd = spec;
  odd.rule.staleness = 11;
  odd.optimizer = {.optimizer = emb::row_optimizer_spec::kind::ftrl,
                   .learning_rate = 0.125f,
                   .weight_decay = 0.25f,
                   .momentum = 0.375f,
                   .nesterov = true,
                   .initial_accumulator = 0.5f,
                   .epsilon = 0.625f,
                   .beta1 = 0.75f,
                   .beta2 = 0.875f,
                   .learning_rate_power = -0.125f,
                   .l1 = 1.f,
                   .l2 = 2.f,
                   .l2_shrinkage = 3.f};
  odd.initializer = {emb::initializer_spec::kind::constant, 1.5f, -2.5f, 3.5f, 4.5f, 5.5f, 0xdeadbeefcafeull};
  odd.admission = {emb::admission_spec::kind::by_probability, 9, 99, 0.375, 0xfeedull};
  odd.eviction = {emb::eviction_spec::kind::least_frequent, 1234567890123ull, 17};
  odd.max_bytes = 1ull << 40;
  odd.evict_fraction = 0.3;
  const emb::table_spec o = decode(encode(odd));
  BOOST_TEST(o.name == odd.name);
  BOOST_TEST(o.dim == odd.dim);
  BOOST_TEST((o.rule.rule == odd.rule.rule));
  BOOST_TEST(o.rule.staleness == 11u);
  BOOST_TEST(o.optimizer.weight_decay == 0.25f);
  BOOST_TEST(o.optimizer.momentum == 0.375f);
  BOOST_TEST(o.optimizer.nesterov);
  BOOST_TEST(o.optimizer.epsilon == 0.625f);
  BOOST_TEST(o.optimizer.beta1 == 0.75f);
  BOOST_TEST(o.optimizer.beta2 == 0.875f);
  BOOST_TEST(o.optimizer.learning_rate_power == -0.125f);
  BOOST_TEST(o.optimizer.l2_shrinkage == 3.f);
  BOOST_TEST(o.initializer.value == 1.5f);
  BOOST_TEST(o.initializer.low == -2.5f);
  BOOST_TEST(o.initializer.high == 3.5f);
  BOOST_TEST(o.initializer.mean == 4.5f);
  BOOST_TEST(o.initializer.stddev == 5.5f);
  BOOST_TEST(o.initializer.seed == 0xdeadbeefcafeull);
  BOOST_TEST(o.admission.count == 9u);
  BOOST_TEST(o.admission.max_pending == 99u);
  BOOST_TEST(o.admission.probability == 0.375);
  BOOST_TEST(o.admission.seed == 0xfeedull);
  BOOST_TEST(o.eviction.max_age == 1234567890123ull);
  BOOST_TEST(o.eviction.min_uses == 17u);
  BOOST_TEST(o.max_rows == odd.max_rows);
  BOOST_TEST(o.max_bytes == odd.max_bytes);
  BOOST_TEST(o.evict_fraction == 0.3);
}

BOOST_DATA_TEST_CASE(every_setting_a_model_reads_changes_equality_the_description_and_the_bytes,
                     boost::unit_test::data::make(change_list()), c) {
  const emb::table_spec base = base_of(c.what);
  emb::table_spec changed = base;
  c.apply(changed);
  BOOST_TEST_REQUIRE(changed.describe() != "");
  changed.validate();
  BOOST_TEST(!(changed == base));
  BOOST_TEST(changed.describe() != base.describe());
  BOOST_TEST(encode(changed) != encode(base));
  const emb::table_spec back = decode(encode(changed));
  BOOST_TEST((back == changed));
  BOOST_TEST(!(back == base));
  BOOST_TEST(back.describe() == changed.describe());
}

BOOST_AUTO_TEST_CASE(settings_a_model_does_not_read_change_nothing) {
  emb::table_spec a = user_id();  // async, adagrad, uniform, by_count, least_frequent
  emb::table_spec b = a;
  b.rule.staleness = 9;
  b.optimizer.beta1 = 0.1f;
  b.optimizer.momentum = 0.2f;
  b.optimizer.nesterov = true;
  b.optimizer.l1 = 3.f;
  b.optimizer.learning_rate_power = -1.f;
  b.initializer.value = 4.f;
  b.initializer.mean = 5.f;
  b.initializer.stddev = 6.f;
  b.admission.probability = 0.7;
  b.admission.seed = 8;
  BOOST_TEST((a == b));
  BOOST_TEST(a.describe() == b.describe());
  emb::require_same_table(a, b);
  // ... and the kind still counts.
  b.optimizer.optimizer = emb::row_optimizer_spec::kind::rowwise_adagrad;
  BOOST_TEST(!(a == b));
}

BOOST_DATA_TEST_CASE(validate_names_the_table_and_the_first_bad_field, boost::unit_test::data::make(bad_fields()),
                     bad) {
  emb::table_spec spec = user_id();
  spec.validate();
  bad.apply(spec);
  const std::string msg = dsgd::test::error_of([&] { spec.validate(); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "table '" + spec.name + "': " + bad.field), msg);
}

BOOST_AUTO_TEST_CASE(validate_reports_the_first_bad_field_in_declaration_order) {
  emb::table_spec spec = user_id();
  spec.optimizer.learning_rate = -1.f;
  spec.admission.count = 0;
  spec.evict_fraction = 2;
  const std::string msg = dsgd::test::error_of([&] { spec.validate(); }, dsgd::errc::invalid_argument);
  BOOST_TEST(msg == "table 'user_id': optimizer.learning_rate must be positive (it is -1)");
  // A part alone names itself.
  const std::string part = dsgd::test::error_of([&] { spec.admission.validate(); }, dsgd::errc::invalid_argument);
  BOOST_TEST(part == "embedding::admission_spec: count must be at least 1 (it is 0)");
}

BOOST_AUTO_TEST_CASE(describe_reads_as_documented) {
  BOOST_TEST(user_id().describe() ==
             "user_id: dim 16, async, adagrad(lr 0.05), uniform(-0.05, 0.05, seed 7), "
             "by_count(2), least_frequent, max_rows 1000000");
  using O = emb::row_optimizer_spec;
  emb::table_spec s{.name = "wide",
                    .dim = 1,
                    .rule = emb::table_rule::bounded_staleness(3),
                    .optimizer = O::ftrl(0.1f, 1.f),
                    .initializer = emb::initializer_spec::truncated_normal(0.25f, 5),
                    .admission = emb::admission_spec::by_probability(0.5, 2),
                    .eviction = emb::eviction_spec::by_age(100),
                    .max_bytes = 4096,
                    .evict_fraction = 0.125};
  BOOST_TEST(s.describe() ==
             "wide: dim 1, bounded_staleness(3), ftrl(lr 0.1, l1 1), truncated_normal(0, 0.25, seed 5), "
             "by_probability(0.5, seed 2), by_age(100), max_bytes 4096, evict_fraction 0.125");
  emb::table_spec d{.name = "plain", .dim = 8};
  BOOST_TEST(d.describe() == "plain: dim 8, sync, sgd(lr 0.01), zeros, always, none");
  BOOST_TEST(O::momentum_sgd(0.1f, 0.5f, true).describe() == "momentum(lr 0.1, momentum 0.5, nesterov)");
  BOOST_TEST(O::adam(0.001f).describe() == "adam(lr 0.001)");
  O adam_with_member_epsilon = O::adam(0.001f);
  adam_with_member_epsilon.epsilon = O{}.epsilon;  // a designated-initializer spec of adam
  BOOST_TEST(adam_with_member_epsilon.describe() == "adam(lr 0.001, epsilon 1e-07)");
  BOOST_TEST(O::rowwise_adagrad(0.1f, 0.5f).describe() == "rowwise_adagrad(lr 0.1, initial_accumulator 0.5)");
  BOOST_TEST(emb::initializer_spec::constant(0.5f).describe() == "constant(0.5)");
  BOOST_TEST(emb::admission_spec::by_count(3, 100).describe() == "by_count(3, max_pending 100)");
  BOOST_TEST(emb::eviction_spec::least_frequent(2, 10).describe() == "least_frequent(min_uses 2, max_age 10)");
  // A kind no model has (bytes from a bad peer) describes itself instead of failing.
  O bad;
  bad.optimizer = static_cast<O::kind>(200);
  BOOST_TEST(bad.describe() == "unknown(200)");
}

BOOST_AUTO_TEST_CASE(a_second_create_is_accepted_when_equal_and_refused_naming_both) {
  const emb::table_spec first = user_id();
  emb::require_same_table(first, decode(encode(first)));
  emb::table_spec other = first;
  other.optimizer = emb::row_optimizer_spec::adagrad(0.1f);
  const std::string msg =
      dsgd::test::error_of([&] { emb::require_same_table(first, other); }, dsgd::errc::invalid_argument);
  BOOST_TEST(contains(msg, "table 'user_id'"));
  BOOST_TEST(contains(msg, first.describe()));
  BOOST_TEST(contains(msg, other.describe()));
}

BOOST_AUTO_TEST_SUITE_END()
