// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/client/operations.hpp>: a pull and a push in flight are two move-only
// types, each with only its own state (their requests on a cluster: ps_test, overlap_test).
// Also the client's sparse routing, <dsgd/client/detail/routing.hpp>.
#include <dsgd/client/detail/routing.hpp>
#include <dsgd/client/operations.hpp>
#include <dsgd/placement/partitioned.hpp>

#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

BOOST_AUTO_TEST_SUITE(client_operations_test)

namespace client = dsgd::client;

static_assert(!std::is_copy_constructible_v<client::pull_operation>);
static_assert(!std::is_copy_constructible_v<client::push_operation>);
static_assert(std::is_nothrow_move_constructible_v<client::pull_operation>);
static_assert(std::is_nothrow_move_assignable_v<client::push_operation>);
static_assert(!std::is_convertible_v<client::pull_operation, client::push_operation>);
static_assert(!std::is_convertible_v<client::push_operation, client::pull_operation>);

BOOST_AUTO_TEST_SUITE(client_operations)

BOOST_AUTO_TEST_CASE(default_operations_have_nothing_pending) {
  client::pull_operation pull;
  client::push_operation push;
  BOOST_TEST(!pull.pending());
  BOOST_TEST(!push.pending());
  BOOST_TEST(!push.sent(0));
  push = {};  // a finished push is reset this way (trainer::overlap)
  pull = client::pull_operation{};
  BOOST_TEST(!push.pending());
}

// Rows 0-4 on shard 0, 5-9 on shard 1 (two shards of a [10, 2] embedding).
BOOST_AUTO_TEST_CASE(keys_are_routed_by_shard_sent_in_place_when_one_run_and_staged_otherwise) {
  auto plan = dsgd::placement::partitioned::fixed_size(2).place({{"emb", {10, 2}}}, 2);
  BOOST_REQUIRE(plan.shards().size() == 2u);
  const std::vector<std::uint64_t> keys{1, 2, 7, 3, 42};  // 42 is past the end: last shard's
  std::vector<float> rows(keys.size() * 2);
  auto groups = client::detail::route(plan, 0, keys, rows.size(), "pull_rows");
  BOOST_REQUIRE(groups.size() == 2u);
  BOOST_TEST((groups[0].at == std::vector<std::size_t>{0, 1, 3}));
  BOOST_TEST((groups[1].at == std::vector<std::size_t>{2, 4}));
  BOOST_TEST(!groups[0].direct());
  BOOST_TEST(!groups[1].direct());

  // Staged: the keys are gathered, the rows received apart and scattered to their keys' rows.
  auto kb = client::detail::key_buffer(groups[0], keys);
  BOOST_TEST(kb.size() == 3 * sizeof(std::uint64_t));
  BOOST_TEST(kb.data() != static_cast<const void*>(keys.data()));
  auto into = client::detail::rows_destination(groups[0], rows, 2);
  BOOST_TEST(into.size() == 3 * 2 * sizeof(float));
  BOOST_TEST(into.data() == static_cast<void*>(groups[0].rows.data()));
  (void)client::detail::rows_destination(groups[1], rows, 2);
  groups[0].rows = {10, 11, 20, 21, 30, 31};
  groups[1].rows = {70, 71, 0, 0};
  client::detail::scatter_rows(groups, rows, 2);
  BOOST_TEST(rows[0] == 10.f);
  BOOST_TEST(rows[3] == 21.f);
  BOOST_TEST(rows[6] == 30.f);  // key 3 is the fourth key
  BOOST_TEST(rows[4] == 70.f);  // key 7, the third, from the other shard

  // One run: sent from, and received into, the caller's buffers.
  const std::vector<std::uint64_t> run{5, 6, 9};
  std::vector<float> grads(run.size() * 2, 1.f);
  auto direct = client::detail::route(plan, 0, run, grads.size(), "push_rows");
  BOOST_TEST(direct[0].at.empty());
  BOOST_TEST(direct[1].direct());
  BOOST_TEST(client::detail::key_buffer(direct[1], run).data() == static_cast<const void*>(run.data()));
  BOOST_TEST(client::detail::rows_source(direct[1], grads, 2).data() == static_cast<const void*>(grads.data()));
  BOOST_TEST(client::detail::rows_source(direct[0], grads, 2).size() == 0u);

  BOOST_CHECK_EXCEPTION(client::detail::route(plan, 0, keys, 3, "pull_rows"), dsgd::error,
                        [](const dsgd::error& e) { return e.code() == dsgd::errc::shape_mismatch; });
  BOOST_CHECK_EXCEPTION(client::detail::route(plan, 1, keys, rows.size(), "pull_rows"), dsgd::error,
                        [](const dsgd::error& e) { return e.code() == dsgd::errc::invalid_argument; });
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
