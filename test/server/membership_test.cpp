// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for elastic membership (server/detail/membership.hpp, serving_options::min_replicas,
// sync_average::shard::elastic, bounded_staleness's depart and rejoin): a shard_table driven
// with frames in memory, as a ps's connections would, with a sink that records every reply.
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/shard_table.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/sync_average.hpp>

#include <support/shard_table_driver.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(membership_test)

namespace membership_test_detail {

using namespace std::chrono_literals;
namespace ds = dsgd::server;
namespace protocol = dsgd::protocol;
using protocol::message;
using table = ds::shard_table<dsgd::update::sync_average, dsgd::optim::sgd>;

using dsgd::test::control_of;
using dsgd::test::recording_sink;
using dsgd::test::replica_task;

// Sends @p payload as message @p type from @p p in chunks of @p chunk bytes; with @p chunks_sent,
// only that many chunks (a push cut off by a lost connection). The table must take its frames.
template <class Table>
void deliver(Table& t, recording_sink& out, ds::peer_id p, message type, std::uint64_t step,
             std::vector<std::byte> payload = {}, std::size_t chunk = std::numeric_limits<std::size_t>::max(),
             std::size_t chunks_sent = std::numeric_limits<std::size_t>::max()) {
  dsgd::test::deliver_accepted(t, out, p, {type, 0, 0, step, std::move(payload), chunk, chunks_sent});
}

std::vector<std::byte> floats(std::size_t n, float v) { return dsgd::test::bytes_of(std::vector<float>(n, v)); }

// One variable "w" of 4 floats on one ps task.
const std::vector<dsgd::placement::variable_info> model{{"w", {4}}};

std::vector<std::byte> registration(const std::string& task, std::uint32_t replica) {
  return control_of(dsgd::test::registration_of(task, replica, replica == 0, model, {{0, 0, "w", {4}, 0, 4}}));
}

// A ps of @p slots replica slots needing @p min_replicas members; its log lines in *log.
struct job {
  std::shared_ptr<std::vector<std::string>> log = std::make_shared<std::vector<std::string>>();
  // serving_options::on_membership's calls: (members, step).
  std::shared_ptr<std::vector<std::pair<std::size_t, std::uint64_t>>> counts =
      std::make_shared<std::vector<std::pair<std::size_t, std::uint64_t>>>();
  recording_sink out = {.supersede_closes = true};
  std::unique_ptr<table> t;

  job(std::size_t slots, std::size_t min_replicas) {
    table::options o;
    o.connection.log = [l = log](std::string_view s) { l->emplace_back(s); };
    o.optimizer = {1.f};
    o.serving.step_timeout = 1s;
    o.serving.min_replicas = min_replicas;
    o.serving.on_membership = [c = counts](std::size_t n, std::uint64_t step) { c->emplace_back(n, step); };
    t = std::make_unique<table>(dsgd::cluster::task_id{"ps", 0}, 1, slots, o);
  }
  // Replica @p r joins on connection r + 1 (connection 1, the chief, creates w = 0 at first).
  void join(std::uint32_t r) {
    t->connect(r + 1, replica_task(r));
    deliver(*t, out, r + 1, message::register_worker, 0, registration(replica_task(r), r));
    if (!t->find(0, 0)) deliver(*t, out, r + 1, message::init_shard, 0, floats(4, 0.f));
    for (const auto& x : out.take()) BOOST_REQUIRE(x.type() == message::reply_ok);
  }
  void push(std::uint32_t r, std::uint64_t step, float g) {
    deliver(*t, out, r + 1, message::push, step, floats(4, g));
  }
  bool logged(const std::string& part) const {
    return std::any_of(log->begin(), log->end(), [&](const auto& l) { return l.find(part) != std::string::npos; });
  }
  // The value of w (all 4 equal) as a pull at step 0 reads it, with the shard's step.
  std::pair<float, std::uint64_t> value(std::uint32_t r) {
    deliver(*t, out, r + 1, message::pull, 0);
    auto got = out.take();
    BOOST_REQUIRE_EQUAL(got.size(), 1u);
    BOOST_REQUIRE(got[0].type() == message::pull_reply);
    return {got[0].floats()[0], got[0].header.step};
  }
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace membership_test_detail

using namespace membership_test_detail;

BOOST_AUTO_TEST_CASE(a_joiner_starts_at_the_current_step_and_the_steps_then_wait_for_it) {
  job j(3, 1);
  j.join(0);
  j.join(1);
  BOOST_TEST(j.logged("ps:0: worker:0 joined; 2 workers (at least 1, at most 3)"));
  // Two members: a step closes with their two pushes (w -= lr * mean), not waiting for slot 2.
  j.push(0, 0, 1.f);
  BOOST_TEST((j.out.take().at(0).type() == message::push_accumulated));
  j.push(1, 0, 3.f);
  BOOST_TEST((j.out.take().at(0).type() == message::push_applied));
  // worker:1 joins mid-job: it pulls the current values at the current step, and its first push
  // is for that step, which now waits for it.
  j.join(2);
  BOOST_TEST(j.logged("ps:0: worker:1 joined; 3 workers"));
  auto [w, step] = j.value(2);
  BOOST_TEST(w == -2.f);
  BOOST_TEST(step == 1u);
  j.push(0, 1, 1.f);
  j.push(1, 1, 2.f);
  for (const auto& r : j.out.take()) BOOST_TEST((r.type() == message::push_accumulated));
  j.push(2, step, 6.f);
  BOOST_TEST((j.out.take().at(0).type() == message::push_applied));
  BOOST_TEST(j.value(0).first == -2.f - 3.f);  // the mean of 1, 2 and 6
  // Each change counted with the global step it happened at (no shard yet at the first).
  using change = std::pair<std::size_t, std::uint64_t>;
  BOOST_TEST((*j.counts == std::vector<change>{{1, 0}, {2, 0}, {3, 1}}));
}

BOOST_AUTO_TEST_CASE(a_leavers_half_sent_push_is_dropped_and_its_complete_push_counts) {
  job j(3, 1);
  for (std::uint32_t r = 0; r < 3; ++r) j.join(r);
  // worker:1 sends the first 8 of its push's 16 bytes, then its connection is lost: the step
  // closes over the two complete pushes, its half never added.
  j.push(0, 0, 1.f);
  deliver(*j.t, j.out, 3, message::push, 0, floats(4, 100.f), 8, 1);
  j.t->disconnect(3, true, j.out);
  BOOST_TEST(j.logged("ps:0: worker:1 left (connection lost); 2 workers"));
  j.push(1, 0, 3.f);
  auto r = j.out.take();
  BOOST_TEST((r.back().type() == message::push_applied));
  BOOST_TEST(j.value(0).first == -2.f);  // mean of 1 and 3

  // A member whose push for the open step arrived whole before it left: that push counts (it is
  // a complete gradient of that step), and the step does not wait for it any longer.
  j.push(1, 1, 4.f);
  j.t->disconnect(2, true, j.out);
  BOOST_TEST(j.logged("ps:0: worker:0 left (connection lost); 1 worker"));
  j.push(0, 1, 2.f);
  BOOST_TEST((j.out.take().back().type() == message::push_applied));
  BOOST_TEST(j.value(0).first == -2.f - 3.f);  // mean of 4 and 2
}

BOOST_AUTO_TEST_CASE(below_min_a_step_waits_until_its_deadline_naming_who_is_missing) {
  job j(3, 2);
  j.join(0);
  j.join(1);
  j.t->disconnect(2, true, j.out);  // worker:0 left: 1 member, the job needs 2
  j.push(0, 0, 1.f);
  BOOST_TEST((j.out.take().at(0).type() == message::push_accumulated));  // a member alone cannot close it
  deliver(*j.t, j.out, 1, message::pull, 1);
  BOOST_TEST(j.out.take().empty());
  BOOST_TEST(j.t->parked() == 1u);
  BOOST_TEST(!j.t->sweep(dsgd::update::clock_type::now() + 2s, j.out));
  auto r = j.out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  const auto e = r[0].error().message;
  BOOST_TEST(contains(e, "1 of at least 2 members present (the job's worker range MIN)"), e);
  BOOST_TEST(contains(e, "worker:0 (replica 1) departed"), e);

  // A second member back (a joiner in the free slot 2): the step closes with both.
  j.join(2);
  j.push(2, 0, 3.f);
  BOOST_TEST((j.out.take().at(0).type() == message::push_applied));
  BOOST_TEST(j.value(0).first == -2.f);
}

// A fixed set of workers (no worker range): a worker whose connection closes before it
// finished is logged by the ps at once, and named in the error of the step that waited for it.
BOOST_AUTO_TEST_CASE(a_departed_worker_of_a_fixed_job_is_logged_at_once_and_named_at_the_deadline) {
  job j(2, 0);
  j.join(0);
  j.join(1);
  j.push(0, 0, 1.f);
  BOOST_TEST((j.out.take().at(0).type() == message::push_accumulated));
  j.t->disconnect(2, true, j.out);  // worker:0 (replica 1), its push of step 0 not sent
  BOOST_TEST(j.logged("ps:0: worker:0 (replica 1) departed at step 0: its connection closed before it finished"));
  deliver(*j.t, j.out, 1, message::pull, 1);
  BOOST_TEST(j.out.take().empty());  // the step waits: a restarted worker:0 may still push
  BOOST_TEST(!j.t->sweep(dsgd::update::clock_type::now() + 2s, j.out));
  auto r = j.out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST(contains(r[0].error().message, "worker:0 (replica 1) departed"), r[0].error().message);
}

BOOST_AUTO_TEST_CASE(a_joiner_beyond_max_is_refused_by_name) {
  job j(2, 1);
  j.join(0);
  j.t->connect(9, "worker:2");
  deliver(*j.t, j.out, 9, message::register_worker, 0, registration("worker:2", 2));
  auto r = j.out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST(contains(r[0].error().message,
                      "worker:2 claims replica 2 of 2: the job's worker range allows at most 2 replicas"),
             r[0].error().message);
  BOOST_TEST(contains(r[0].error().message, "a joiner beyond MAX is refused"), r[0].error().message);
  // And a minimum above the slots is refused when the ps starts.
  BOOST_CHECK_EXCEPTION(job(2, 3), dsgd::error, [](const dsgd::error& e) {
    return contains(e.what(), "serving_options.min_replicas: 3 is more than the 2 worker slots");
  });
}

BOOST_AUTO_TEST_CASE(shutdown_waits_for_the_members_only) {
  job j(3, 1);
  j.join(0);
  j.join(1);  // slot 2 is never held
  deliver(*j.t, j.out, 1, message::finish, 0);
  deliver(*j.t, j.out, 1, message::shutdown, 0);
  BOOST_TEST(!j.out.shutdown);
  deliver(*j.t, j.out, 2, message::finish, 0);
  BOOST_TEST(j.out.shutdown.has_value());
  BOOST_TEST(j.logged("ps:0: worker:0 finished; 0 workers"));
}

BOOST_AUTO_TEST_CASE(without_a_minimum_every_slot_is_waited_for_as_before) {
  job j(3, 0);
  j.join(0);
  j.join(1);
  j.push(0, 0, 1.f);
  j.push(1, 0, 3.f);
  for (const auto& r : j.out.take()) BOOST_TEST((r.type() == message::push_accumulated));  // slot 2 is waited for
  BOOST_TEST(!j.logged("joined"));                                                         // nor are members logged
}

BOOST_AUTO_TEST_CASE(a_sync_shard_refuses_a_minimum_it_cannot_meet) {
  using shard = dsgd::update::sync_average::shard<dsgd::device::cpu, dsgd::optim::sgd>;
  const std::vector<float> init(2, 0.f);
  shard s(dsgd::device::cpu{}, init, dsgd::optim::sgd{0.1f}, 3);
  for (std::size_t bad : {std::size_t{0}, std::size_t{4}})
    BOOST_CHECK_EXCEPTION(s.elastic(bad), dsgd::error, [&](const dsgd::error& e) {
      return e.code() == dsgd::errc::invalid_argument &&
             contains(e.what(), "sync_average::elastic: min_members " + std::to_string(bad) +
                                    " must be from 1 to the 3 worker slots");
    });
  // Elastic with no member yet: a push is kept but closes nothing until a member is there.
  s.elastic(1);
  const std::vector<float> g(2, 1.f);
  BOOST_TEST((s.push(0, 0, g.data()) == dsgd::update::push_outcome::accumulated));
  s.rejoin(0);
  s.depart(1);  // closes it: every member present (worker 0) has pushed
  BOOST_TEST(s.step() == 1u);
}

BOOST_AUTO_TEST_CASE(the_ssp_bound_counts_only_members) {
  using shard = dsgd::update::bounded_staleness::shard<dsgd::device::cpu, dsgd::optim::sgd>;
  const std::vector<float> init(2, 0.f), g(2, 1.f);
  std::vector<float> out(2);
  shard s(dsgd::device::cpu{}, init, dsgd::optim::sgd{0.1f}, 3, 1);  // S = 1
  for (int k = 0; k < 3; ++k) s.push(0, 0, g.data());
  s.push(1, 0, g.data());
  s.push(1, 0, g.data());
  // worker 0 at clock 3 with S = 1 needs every member at clock 2: worker 2 (clock 0) holds it.
  BOOST_TEST(!s.try_pull(0, 3, out.data()));
  BOOST_TEST(contains(s.wait_reason(0, 3), "worker:2 (clock 0)"), s.wait_reason(0, 3));
  s.depart(2);  // gone: it holds nobody back
  BOOST_TEST(s.try_pull(0, 3, out.data()).has_value());
  // Back (or a joiner in its slot), it enters at the slowest member's clock.
  s.rejoin(2);
  BOOST_TEST(s.clock_of(2) == 2u);
  BOOST_TEST(s.try_pull(0, 3, out.data()).has_value());
  BOOST_TEST(s.try_pull(2, 0, out.data()).has_value());  // it pulls at its own count, at once
}

// Every task of an SSP job holds the same bound S, chosen at run time: a worker whose
// registration says another is refused, naming both; one that says the same is taken.
BOOST_AUTO_TEST_CASE(an_ssp_table_refuses_a_worker_of_another_staleness_naming_both) {
  using ssp_table = ds::shard_table<dsgd::update::bounded_staleness, dsgd::optim::sgd>;
  ssp_table::options o;
  o.connection.log = [](std::string_view) {};
  o.optimizer = {1.f};
  o.rule.staleness = 2;
  ssp_table t({"ps", 0}, 1, 1, o);
  recording_sink out;
  auto r = dsgd::test::registration_of("chief:0", 0, true, model, {{0, 0, "w", {4}, 0, 4}});
  r.rule = dsgd::update::describe_rule(dsgd::update::bounded_staleness{.staleness = 3});
  t.connect(1, "chief:0");
  dsgd::test::deliver(t, out, 1, {message::register_worker, 0, 0, 0, control_of(r)});
  auto replies = out.take();
  BOOST_REQUIRE_EQUAL(replies.size(), 1u);
  BOOST_REQUIRE((replies[0].type() == message::reply_error));
  const auto e = replies[0].error();
  BOOST_TEST(e.code == int(dsgd::errc::invalid_argument));
  BOOST_TEST(contains(e.message,
                      "update rule mismatch: chief:0 trains with bounded_staleness(3) but ps:0 applies "
                      "bounded_staleness(2)"),
             e.message);
  r.rule = "bounded_staleness(2)";
  dsgd::test::deliver(t, out, 1, {message::register_worker, 0, 0, 0, control_of(r)});
  replies = out.take();
  BOOST_REQUIRE_EQUAL(replies.size(), 1u);
  BOOST_TEST((replies[0].type() == message::reply_ok));
}

BOOST_AUTO_TEST_CASE(an_elastic_ssp_table_holds_back_only_for_members) {
  using ssp_table = ds::shard_table<dsgd::update::bounded_staleness, dsgd::optim::sgd>;
  ssp_table::options o;
  o.rule.staleness = 0;
  o.connection.log = [](std::string_view) {};
  o.optimizer = {1.f};
  o.serving.min_replicas = 1;
  ssp_table t({"ps", 0}, 1, 3, o);
  recording_sink out = {.supersede_closes = true};
  t.connect(1, "chief:0");
  deliver(t, out, 1, message::register_worker, 0, registration("chief:0", 0));
  deliver(t, out, 1, message::init_shard, 0, floats(4, 0.f));
  deliver(t, out, 1, message::push, 0, floats(4, 1.f));
  out.take();
  // Lockstep (S = 0) with one member: its pull at clock 1 is answered; slots 1 and 2, never
  // held, hold nothing back.
  deliver(t, out, 1, message::pull, 1);
  auto r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST((r[0].type() == message::pull_reply));
}

BOOST_AUTO_TEST_SUITE_END()
