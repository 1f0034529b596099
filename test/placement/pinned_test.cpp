// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/placement/pinned.hpp>: variables pinned to ps tasks by device string, the rest
// placed by a fallback; and a cluster of two ps tasks that trains softmax regression with it.
#include <dsgd/device/cpu.hpp>
#include <dsgd/placement/greedy_by_bytes.hpp>
#include <dsgd/placement/partitioned.hpp>
#include <dsgd/placement/pinned.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/update/sync_average.hpp>

#include <boost/test/unit_test.hpp>

#include <conformance/user_policy_cluster.hpp>
#include <support/error_checks.hpp>

#include "fixtures.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(placement_pinned_test)

static_assert(dsgd::Placement<dsgd::placement::pinned<>>);
static_assert(dsgd::Placement<dsgd::placement::pinned<dsgd::placement::greedy_by_bytes>>);
static_assert(dsgd::Placement<dsgd::placement::pinned<dsgd::placement::partitioned>>);
static_assert(std::same_as<dsgd::placement::pinned<>, dsgd::placement::pinned<dsgd::placement::round_robin>>);

using namespace placement_fixtures;
using dsgd::errc;
using dsgd::test::contains;
using dsgd::test::error_of;

namespace {

// The article's two variables (examples/03_cluster.cpp --demo).
std::vector<pl::variable_info> article_variables() { return {{"w", {2, 2}}, {"b", {2, 2}}}; }

// Checks that @p msg names the variable, the device string and the cluster's ps count.
void check_names(const std::string& msg, const std::string& variable, const std::string& device, std::size_t ps_tasks) {
  BOOST_TEST(contains(msg, "placement::pinned"));
  BOOST_TEST(contains(msg, "\"" + variable + "\""));
  BOOST_TEST(contains(msg, "\"" + device + "\""));
  BOOST_TEST(contains(msg, std::to_string(ps_tasks) + " ps task"));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(placement)

// with tf.device('/job:ps/task:0'): w = ...; with tf.device('/job:ps/task:1'): b = ...
BOOST_AUTO_TEST_CASE(pinned_puts_the_articles_w_and_b_on_the_tasks_it_names) {
  const pl::pinned<> as_written{.pins = {{"w", "/job:ps/task:0"}, {"b", "/job:ps/task:1"}}};
  const auto p = as_written.place(article_variables(), 2);
  BOOST_TEST(owners(p) == (std::vector<std::size_t>{0, 1}), boost::test_tools::per_element());
  check_covers_every_element(p);
  BOOST_TEST(p.shards()[0].elements == 4u);

  // The other way round, which round_robin would not do, and with TF's other spellings.
  const pl::pinned<> swapped{.pins = {{"w", "/job:ps/replica:0/task:1/device:CPU:0"}, {"b", "/task:0/cpu:0"}}};
  BOOST_TEST(owners(swapped.place(article_variables(), 2)) == (std::vector<std::size_t>{1, 0}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(pinned_prefers_an_exact_name_then_the_longest_scope) {
  const std::vector<pl::variable_info> v{{"emb/table", {8, 4}}, {"emb/sub/x", {4}}, {"emb/y", {4}},
                                         {"other", {4}},        {"w", {4}},         {"w_1", {4}},
                                         {"dense0/kernel", {4}}};
  const std::vector<pl::pin> pins{{"emb/", "/job:ps/task:0"},
                                  {"emb/sub/", "/job:ps/task:1"},
                                  {"emb/table", "/job:ps/task:2"},
                                  {"w", "/job:ps/task:2"},
                                  {"dense", "/job:ps/task:2"}};
  const pl::pinned<> p{.pins = pins};
  BOOST_TEST(*p.rule_for("emb/table") == 2u);  // exact beats the scope "emb/"
  BOOST_TEST(*p.rule_for("emb/sub/x") == 1u);  // "emb/sub/" is longer than "emb/"
  BOOST_TEST(*p.rule_for("emb/y") == 0u);
  BOOST_TEST(!p.rule_for("other"));
  BOOST_TEST(!p.rule_for("w_1"));            // a name without '/' is exact, not a prefix
  BOOST_TEST(!p.rule_for("dense0/kernel"));  // so "dense" catches nothing here
  BOOST_TEST(!p.rule_for("emb/"));           // a scope matches names below it, not itself

  const auto plan = p.place(v, 3);
  // round_robin alone: 0 1 2 0 1 2 0; pins move emb/table to 2, emb/sub/x to 1, emb/y to 0, w to 2.
  BOOST_TEST(owners(plan) == (std::vector<std::size_t>{2, 1, 0, 0, 2, 2, 0}), boost::test_tools::per_element());

  // The order of the rules does not matter.
  auto reversed = pins;
  std::reverse(reversed.begin(), reversed.end());
  BOOST_TEST(pl::pinned<>{.pins = reversed}.place(v, 3).describe() == plan.describe());
}

BOOST_AUTO_TEST_CASE(pinned_leaves_the_rest_where_the_fallback_alone_puts_it) {
  // greedy_by_bytes alone: dense0/kernel on ps:0, the rest on ps:1. Pinning the kernel to ps:1
  // moves it and nothing else: the fallback places every variable, pinned ones included.
  const auto vars = mlp_variables();
  const pl::pinned<pl::greedy_by_bytes> p{.pins = {{"dense0/kernel", "/job:ps/task:1"}}, .fallback = {}};
  const auto plan = p.place(vars, 2);
  const auto alone = pl::greedy_by_bytes{}.place(vars, 2);
  BOOST_TEST(owners(plan) == (std::vector<std::size_t>{1, 1, 1, 1, 1, 1}), boost::test_tools::per_element());
  for (std::size_t i = 1; i < vars.size(); ++i) BOOST_TEST((plan.shards_of(i) == alone.shards_of(i)));

  // And with round_robin: pinning dense1/* to ps:2 of 3 leaves the others at i mod 3.
  const pl::pinned<> rr{.pins = {{"dense1/", "/job:ps/task:2"}}};
  BOOST_TEST(owners(rr.place(vars, 3)) == (std::vector<std::size_t>{0, 1, 2, 2, 1, 2}),
             boost::test_tools::per_element());

  // No rule at all: exactly the fallback's plan.
  BOOST_TEST(pl::pinned<pl::greedy_by_bytes>{}.place(vars, 2).fingerprint() == alone.fingerprint());
}

BOOST_AUTO_TEST_CASE(pinned_keeps_pinned_variables_whole_over_a_partitioned_fallback) {
  const std::vector<pl::variable_info> v{{"emb/table", {10, 4}}, {"softmax/weights", {10, 4}}, {"bias", {4}}};
  const auto part = pl::partitioned::fixed_size(3);
  const pl::pinned<pl::partitioned> p{.pins = {{"softmax/weights", "/job:ps/task:1"}}, .fallback = part};
  const auto plan = p.place(v, 2);
  const auto alone = part.place(v, 2);
  check_covers_every_element(plan);
  const auto pinned = plan.shards_of(1);
  BOOST_TEST_REQUIRE(pinned.size() == 1u);
  BOOST_TEST(pinned[0].ps_task == 1u);
  BOOST_TEST(pinned[0].offset == 0u);
  BOOST_TEST(pinned[0].elements == 40u);
  BOOST_TEST(plan.shards_of(0).size() == 3u);
  BOOST_TEST((plan.shards_of(0) == alone.shards_of(0)));
  BOOST_TEST((plan.shards_of(2) == alone.shards_of(2)));
  BOOST_TEST(plan.shards().size() == 3u + 1u + 3u);
  // Shards stay in variable order.
  for (std::size_t k = 1; k < plan.shards().size(); ++k)
    BOOST_TEST(plan.shards()[k - 1].variable <= plan.shards()[k].variable);
}

BOOST_AUTO_TEST_CASE(pinned_refuses_a_device_string_that_names_no_ps_task_of_the_cluster) {
  const auto refused = [](const std::string& device, errc code) {
    BOOST_TEST_INFO("device string \"" << device << "\"");
    const pl::pinned<> p{.pins = {{"w", "/job:ps/task:0"}, {"b", device}}};
    const auto msg = error_of([&] { (void)p.place(article_variables(), 2); }, code);
    check_names(msg, "b", device, 2);
    return msg;
  };
  BOOST_TEST(contains(refused("/job:worker/task:0", errc::invalid_argument), "job \"worker\""));
  BOOST_TEST(contains(refused("/job:ps/task:3", errc::invalid_argument), "task 3"));
  BOOST_TEST(contains(refused("/job:ps/task:2", errc::invalid_argument), "\"/job:ps/task:1\""));  // the last
  BOOST_TEST(contains(refused("/job:ps", errc::invalid_argument), "no task"));
  BOOST_TEST(contains(refused("/job:ps/replica:1/task:0", errc::invalid_argument), "replica 1"));
  // A string that does not parse: device_spec's code, and its caret message after ours.
  const auto msg = refused("/job:ps/tsk:0", errc::bad_device_string);
  BOOST_TEST(contains(msg, "unknown component \"tsk\""));
  BOOST_TEST(contains(msg, "^"));
  refused("/job:ps/task:", errc::bad_device_string);
  refused("ps:0", errc::bad_device_string);

  // One ps task: "ps task", singular.
  const pl::pinned<> one{.pins = {{"w", "/job:ps/task:1"}}};
  check_names(error_of([&] { (void)one.place(article_variables(), 1); }, errc::invalid_argument), "w", "/job:ps/task:1",
              1);
  // No ps task at all: the usual message.
  error_of([&] { (void)one.place(article_variables(), 0); }, errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(pinned_names_the_rule_of_a_refused_scope_or_unused_rule) {
  const auto vars = mlp_variables();
  // A scope: the first variable it decides, and the rule.
  const pl::pinned<> scope{.pins = {{"dense1/", "/job:worker/task:0"}}};
  const auto msg = error_of([&] { (void)scope.place(vars, 2); }, errc::invalid_argument);
  check_names(msg, "dense1/kernel", "/job:worker/task:0", 2);
  BOOST_TEST(contains(msg, "\"dense1/\""));

  // A rule that decides no variable is still checked, and named as a rule.
  const pl::pinned<> unused{.pins = {{"emb/", "/job:ps/task:5"}}};
  const auto msg2 = error_of([&] { (void)unused.place(vars, 2); }, errc::invalid_argument);
  check_names(msg2, "emb/", "/job:ps/task:5", 2);
  BOOST_TEST(contains(msg2, "pins no variable"));

  // The same name pinned to two tasks, and a rule without a name.
  const pl::pinned<> twice{.pins = {{"dense0/bias", "/job:ps/task:0"}, {"dense0/bias", "/task:1"}}};
  const auto msg3 = error_of([&] { (void)twice.place(vars, 2); }, errc::invalid_argument);
  BOOST_TEST(contains(msg3, "\"dense0/bias\""));
  BOOST_TEST(contains(msg3, "\"/task:1\""));
  // ... but twice to the same task, however spelt, is fine.
  const pl::pinned<> same{.pins = {{"dense0/bias", "/job:ps/task:1"}, {"dense0/bias", "/task:1/cpu:0"}}};
  BOOST_TEST(same.place(vars, 2).shards_of(1)[0].ps_task == 1u);
  const pl::pinned<> nameless{.pins = {{"", "/job:ps/task:0"}}};
  BOOST_TEST(contains(error_of([&] { (void)nameless.place(vars, 2); }, errc::invalid_argument), "empty name"));
}

BOOST_AUTO_TEST_CASE(pinned_ignores_rules_that_decide_no_variable) {
  const auto vars = mlp_variables();
  const pl::pinned<> p{.pins = {{"emb/", "/job:ps/task:0"},
                                {"dense0/", "/job:ps/task:1"},
                                {"dense0/kernel", "/job:ps/task:0"},
                                {"dense0/bias", "/job:ps/task:1"}}};
  // "dense0/" is shadowed by the two exact names; "emb/" matches nothing.
  BOOST_TEST((p.unused(vars) == std::vector<pl::pin>{p.pins[0], p.pins[1]}));
  const auto plan = p.place(vars, 2);
  BOOST_TEST(owners(plan) == (std::vector<std::size_t>{0, 1, 0, 1, 0, 1}), boost::test_tools::per_element());
  BOOST_TEST(plan.fingerprint() == pl::round_robin{}.place(vars, 2).fingerprint());
  const pl::pinned<> lone{.pins = {{"emb/", "/job:ps/task:0"}}};
  BOOST_TEST(lone.unused({}).size() == 1u);
}

BOOST_AUTO_TEST_CASE(pinned_is_a_pure_function_of_variables_ps_count_and_rules) {
  const auto vars = mlp_variables();
  const pl::pinned<pl::partitioned> p{.pins = {{"dense2/", "/job:ps/task:0"}, {"dense0/kernel", "/task:2"}},
                                      .fallback = pl::partitioned::fixed_size(2)};
  const auto a = p.place(vars, 3);
  const auto copy = p;  // every worker holds its own copy of the options
  const auto b = copy.place(vars, 3);
  BOOST_TEST((a.shards() == b.shards()));
  BOOST_TEST(a.describe() == b.describe());
  BOOST_TEST(a.fingerprint() == b.fingerprint());
  BOOST_TEST(a.fingerprint() != pl::partitioned::fixed_size(2).place(vars, 3).fingerprint());
  BOOST_TEST(a.fingerprint() != p.place(vars, 4).fingerprint());
}

// Two ps tasks and two workers train softmax regression (dense0/kernel 784x10, dense0/bias 10)
// with the kernel pinned to ps:1 by name and the bias to ps:0 by its scope, which is the other
// way round from round_robin: the chief's plan and what each ps task holds say so.
BOOST_AUTO_TEST_CASE(a_cluster_trains_softmax_regression_with_pinned_variables) {
  using placement = pl::pinned<>;
  using ps_type =
      dsgd::train::ps_task<dsgd::update::sync_average, dsgd::test::decaying_momentum, dsgd::transport::inproc>;
  const placement pins{.pins = {{"dense0/kernel", "/job:ps/task:1"}, {"dense0/", "/job:ps/task:0/device:CPU:0"}}};
  const auto o = dsgd::test::user_policy_options<placement, dsgd::update::sync_average>(
      dsgd::test::decaying_momentum_over(469), pins);
  std::mutex m;
  std::vector<std::vector<std::size_t>> held(2);  // per ps task: each variable's shard-0 elements, or 0
  const auto r = dsgd::test::train_softmax(o, 2, dsgd::device::cpu{}, [&](const ps_type& ps, std::size_t i) {
    std::lock_guard lock(m);
    for (std::uint32_t v = 0; v < 2; ++v) {
      const auto* s = ps.server()->find(v, 0);
      held[i].push_back(s ? s->size() : 0);
    }
  });
  BOOST_TEST_REQUIRE(r.plan.variables().size() == 2u);
  BOOST_TEST(r.plan.variables()[0].name == "dense0/kernel");
  BOOST_TEST(owners(r.plan) == (std::vector<std::size_t>{1, 0}), boost::test_tools::per_element());
  BOOST_TEST(r.plan.fingerprint() == pins.place(r.plan.variables(), 2).fingerprint());
  BOOST_TEST(held[0] == (std::vector<std::size_t>{0, 10}), boost::test_tools::per_element());
  BOOST_TEST(held[1] == (std::vector<std::size_t>{7840, 0}), boost::test_tools::per_element());
  BOOST_TEST(r.dropped == 0u);
  BOOST_TEST(r.accuracy >= 0.80);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
