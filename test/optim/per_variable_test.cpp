// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for optim::per_variable (<dsgd/optim/per_variable.hpp>): which variables an entry
// names, updates bit for bit those of the optimizer each variable applies, the slots a
// checkpoint holds, and the same under the update rules: sync steps, a sparse sync step,
// async's chunked and sparse applies where the applied optimizer has them and the named
// error where it has none.
#include <dsgd/device/cpu.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/per_variable.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(optim_per_variable_test)

namespace optim = dsgd::optim;
using cpu = dsgd::device::cpu;
using opt_type = optim::per_variable<optim::adam>;

static_assert(dsgd::Optimizer<opt_type, cpu>);
static_assert(dsgd::update::chunked_apply<opt_type>::available);
static_assert(dsgd::update::sparse_apply<opt_type>::available);

namespace {

optim::ftrl ftrl_of_wide() { return {.learning_rate = 0.1f, .l1_regularization_strength = 0.01f}; }

opt_type wide_and_deep() {
  return {.all = {.learning_rate = 0.01f},
          .variables = {{"wide/bias", optim::sgd{.learning_rate = 0.5f}},
                        {"wide/", ftrl_of_wide()},
                        {"deep/embedding", optim::adagrad{.learning_rate = 0.05f}}}};
}

std::vector<float> ramp(std::size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * float(i % 7) + offset;
  return v;
}

std::vector<std::string> slot_names(opt_type::state<cpu>& s) {
  std::vector<std::string> out;
  s.visit([&](const char* name, auto&) { out.emplace_back(name); });
  return out;
}

auto soon() { return std::chrono::steady_clock::now() + std::chrono::seconds(10); }

}  // namespace

BOOST_AUTO_TEST_CASE(an_entry_names_one_variable_or_a_scope_and_the_first_match_wins) {
  const auto o = wide_and_deep();
  BOOST_TEST(o.for_variable("wide/bias").applied->index() == 0u);  // sgd, before the scope
  BOOST_TEST(o.for_variable("wide/w").applied->index() == 5u);     // ftrl
  BOOST_TEST(o.for_variable("deep/embedding").applied->index() == 2u);
  BOOST_TEST(!o.for_variable("deep/embedding/x").applied);  // a name, not a scope
  BOOST_TEST(!o.for_variable("wider/w").applied);           // "wide/" is no prefix of it
  BOOST_TEST(!o.for_variable("deep/dense0/kernel").applied);
  BOOST_TEST(!o.for_variable("").applied);
  BOOST_TEST(optim::for_variable(optim::sgd{.learning_rate = 3.f}, "any").learning_rate == 3.f);  // no overrides
}

BOOST_AUTO_TEST_CASE(each_variable_updates_bit_for_bit_as_its_own_optimizer) {
  const auto o = wide_and_deep();
  constexpr std::size_t n = 37;
  const auto w0 = ramp(n, 0.1f, -0.3f);
  const auto check = [&](const std::string& name, auto direct) {
    auto mine = optim::for_variable(o, name);
    auto s = optim::make_state(mine, cpu{}, n);
    typename decltype(direct)::template state<cpu> ds(cpu{}, n);
    auto w = w0, dw = w0;
    for (int step = 1; step <= 4; ++step) {
      const auto g = ramp(n, 0.03f * float(step), -0.1f);
      mine.apply(cpu{}, s, w.data(), g.data(), n, 0.5f);
      direct.apply(cpu{}, ds, dw.data(), g.data(), n, 0.5f);
    }
    BOOST_TEST(w == dw, boost::test_tools::per_element());
    BOOST_TEST(w != w0, name << " did not change");
  };
  check("wide/w", ftrl_of_wide());
  check("wide/bias", optim::sgd{.learning_rate = 0.5f});
  check("deep/embedding", optim::adagrad{.learning_rate = 0.05f});
  check("deep/dense0/kernel", optim::adam{.learning_rate = 0.01f});
}

BOOST_AUTO_TEST_CASE(a_variable_keeps_the_slots_of_its_own_optimizer) {
  const auto o = wide_and_deep();
  auto ftrl = optim::make_state(o.for_variable("wide/w"), cpu{}, 4);
  auto adam = optim::make_state(o.for_variable("deep/x"), cpu{}, 4);
  auto sgd = optim::make_state(o.for_variable("wide/bias"), cpu{}, 4);
  BOOST_TEST(slot_names(ftrl) == (std::vector<std::string>{"accumulator", "linear"}), boost::test_tools::per_element());
  BOOST_TEST(slot_names(adam) == (std::vector<std::string>{"m", "v", "t"}), boost::test_tools::per_element());
  BOOST_TEST(slot_names(sgd).empty());
  // A state constructed as Optimizer's concept does holds `all`'s slots.
  opt_type::state<cpu> plain(cpu{}, 4);
  BOOST_TEST(slot_names(plain) == slot_names(adam), boost::test_tools::per_element());
  // Slots made for another optimizer are refused by name, before anything is written.
  std::vector<float> w(4, 1.f), g(4, 1.f);
  BOOST_CHECK_EXCEPTION(o.for_variable("wide/w").apply(cpu{}, adam, w.data(), g.data(), 4), dsgd::error,
                        [](const dsgd::error& e) {
                          return e.code() == dsgd::errc::invalid_argument &&
                                 std::string(e.what()).find("optim::per_variable") != std::string::npos;
                        });
  BOOST_TEST(w == std::vector<float>(4, 1.f), boost::test_tools::per_element());
}

// A sync step of two replicas applies each variable's optimizer to the mean; a step of sparse
// pushes only applies it to the rows touched where it has a sparse apply (ftrl), and adam
// (none) the dense mean, as a plain adam shard does.
BOOST_AUTO_TEST_CASE(sync_steps_apply_each_variables_optimizer_to_the_mean) {
  const auto o = wide_and_deep();
  constexpr std::size_t rows = 5, dim = 3, n = rows * dim;
  const auto w0 = ramp(n, 0.2f, -0.5f);
  for (const std::string name : {"wide/w", "deep/dense0/kernel"}) {
    const auto mine = o.for_variable(name);
    dsgd::update::sync_average::shard<cpu, opt_type> shard(cpu{}, w0, mine, 2);
    auto state = optim::make_state(mine, cpu{}, n);
    auto expected = w0;
    const auto a = ramp(n, 0.05f, 0.1f), b = ramp(n, -0.02f, 0.3f);
    shard.push(0, 0, a.data());
    shard.push(1, 0, b.data());
    std::vector<float> sum(n);
    for (std::size_t i = 0; i < n; ++i) sum[i] = a[i] + b[i];
    mine.apply(cpu{}, state, expected.data(), sum.data(), n, 0.5f);
    // then a step of sparse pushes to rows {1, 3}
    const std::vector<std::uint64_t> keys{1, 3};
    const auto ga = ramp(keys.size() * dim, 0.1f, -0.2f), gb = ramp(keys.size() * dim, 0.07f, 0.05f);
    shard.push_rows(0, 1, keys, dim, ga.data());
    shard.push_rows(1, 1, keys, dim, gb.data());
    std::vector<float> dense(n, 0.f);
    for (std::size_t k = 0; k < keys.size(); ++k)
      for (std::size_t c = 0; c < dim; ++c) dense[keys[k] * dim + c] = ga[k * dim + c] + gb[k * dim + c];
    if (name == "wide/w") {  // ftrl's sparse apply: rows 1 and 3 only
      std::vector<float> packed;
      for (std::size_t k = 0; k < keys.size(); ++k)
        for (std::size_t c = 0; c < dim; ++c) packed.push_back(dense[keys[k] * dim + c]);
      dsgd::update::sparse_apply<optim::ftrl>::apply(ftrl_of_wide(), cpu{}, std::get<6>(state.held), expected.data(),
                                                     keys.data(), keys.size(), dim, packed.data(), 0.5f);
    } else {  // adam: the dense mean
      mine.apply(cpu{}, state, expected.data(), dense.data(), n, 0.5f);
    }
    std::vector<float> actual(n);
    BOOST_TEST(shard.pull(0, 2, actual.data(), soon()) == 2u);
    BOOST_TEST(actual == expected, boost::test_tools::per_element());
  }
}

// Async streams a push in chunks where the variable's optimizer has a chunked apply (ftrl) and
// applies it whole where it has none (adam): both end where the optimizer alone does. A sparse
// push goes through ftrl's sparse apply, and to an adam variable is the named error.
BOOST_AUTO_TEST_CASE(async_streams_and_applies_rows_where_the_variables_optimizer_can) {
  const auto o = wide_and_deep();
  constexpr std::size_t rows = 4, dim = 4, n = rows * dim;
  const auto w0 = ramp(n, 0.1f, 0.2f);
  const auto g = ramp(n, 0.3f, -0.4f);
  for (const std::string name : {"wide/w", "deep/dense0/kernel"}) {
    const auto mine = o.for_variable(name);
    const bool chunked = name == "wide/w";
    BOOST_TEST(dsgd::update::can_apply_chunked(mine) == chunked, name);
    BOOST_TEST(dsgd::update::can_apply_sparse(mine) == chunked, name);
    dsgd::update::async::shard<cpu, opt_type> shard(cpu{}, w0, mine, 1);
    BOOST_TEST(shard.push_chunk(0, 0, n / 2, g.data()) == chunked, name);
    BOOST_TEST(shard.push_chunk(0, n / 2, n / 2, g.data()) == chunked, name);
    shard.push_streamed(0, 0, g.data());
    BOOST_TEST(shard.streamed() == (chunked ? 1u : 0u), name);
    auto state = optim::make_state(mine, cpu{}, n);
    auto expected = w0;
    mine.apply(cpu{}, state, expected.data(), g.data(), n, 1.f);
    std::vector<float> actual(n);
    shard.pull(0, 0, actual.data(), soon());
    BOOST_TEST(actual == expected, boost::test_tools::per_element());

    const std::vector<std::uint64_t> keys{2};
    const auto gr = ramp(dim, 0.5f, -1.f);
    if (chunked) {
      shard.push_rows(0, 0, keys, dim, gr.data());
      dsgd::update::sparse_apply<optim::ftrl>::apply(ftrl_of_wide(), cpu{}, std::get<6>(state.held), expected.data(),
                                                     keys.data(), 1, dim, gr.data(), 1.f);
      shard.pull(0, 0, actual.data(), soon());
      BOOST_TEST(actual == expected, boost::test_tools::per_element());
    } else {
      BOOST_CHECK_EXCEPTION(shard.push_rows(0, 0, keys, dim, gr.data()), dsgd::error, [](const dsgd::error& e) {
        return e.code() == dsgd::errc::invalid_argument &&
               std::string(e.what()).find("no sparse apply") != std::string::npos;
      });
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
