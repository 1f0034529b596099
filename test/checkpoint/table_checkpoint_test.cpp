// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for the embedding tables in the ps tasks' checkpoints (save and restore requests,
// <dsgd/checkpoint/table_file.hpp>): ps tasks and a chief as threads of this process over
// transport::inproc. A full checkpoint restores bit for bit and training continues as without it;
// it restores onto 3 and onto 1 ps tasks (keys re-routed); base + deltas equal a full checkpoint
// of the same moment bit for bit, also restored onto another ps count; a delta never committed
// loses nothing, neither on restore nor for the next delta; damaged files are named errors; an
// export equals read_table of every key.
#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/checkpoint/table_export.hpp>
#include <dsgd/checkpoint/table_file.hpp>
#include <dsgd/client/ps_client.hpp>
#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/parameter_server.hpp>
#include <dsgd/update/async.hpp>

#include <support/error_checks.hpp>
#include <support/inproc_cluster.hpp>
#include <support/temp_dir.hpp>
#include <support/worker_loops.hpp>

#include <boost/test/unit_test.hpp>

#include <bit>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

BOOST_AUTO_TEST_SUITE(table_checkpoint_test)

using namespace std::chrono_literals;
namespace fs = std::filesystem;
namespace ck = dsgd::checkpoint;
namespace emb = dsgd::embedding;
namespace client = dsgd::client;
using inproc = dsgd::transport::inproc;
using client_type = client::basic_ps_client<inproc>;
using dsgd::test::contains;
using dsgd::test::throws_named;

namespace {

constexpr std::size_t dim = 4;
constexpr std::uint64_t universe = 150;  // keys 0 .. universe - 1, times a large odd number

struct temp_dir : dsgd::test::temp_dir {
  temp_dir() : dsgd::test::temp_dir("dsgd_table_checkpoint_test_") {}
};

// Async, lazy Adam (its t is the shard's update count), a cap per ps task with least-frequent
// eviction (rows' stats decide what goes; evicted keys leave tombstones).
emb::table_spec capped_async() {
  return {.name = "ids",
          .dim = dim,
          .rule = emb::table_rule::async(),
          .optimizer = emb::row_optimizer_spec::lazy_adam(0.05f),
          .initializer = emb::initializer_spec::uniform(-0.1f, 0.1f, 7),
          .eviction = emb::eviction_spec::least_frequent(),
          .max_rows = 30,
          .evict_fraction = 0.2};
}

// Sync, Adagrad, no cap: restores onto any number of ps tasks without evicting.
emb::table_spec uncapped_sync() {
  return {.name = "ids",
          .dim = dim,
          .rule = emb::table_rule::sync(),
          .optimizer = emb::row_optimizer_spec::adagrad(0.3f, 0.1f),
          .initializer = emb::initializer_spec::uniform(-0.1f, 0.1f, 11)};
}

client::client_options client_opts() {
  client::client_options o;
  o.connection.token = "secret";
  o.requests.startup_timeout = 10s;
  o.requests.request_timeout = 30s;
  return o;
}

using ps_type = dsgd::server::parameter_server<dsgd::update::async, dsgd::optim::sgd, dsgd::device::cpu, inproc>;

// A cluster of @p ps_tasks ps tasks and one worker, the chief, over its own inproc hub; a dense
// variable "b" besides table 0. Either initialised afresh or restored from a checkpoint.
struct cluster {
  dsgd::test::test_net<inproc> net;
  dsgd::cluster::cluster_spec spec;
  std::vector<std::unique_ptr<ps_type>> ps;
  std::vector<std::thread> threads;
  dsgd::placement::plan plan;
  std::unique_ptr<client_type> chief;

  cluster(std::size_t ps_tasks, const emb::table_spec& table, const fs::path& from = {}, std::uint64_t step = 0)
      : spec(net.spec(ps_tasks, 1)), plan(dsgd::placement::round_robin{}.place({{"b", {1}}}, ps_tasks)) {
    for (std::size_t i = 0; i < ps_tasks; ++i) {
      ps_type::options o;
      o.connection.token = "secret";
      o.optimizer = dsgd::optim::sgd{0.1f};
      o.serving.step_timeout = 20s;
      o.connection.log = [](std::string_view) {};
      ps.push_back(std::make_unique<ps_type>(spec, int(i), o, dsgd::device::cpu{}, net.transport()));
    }
    for (auto& p : ps) threads.emplace_back([&p] { p->join(); });
    chief = std::make_unique<client_type>(spec, dsgd::cluster::task_id{"worker", 0}, client_opts(), net.transport());
    if (from.empty()) {
      dsgd::test::join_cluster(*chief, plan, 0, {{0.f}});
    } else {
      chief->connect();
      chief->register_worker(plan, 0, true);
      chief->restore(from, step);
      chief->wait_ready();
    }
    chief->create_table(0, table);  // after a restore: the same spec, nothing new
  }
  ~cluster() {
    chief.reset();
    for (auto& p : ps) p->stop();
    for (auto& t : threads) t.join();
  }

  // Full (or incremental, of @p delta_of) checkpoint @p step in @p dir, committed (or not).
  void save(const fs::path& dir, std::uint64_t step, std::optional<std::uint64_t> delta_of = {}, bool commit = true) {
    if (delta_of) chief->save_incremental(dir, step, *delta_of);
    else chief->save(dir, step);
    if (commit) ck::saver(dir, 0).commit(step, plan);
  }
};

std::uint64_t key_of(std::uint64_t i) { return i * 2'654'435'761u; }

std::vector<std::uint64_t> all_keys() {
  std::vector<std::uint64_t> k;
  for (std::uint64_t i = 0; i < universe; ++i) k.push_back(key_of(i));
  return k;
}

// Steps [from, to) of the worker: 12 distinct keys a step (some keys much more frequent than
// others), pulled, and a gradient that depends on the rows pulled and the step, pushed.
// @returns what each pull returned (the table's step or update count), summed.
std::uint64_t train(client_type& c, std::uint64_t from, std::uint64_t to) {
  std::uint64_t at = 0;
  for (std::uint64_t s = from; s < to; ++s) {
    std::mt19937_64 rng(s * 7 + 1);
    std::set<std::uint64_t> picked;
    while (picked.size() < 12) picked.insert(key_of((rng() % universe) * (rng() % universe) / universe));
    std::vector<std::uint64_t> keys(picked.begin(), picked.end());
    std::vector<float> rows(keys.size() * dim), grads(keys.size() * dim);
    at += c.pull_table(0, dim, keys, rows, s);
    for (std::size_t i = 0; i < rows.size(); ++i)
      grads[i] = 0.5f * rows[i] + 0.01f * static_cast<float>((s + i) % 7) - 0.02f;
    c.push_table(0, dim, keys, grads, s);
  }
  return at;
}

std::vector<float> read_all(client_type& c) {
  const auto keys = all_keys();
  std::vector<float> rows(keys.size() * dim);
  c.read_table(0, dim, keys, rows);
  return rows;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return false;
  return true;
}

// Checks that two checkpoints' tables are the same bit for bit: specs, keys, stats, values
// (weights and optimizer state) and, with @p counters, every ps task's counters.
void check_same_tables(const std::vector<ck::merged_table>& a, const std::vector<ck::merged_table>& b,
                       bool counters = true) {
  BOOST_TEST_REQUIRE(a.size() == b.size());
  for (std::size_t t = 0; t < a.size(); ++t) {
    BOOST_TEST(a[t].id == b[t].id);
    BOOST_TEST((a[t].spec == b[t].spec));
    BOOST_TEST(a[t].keys == b[t].keys, boost::test_tools::per_element());
    BOOST_TEST(same_bits(a[t].values, b[t].values));
    BOOST_TEST_REQUIRE(a[t].stats.size() == b[t].stats.size());
    for (std::size_t i = 0; i < a[t].stats.size(); ++i) {
      BOOST_TEST(a[t].stats[i].last_step == b[t].stats[i].last_step);
      BOOST_TEST(a[t].stats[i].uses == b[t].stats[i].uses);
    }
    if (counters) BOOST_TEST((a[t].counters == b[t].counters));
  }
}

}  // namespace

// A full checkpoint at step 10 restored onto a fresh cluster of the same size: training steps
// 10..20 give the same rows, optimizer state, stats and counters bit for bit as the cluster
// that was never restored (lazy Adam's t continues; the cap evicts the same keys).
BOOST_AUTO_TEST_CASE(a_full_checkpoint_restores_bit_for_bit_and_training_continues_identically) {
  temp_dir dir;
  const auto saved = dir.path / "saved", a20 = dir.path / "a20", b20 = dir.path / "b20";
  std::vector<float> rows_a, rows_b;
  std::uint64_t at_a = 0, at_b = 0;
  {
    cluster a(2, capped_async());
    train(*a.chief, 0, 10);
    a.save(saved, 10);
    at_a = train(*a.chief, 10, 20);
    rows_a = read_all(*a.chief);
    a.save(a20, 20);
  }
  const auto at10 = ck::read_tables(saved, 10);
  BOOST_TEST_REQUIRE(at10.size() == 1u);
  BOOST_TEST(at10[0].rows() > 30u);  // more than one ps task's cap: both hold rows
  BOOST_TEST(at10[0].counters_for(0, 2).updates > 0u);
  {
    cluster b(2, capped_async(), saved, 10);
    at_b = train(*b.chief, 10, 20);
    rows_b = read_all(*b.chief);
    b.save(b20, 20);
  }
  BOOST_TEST(at_a == at_b);
  BOOST_TEST(same_bits(rows_a, rows_b));
  check_same_tables(ck::read_tables(a20, 20), ck::read_tables(b20, 20));
}

// A checkpoint of 2 ps tasks restores onto 3 and onto 1: every key reads the same row, the
// tables' state and stats are those saved, the sync step continues on every task, and 5 more
// steps give the same rows as the 2 ps tasks do.
BOOST_AUTO_TEST_CASE(a_checkpoint_of_two_ps_tasks_restores_onto_three_and_onto_one) {
  temp_dir dir;
  const auto saved = dir.path / "saved";
  std::vector<float> at10, at15;
  {
    cluster a(2, uncapped_sync());
    train(*a.chief, 0, 10);
    a.save(saved, 10);
    at10 = read_all(*a.chief);
    train(*a.chief, 10, 15);
    at15 = read_all(*a.chief);
  }
  const auto original = ck::read_tables(saved, 10);
  for (std::size_t n : {3u, 1u}) {
    BOOST_TEST_CONTEXT("onto " << n << " ps tasks") {
      cluster b(n, uncapped_sync(), saved, 10);
      BOOST_TEST(same_bits(read_all(*b.chief), at10));
      const auto again = dir.path / ("onto" + std::to_string(n));
      b.save(again, 10);
      const auto restored = ck::read_tables(again, 10);
      check_same_tables(restored, original, /*counters=*/false);
      BOOST_TEST(restored.at(0).counters.size() == n);
      for (const auto& c : restored.at(0).counters) BOOST_TEST(c.step == 10u);
      std::vector<float> none;
      BOOST_TEST(b.chief->pull_table(0, dim, {}, none, 10) == 10u);  // the step, at once
      train(*b.chief, 10, 15);
      BOOST_TEST(same_bits(read_all(*b.chief), at15));
    }
  }
}

// A full base at 5, deltas at 10 and 15 (rows changed, keys evicted: tombstones), and a full
// checkpoint at 15 in another directory: base + deltas read as the full one bit for bit; both
// restore onto 3 ps tasks to the same tables, and train on identically; the export of the
// incremental checkpoint equals read_table of every key.
BOOST_AUTO_TEST_CASE(base_and_deltas_equal_a_full_checkpoint_bit_for_bit_also_onto_another_ps_count) {
  temp_dir dir;
  const auto inc = dir.path / "inc", full = dir.path / "full";
  std::vector<float> rows15;
  {
    cluster a(2, capped_async());
    train(*a.chief, 0, 5);
    a.save(inc, 5);
    train(*a.chief, 5, 10);
    a.save(inc, 10, 5);
    train(*a.chief, 10, 15);
    a.save(inc, 15, 10);
    a.save(full, 15);
    rows15 = read_all(*a.chief);
  }
  // The deltas hold fewer rows than the tables and some tombstones.
  const auto chain = ck::table_chain(inc, 15);
  BOOST_TEST_REQUIRE(chain.size() == 3u);
  std::size_t delta_rows = 0, tombstones = 0;
  for (std::size_t i = 0; i < 2; ++i) {
    auto f = ck::read_table_file(inc, chain[2], chain[2].files[i], i, 2);
    delta_rows += f.tables.at(0).rows();
    tombstones += f.tables.at(0).tombstones.size();
  }
  const auto whole = ck::read_tables(full, 15);
  BOOST_TEST(delta_rows < whole.at(0).rows());
  BOOST_TEST(tombstones > 0u);
  check_same_tables(ck::read_tables(inc, 15), whole);

  // Export: every key's weights as read_table gives them; the keys without a row are absent.
  ck::write_export(ck::read_tables(inc, 15).at(0), 15, dir.path / "ids.emb", ck::export_format::binary);
  const auto e = ck::read_export(dir.path / "ids.emb");
  BOOST_TEST(e.keys.size() == whole.at(0).rows());
  const auto keys = all_keys();
  std::size_t exported = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto it = std::lower_bound(e.keys.begin(), e.keys.end(), keys[i]);
    if (it == e.keys.end() || *it != keys[i]) continue;
    ++exported;
    const auto r = static_cast<std::size_t>(it - e.keys.begin());
    BOOST_TEST(same_bits(std::span(e.weights).subspan(r * dim, dim), std::span(rows15).subspan(i * dim, dim)),
               "key " << keys[i]);
  }
  BOOST_TEST(exported == e.keys.size());

  std::vector<float> from_inc, from_full;
  {
    cluster b(3, capped_async(), inc, 15);
    BOOST_TEST(same_bits(read_all(*b.chief), rows15));
    b.save(dir.path / "b", 15);
    train(*b.chief, 15, 20);
    from_inc = read_all(*b.chief);
  }
  {
    cluster c(3, capped_async(), full, 15);
    c.save(dir.path / "c", 15);
    train(*c.chief, 15, 20);
    from_full = read_all(*c.chief);
  }
  check_same_tables(ck::read_tables(dir.path / "b", 15), ck::read_tables(dir.path / "c", 15));
  BOOST_TEST(same_bits(from_inc, from_full));
}

// A delta written by the ps tasks but never committed (the chief gone before the manifest's
// rename; a half-written manifest temporary and table file beside it): the checkpoint before it
// restores whole onto a fresh cluster; and the next delta of that checkpoint holds the rows the
// lost delta had taken, so it still equals a full checkpoint of its moment.
BOOST_AUTO_TEST_CASE(a_delta_never_committed_loses_nothing_committed) {
  temp_dir dir;
  const auto inc = dir.path / "inc", full = dir.path / "full";
  std::vector<float> rows8;
  {
    cluster a(2, capped_async());
    train(*a.chief, 0, 5);
    a.save(inc, 5);
    train(*a.chief, 5, 8);
    a.save(inc, 8, 5);
    rows8 = read_all(*a.chief);
    train(*a.chief, 8, 11);
    a.save(inc, 11, 8, /*commit=*/false);
    {
      const auto half = dsgd::test::slurp(inc / "ckpt-11.tables.ps-1-of-2");
      std::ofstream(inc / "ckpt-11.tables.ps-1-of-2", std::ios::binary | std::ios::trunc)
          << half.substr(0, half.size() / 3);
      std::ofstream(inc / "ckpt-11.manifest.tmp.777", std::ios::binary) << "dsgd checkpoint manifest\nversion 3\n";
    }
    BOOST_TEST((ck::saver(inc, 0).latest() == std::optional<std::uint64_t>(8)));
    {
      cluster b(2, capped_async(), inc, 8);
      BOOST_TEST(same_bits(read_all(*b.chief), rows8));
    }
    // A delta of a checkpoint the ps tasks did not write is refused, naming it.
    BOOST_TEST(throws_named([&] { a.chief->save_incremental(inc, 14, 6); }, dsgd::errc::invalid_argument,
                            {"ps:", "checkpoint 14", "delta of checkpoint 6", "save a full checkpoint"}));
    train(*a.chief, 11, 14);
    a.save(inc, 14, 8);
    a.save(full, 14);
  }
  check_same_tables(ck::read_tables(inc, 14), ck::read_tables(full, 14));
  BOOST_TEST(!fs::exists(inc / "ckpt-11.manifest.tmp.777"));  // the commit of 14 cleared the debris
}

// Damaged table files are named errors of the chief's restore, and nothing is restored.
BOOST_AUTO_TEST_CASE(a_damaged_table_file_is_a_named_error_of_the_restore) {
  temp_dir dir;
  const auto saved = dir.path / "saved";
  {
    cluster a(2, capped_async());
    train(*a.chief, 0, 4);
    a.save(saved, 4);
    train(*a.chief, 4, 6);
    a.save(saved, 6, 4);
  }
  auto bytes = dsgd::test::slurp(saved / "ckpt-4.tables.ps-1-of-2");
  bytes[bytes.size() / 2] ^= 0x10;
  std::ofstream(saved / "ckpt-4.tables.ps-1-of-2", std::ios::binary | std::ios::trunc) << bytes;
  cluster b(2, capped_async());
  BOOST_TEST(throws_named([&] { b.chief->restore(saved, 6); }, dsgd::errc::checkpoint_corrupt,
                          {"ckpt-4.tables.ps-1-of-2", "checksum"}));
  fs::remove(saved / "ckpt-4.manifest");
  BOOST_TEST(throws_named([&] { b.chief->restore(saved, 6); }, dsgd::errc::checkpoint_corrupt,
                          {"ckpt-6.manifest", "delta of checkpoint 4", "no manifest"}));
}

BOOST_AUTO_TEST_SUITE_END()
