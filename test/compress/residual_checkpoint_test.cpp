// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The error-feedback residual in a checkpoint: a worker's residuals (top_k, two_bit) written
// as its file of a checkpoint step and read back by a fresh encoder are bit-identical, and the
// next push of the restored worker is byte for byte the one the uninterrupted worker sends; a
// damaged file, or one of another selection, is a named checkpoint_corrupt error, and a step
// the worker wrote nothing for, or a file of another placement, leaves the residuals alone.
#include <dsgd/client/detail/push_encoder.hpp>
#include <dsgd/client/detail/residual_file.hpp>
#include <dsgd/client/ps_client.hpp>
#include <dsgd/compress/selection.hpp>
#include <dsgd/placement/partitioned.hpp>
#include <dsgd/placement/round_robin.hpp>

#include <support/temp_dir.hpp>

#include <boost/test/unit_test.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <vector>

BOOST_AUTO_TEST_SUITE(residual_checkpoint_test)

namespace client = dsgd::client;
namespace c = dsgd::compress;

namespace {

// w [64, 8] in two shards on 2 ps tasks' plan, b [8]: top_k for w, two_bit for b.
const std::vector<dsgd::placement::variable_info> model{{"w", {64, 8}}, {"b", {8}}};
const c::selection chosen{.all = c::two_bit{0.05f}, .variables = {{"w", c::top_k{0.05f}}}};

struct temp_dir : dsgd::test::temp_dir {
  temp_dir() : dsgd::test::temp_dir("dsgd_residual_") {}
};

// The bytes of every request the encoder makes for one push of @p grads (per variable).
std::vector<std::vector<std::byte>> push(client::detail::push_encoder& e, const dsgd::placement::plan& plan,
                                         const std::vector<std::vector<float>>& grads, std::uint64_t step) {
  std::vector<std::vector<std::byte>> out;
  for (std::size_t i = 0; i < plan.shards().size(); ++i) {
    const auto& sh = plan.shards()[i];
    auto r = e.push(i, sh.ps_task, sh.variable, 0, step, std::span(grads[sh.variable]).subspan(sh.offset, sh.elements));
    const auto* p = static_cast<const std::byte*>(r.payload.data());
    out.emplace_back(p, p + r.payload.size());
  }
  return out;
}

std::vector<std::vector<float>> gradients(std::mt19937& rng) {
  std::normal_distribution<float> d(0.f, 0.1f);
  std::vector<std::vector<float>> g{std::vector<float>(512), std::vector<float>(8)};
  for (auto& v : g)
    for (auto& x : v) x = d(rng);
  return g;
}

// Has @p e track @p plan, push seed @p seed's gradients once and write its residuals as
// worker:0's file of checkpoint step 1 in @p dir. @returns that file.
std::filesystem::path write_one_push(client::detail::push_encoder& e, const dsgd::placement::plan& plan,
                                     const temp_dir& dir, unsigned seed) {
  std::mt19937 rng(seed);
  e.track(plan, chosen);
  push(e, plan, gradients(rng), 0);
  const auto path = client::detail::residual_path(dir.path, 1, "worker:0");
  client::detail::write_residuals(path, e.save());
  return path;
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_restored_residual_is_bit_identical_and_the_next_push_is_the_same) {
  const auto plan = dsgd::placement::round_robin{}.place(model, 2);
  temp_dir dir;
  std::mt19937 rng(7);
  client::detail::push_encoder running;
  running.track(plan, chosen);
  for (std::uint64_t step = 0; step < 5; ++step) push(running, plan, gradients(rng), step);
  const auto path = client::detail::residual_path(dir.path, 5, "worker:1");
  BOOST_TEST(path.filename().string() == "ckpt-5.worker-1.residual");
  client::detail::write_residuals(path, running.save());

  // A fresh worker (a restarted process has nothing but the file) takes the residuals back.
  client::detail::push_encoder restarted;
  restarted.track(plan, chosen);
  restarted.restore(client::detail::read_residuals(path, 520), plan, path.filename().string());
  bool some_nonzero = false;
  for (std::size_t i = 0; i < plan.shards().size(); ++i) {
    BOOST_TEST(same_bits(restarted.residual(i), running.residual(i)), "shard " << i);
    for (float x : running.residual(i)) some_nonzero = some_nonzero || x != 0.f;
  }
  BOOST_TEST(some_nonzero);  // top_k and two_bit left gradient mass unsent: there was something to keep

  // The next push, and the one after, are byte for byte what the uninterrupted worker sends.
  client::detail::push_encoder zero;  // what a restart without the residual would send
  zero.track(plan, chosen);
  for (std::uint64_t step = 5; step < 7; ++step) {
    const auto g = gradients(rng);
    const auto a = push(running, plan, g, step), b = push(restarted, plan, g, step), z = push(zero, plan, g, step);
    BOOST_TEST(a == b, "step " << step);
    if (step == 5) BOOST_TEST(a != z);  // the residual matters
  }
}

BOOST_AUTO_TEST_CASE(damaged_or_foreign_residual_files_are_named_errors) {
  const auto plan = dsgd::placement::round_robin{}.place(model, 2);
  temp_dir dir;
  client::detail::push_encoder e;
  const auto path = write_one_push(e, plan, dir, 3);
  // A flipped byte: the checksum names the file.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  }
  try {
    client::detail::read_residuals(path, 520);
    BOOST_FAIL("a damaged residual file was read");
  } catch (const dsgd::error& err) {
    BOOST_TEST((err.code() == dsgd::errc::checkpoint_corrupt));
    BOOST_TEST(std::string(err.what()) == "ckpt-1.worker-0.residual: checksum mismatch");
  }
  // Another selection (w as two_bit): the shard and both codecs are named.
  client::detail::write_residuals(path, e.save());
  client::detail::push_encoder other;
  other.track(plan, {.all = c::two_bit{0.05f}});
  try {
    other.restore(client::detail::read_residuals(path, 520), plan, "ckpt-1.worker-0.residual");
    BOOST_FAIL("a residual of another codec was restored");
  } catch (const dsgd::error& err) {
    BOOST_TEST((err.code() == dsgd::errc::checkpoint_corrupt));
    BOOST_TEST(
        std::string(err.what()).find("w shard at 0 was pushed as top_k(0.05), this worker pushes two_bit(0.05)") !=
            std::string::npos,
        err.what());
  }
  // More floats than the plan has are refused before they are read.
  BOOST_CHECK_THROW(client::detail::read_residuals(path, 100), dsgd::error);
}

// A job restored onto another number of ps tasks may cut its variables into other shards: a
// residual belongs to its shard, so the file is not taken (the session logs it) rather than
// failing the restore the checkpoint itself allows.
BOOST_AUTO_TEST_CASE(a_residual_file_of_another_placement_is_left_alone) {
  const auto plan = dsgd::placement::round_robin{}.place(model, 2);
  temp_dir dir;
  client::detail::push_encoder e;
  const auto path = write_one_push(e, plan, dir, 5);
  const auto other = dsgd::placement::partitioned::fixed_size(4).place(model, 2);
  BOOST_REQUIRE(other.shards().size() != plan.shards().size());
  client::detail::push_encoder restarted;
  restarted.track(other, chosen);
  BOOST_TEST(!restarted.restore_file(other, path));
  for (std::size_t i = 0; i < other.shards().size(); ++i) BOOST_TEST(restarted.residual(i).empty());
  // The same placement takes it.
  client::detail::push_encoder same;
  same.track(plan, chosen);
  BOOST_TEST(same.restore_file(plan, path));
}

BOOST_AUTO_TEST_CASE(a_client_saves_and_restores_its_residuals_by_task_and_step) {
  const auto plan = dsgd::placement::round_robin{}.place(model, 2);
  temp_dir dir;
  const auto spec = dsgd::cluster::cluster_spec({{"ps", {"127.0.0.1:1", "127.0.0.1:2"}}, {"worker", {"127.0.0.1:3"}}});
  client::client_options o;
  o.connection.log = [](std::string_view) {};
  o.compression = chosen;
  client::ps_client a(spec, {"worker", 0}, o);
  BOOST_TEST(a.residuals(plan).save(dir.path, 12));
  BOOST_TEST(std::filesystem::exists(dir.path / "ckpt-12.worker-0.residual"));
  client::ps_client b(spec, {"worker", 0}, o);
  BOOST_TEST(b.residuals(plan).restore(dir.path, 12));
  BOOST_TEST(!b.residuals(plan).restore(dir.path, 13));  // nothing written for step 13
  // Without a codec that keeps a residual there is no worker state, and no file.
  o.compression = {.all = c::bf16{}};
  client::ps_client plain(spec, {"worker", 0}, o);
  BOOST_TEST(!plain.residuals(plan).kept());
  BOOST_TEST(!plain.residuals(plan).save(dir.path, 14));
  BOOST_TEST(!std::filesystem::exists(dir.path / "ckpt-14.worker-0.residual"));
}

BOOST_AUTO_TEST_SUITE_END()
