// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/placement/*.hpp>.
#include <dsgd/placement/greedy_by_bytes.hpp>
#include <dsgd/placement/partitioned.hpp>
#include <dsgd/placement/round_robin.hpp>

#include <boost/test/unit_test.hpp>

#include <tuple>
#include <vector>

static_assert(dsgd::Placement<dsgd::placement::round_robin>);
static_assert(dsgd::Placement<dsgd::placement::greedy_by_bytes>);
static_assert(dsgd::Placement<dsgd::placement::partitioned>);
static_assert(!dsgd::Placement<int>);

namespace pl = dsgd::placement;

namespace {

// The MLP's variables in creation order.
std::vector<pl::variable_info> mlp_variables() {
  return {{"dense0/kernel", {784, 256}}, {"dense0/bias", {256}},
          {"dense1/kernel", {256, 128}}, {"dense1/bias", {128}},
          {"dense2/kernel", {128, 10}},  {"dense2/bias", {10}}};
}

// Every element of every variable is covered by exactly one shard, in order.
void check_covers_every_element(const pl::plan& p) {
  for (std::size_t v = 0; v < p.variables().size(); ++v) {
    std::size_t next = 0;
    for (const auto& s : p.shards_of(v)) {
      BOOST_TEST(s.offset == next);
      BOOST_TEST(s.ps_task < p.ps_tasks());
      next += s.elements;
    }
    BOOST_TEST(next == p.variables()[v].shape.elements());
  }
}

}  // namespace

using policies = std::tuple<pl::round_robin, pl::greedy_by_bytes, pl::partitioned>;

BOOST_AUTO_TEST_SUITE(placement)

BOOST_AUTO_TEST_CASE(round_robin_deals_variables_in_creation_order) {
  auto p = pl::round_robin{}.place(mlp_variables(), 2);
  std::vector<std::size_t> owners;
  for (const auto& s : p.shards()) owners.push_back(s.ps_task);
  BOOST_TEST(owners == (std::vector<std::size_t>{0, 1, 0, 1, 0, 1}), boost::test_tools::per_element());
  BOOST_TEST(pl::round_robin::owner(4, 3) == 1u);
}

BOOST_AUTO_TEST_CASE(greedy_by_bytes_gives_each_variable_to_the_least_loaded_task) {
  // 784x256 floats go to ps:0; everything after is smaller than it, so it all goes to ps:1
  // until ps:1 passes ps:0, which never happens here.
  auto p = pl::greedy_by_bytes{}.place(mlp_variables(), 2);
  std::vector<std::size_t> owners;
  for (const auto& s : p.shards()) owners.push_back(s.ps_task);
  BOOST_TEST(owners == (std::vector<std::size_t>{0, 1, 1, 1, 1, 1}), boost::test_tools::per_element());
  auto load = p.load();
  BOOST_TEST(load[0].bytes == 784u * 256 * 4);
  BOOST_TEST(load[1].variables == 5u);
}

BOOST_AUTO_TEST_CASE(greedy_by_bytes_balances_equal_variables_evenly) {
  std::vector<pl::variable_info> v(9, {"x", {100}});
  auto load = pl::greedy_by_bytes{}.place(v, 3).load();
  for (const auto& l : load) BOOST_TEST(l.bytes == 1200u);
}

BOOST_AUTO_TEST_CASE(fixed_size_partitioning_cuts_rows_and_spreads_slices) {
  std::vector<pl::variable_info> v{{"embedding", {10, 4}}, {"bias", {4}}};
  auto p = pl::partitioned::fixed_size(3).place(v, 2);
  auto emb = p.shards_of(0);
  BOOST_TEST_REQUIRE(emb.size() == 3u);
  BOOST_TEST(emb[0].elements == 16u);  // rows 4, 3, 3
  BOOST_TEST(emb[1].elements == 12u);
  BOOST_TEST(emb[2].elements == 12u);
  BOOST_TEST(emb[0].ps_task == 0u);
  BOOST_TEST(emb[1].ps_task == 1u);
  BOOST_TEST(emb[2].ps_task == 0u);
  BOOST_TEST(p.shards_of(1).size() == 3u);  // 4 rows: cut too, continuing the deal
  BOOST_TEST(p.shards_of(1)[0].ps_task == 1u);
  check_covers_every_element(p);
}

BOOST_AUTO_TEST_CASE(min_max_partitioning_keeps_slices_above_the_minimum) {
  std::vector<pl::variable_info> v{{"big", {1000, 256}}, {"small", {10}}};
  auto part = pl::partitioned::min_max(8, 256 * 1024);  // big is 1,024,000 bytes
  BOOST_TEST(part.slices(v[0]) == 3u);
  BOOST_TEST(part.slices(v[1]) == 1u);
  auto p = part.place(v, 4);
  check_covers_every_element(p);
  for (const auto& s : p.shards_of(0)) BOOST_TEST(s.elements * 4 >= 256u * 1024);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(every_policy_covers_every_element_exactly_once, P, policies) {
  for (std::size_t ps = 1; ps <= 4; ++ps) check_covers_every_element(P{}.place(mlp_variables(), ps));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(placement_is_deterministic_and_order_sensitive, P, policies) {
  auto a = P{}.place(mlp_variables(), 3);
  auto b = P{}.place(mlp_variables(), 3);
  BOOST_TEST(a.fingerprint() == b.fingerprint());
  BOOST_TEST(a.describe() == b.describe());
  auto swapped = mlp_variables();
  std::swap(swapped[0], swapped[2]);
  auto c = P{}.place(swapped, 3);
  BOOST_TEST(a.fingerprint() != c.fingerprint());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(no_ps_task_is_a_clear_error, P, policies) {
  BOOST_CHECK_EXCEPTION(P{}.place(mlp_variables(), 0), dsgd::error, [](const dsgd::error& e) {
    return e.code() == dsgd::errc::invalid_argument &&
           std::string(e.what()).find("no ps task") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(a_placement_mismatch_names_both_placements) {
  auto mine = pl::round_robin{}.place(mlp_variables(), 2);
  auto theirs = pl::greedy_by_bytes{}.place(mlp_variables(), 2);
  BOOST_CHECK_NO_THROW(pl::verify_same_placement(mine, mine.fingerprint(), mine.describe(), "worker:1"));
  BOOST_CHECK_EXCEPTION(
      pl::verify_same_placement(mine, theirs.fingerprint(), theirs.describe(), "worker:1"),
      dsgd::error, [&](const dsgd::error& e) {
        std::string w = e.what();
        return e.code() == dsgd::errc::placement_mismatch &&
               w.find(mine.describe()) != std::string::npos &&
               w.find(theirs.describe()) != std::string::npos && w.find("worker:1") != std::string::npos;
      });
}

BOOST_AUTO_TEST_CASE(the_load_report_lists_every_ps_task) {
  auto p = pl::round_robin{}.place(mlp_variables(), 2);
  // ps:0 holds the three kernels, ps:1 the three biases.
  BOOST_TEST(p.load_report() == "ps:0 3 variables " + std::to_string((784 * 256 + 256 * 128 + 128 * 10) * 4) +
                                    " bytes\nps:1 3 variables " + std::to_string((256 + 128 + 10) * 4) + " bytes\n");
}

BOOST_AUTO_TEST_SUITE_END()
