// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Compressed pushes through a ps's shard_table, from frames built in memory: the codecs agreed
// at registration (a mismatch is a named error), a sync step's mean of two compressed pushes
// decoded into the accumulator, an async push decoded and applied, and malformed payloads
// refused as bad_frame naming the variable, with nothing applied or counted.
#include <dsgd/client/detail/push_encoder.hpp>
#include <dsgd/compress/selection.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/shard_table.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>

#include <support/shard_table_driver.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(compressed_push_test)

using namespace std::chrono_literals;
namespace client = dsgd::client;
namespace protocol = dsgd::protocol;
namespace c = dsgd::compress;
using protocol::message;
using namespace dsgd::test;

namespace {

// The values shard (@p v, 0) of @p t holds (shard_table lends its shards as const).
template <class Table>
std::vector<float> values_of(const Table& t, std::uint32_t v) {
  return const_cast<typename Table::shard_type*>(t.find(v, 0))->save().values;
}

// w [4, 3] (top_k, 5 of 12) and b [3] (bf16) on one ps task.
const std::vector<float> w0{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
const std::vector<float> b0{1, 1, 1};
const c::selection chosen{.all = c::bf16{}, .variables = {{"w", c::top_k{0.4f}}}};

protocol::register_request registration(const std::string& task, std::uint32_t replica, const c::selection& s) {
  auto r = w_and_b_registration(task, replica, replica == 0);
  r.compression = client::detail::describe_codecs(s, r.layouts);
  return r;
}

template <class Table>
Table registered(recording_sink& out, std::uint32_t replicas, const c::selection& s = chosen) {
  auto o = quiet_options<Table>();
  o.compression = chosen;
  auto t = registered_table<Table>(out, replicas, o,
                                   [&](const std::string& task, std::uint32_t r) { return registration(task, r, s); });
  init_shards(t, out, {w0, b0});
  return t;
}

// The payload of @p g under @p codec with residual @p r, and what it decodes to.
std::pair<std::vector<std::byte>, std::vector<float>> encode(const c::codec& codec, const std::vector<float>& g,
                                                             std::vector<float>& r) {
  std::vector<std::uint32_t> buf((codec.max_bytes(g.size()) + 3) / 4);
  const auto n = codec.encode(g, r, std::as_writable_bytes(std::span(buf)));
  std::vector<std::byte> payload(n);
  std::memcpy(payload.data(), buf.data(), n);
  std::vector<float> decoded(g.size(), 0.f);
  codec.decode_add(payload, decoded.data(), g.size());
  return {payload, decoded};
}

// An async table with one replica registered and its shards made, and that replica's top_k(0.4)
// push of g: its payload p, what p decodes to (d) and the residual it leaves (r).
struct async_top_k_push {
  recording_sink out;
  async_table t = registered<async_table>(out, 1);
  const std::vector<float> g{1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12};
  std::vector<float> r = std::vector<float>(12, 0.f);
  std::vector<std::byte> p;
  std::vector<float> d;

  async_top_k_push() {
    out.take();
    std::tie(p, d) = encode(c::top_k{0.4f}, g, r);
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(registration_agrees_on_the_codecs_or_names_the_mismatch) {
  recording_sink out;
  auto t = registered<sync_table>(out, 1);
  for (const auto& s : out.take()) BOOST_TEST((s.type() == message::reply_ok));
  // A worker that would push w as fp16.
  sync_table t2({"ps", 0}, 1, 2, [] {
    sync_table::options o;
    o.connection.log = [](std::string_view) {};
    o.compression = chosen;
    return o;
  }());
  join(t2, out, 1, registration("chief:0", 0, {.all = c::bf16{}, .variables = {{"w", c::fp16{}}}}));
  auto r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_REQUIRE((r[0].type() == message::reply_error));
  const auto e = r[0].error();
  BOOST_TEST(e.code == int(dsgd::errc::invalid_argument));
  BOOST_TEST(
      contains(e.message, "compression mismatch: chief:0 pushes w [4, 3] as fp16 but ps:0 decodes it as top_k(0.4)"),
      e.message);
  // A worker of a version without compression (no codecs sent) is taken as "none" throughout.
  auto plain = registration("chief:0", 0, {});
  plain.compression.clear();
  deliver(t2, out, 1, {message::register_worker, 0, 0, 0, control_of(plain)});  // on the same connection
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST(contains(r[0].error().message, "as none but ps:0 decodes it as top_k(0.4)"), r[0].error().message);
}

BOOST_AUTO_TEST_CASE(a_sync_step_applies_the_mean_of_two_compressed_pushes) {
  recording_sink out;
  auto t = registered<sync_table>(out, 2);
  out.take();
  const std::vector<float> g0{0.1f, -3, 0.2f, 4, 0.3f, -5, 0.f, 6, 0.5f, 1, -7, 0.25f};
  const std::vector<float> g1{2, 0.1f, -0.2f, 0.3f, 8, 0.f, -1, 0.5f, 9, 0.1f, 0.2f, -3};
  std::vector<float> r0(12, 0.f), r1(12, 0.f), none;
  auto [p0, d0] = encode(c::top_k{0.4f}, g0, r0);
  auto [p1, d1] = encode(c::top_k{0.4f}, g1, r1);
  BOOST_TEST(p0.size() == 4u + 8u * 5u);  // 5 of 12 sent
  // In chunks of 8 bytes, as a small chunk_bytes would split them.
  BOOST_TEST(!deliver(t, out, 1, {message::compressed_push, 0, 0, 0, p0, 8}));
  BOOST_TEST(!deliver(t, out, 2, {message::compressed_push, 0, 0, 0, p1}));
  auto r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 2u);
  BOOST_TEST((r[0].type() == message::push_accumulated));
  BOOST_TEST((r[1].type() == message::push_applied));
  const auto state_values = values_of(t, 0);
  for (std::size_t i = 0; i < 12; ++i) {
    const float want = w0[i] - 0.5f * ((d0[i] + d1[i]) * 0.5f);
    BOOST_TEST(state_values[i] == want, "element " << i);
  }
  // b as bf16: 0.3 is not exact in bf16, the step applies what bf16 holds.
  const std::vector<float> gb{0.3f, -1.f, 2.f};
  auto [pb, db] = encode(c::bf16{}, gb, none);
  deliver(t, out, 1, {message::compressed_push, 1, 0, 0, pb});
  deliver(t, out, 2, {message::compressed_push, 1, 0, 0, pb});
  BOOST_TEST(values_of(t, 1)[0] == 1.f - 0.5f * db[0]);
  BOOST_TEST(db[0] != 0.3f);
}

BOOST_FIXTURE_TEST_CASE(an_async_push_is_decoded_and_applied, async_top_k_push) {
  BOOST_TEST(!deliver(t, out, 1, {message::compressed_push, 0, 0, 0, p, 12}));
  BOOST_TEST((out.take().at(0).type() == message::push_applied));
  const auto v = values_of(t, 0);
  for (std::size_t i = 0; i < 12; ++i) BOOST_TEST(v[i] == w0[i] - 0.5f * d[i]);
  BOOST_TEST(d[11] == -12.f);
  BOOST_TEST(d[0] == 0.f);  // the 7 smallest wait in the residual
  BOOST_TEST(r[0] == 1.f);
}

BOOST_FIXTURE_TEST_CASE(malformed_compressed_pushes_are_bad_frame_naming_the_variable, async_top_k_push) {
  auto bad = p;
  const std::uint32_t past = 12;
  std::memcpy(bad.data() + 4 + 4 * 4, &past, 4);  // the last index past the variable
  BOOST_TEST(!deliver(t, out, 1, {message::compressed_push, 0, 0, 0, bad}));
  auto replies = out.take();
  BOOST_REQUIRE_EQUAL(replies.size(), 1u);
  BOOST_REQUIRE((replies[0].type() == message::reply_error));
  auto e = replies[0].error();
  BOOST_TEST(e.code == int(dsgd::errc::bad_frame));
  BOOST_TEST(contains(e.message, "malformed top_k payload of w [4, 3] shard 0 (push to ps:0): index 12"), e.message);
  BOOST_TEST(values_of(t, 0) == w0);  // nothing applied
  BOOST_TEST(t.find(0, 0)->step() == 0u);
  // Longer than top_k(0.4) can send for 12 elements (4 + 8 x 5 bytes): refused from the header,
  // before anything is allocated; the connection would close.
  std::vector<std::byte> huge(4 + 8 * 6);
  BOOST_TEST((deliver(t, out, 1, {message::compressed_push, 0, 0, 0, huge}) == dsgd::errc::bad_frame));
  // A compressed push for a shard this ps does not hold.
  BOOST_TEST((deliver(t, out, 1, {message::compressed_push, 7, 0, 0, p}) == dsgd::errc::bad_frame));
  // bf16 of an odd length.
  std::vector<std::byte> odd(5);
  BOOST_TEST(!deliver(t, out, 1, {message::compressed_push, 1, 0, 0, odd}));
  e = out.take().at(0).error();
  BOOST_TEST(e.code == int(dsgd::errc::bad_frame));
  BOOST_TEST(contains(e.message, "malformed bf16 payload of b [3] shard 0 (push to ps:0): 5 bytes for 3 elements"),
             e.message);
  // The good push still goes through afterwards.
  BOOST_TEST(!deliver(t, out, 1, {message::compressed_push, 0, 0, 0, p}));
  BOOST_TEST((out.take().at(0).type() == message::push_applied));
}

BOOST_AUTO_TEST_CASE(a_ps_without_compression_refuses_a_compressed_push) {
  recording_sink out;
  sync_table::options o;
  o.connection.log = [](std::string_view) {};
  sync_table t({"ps", 0}, 1, 1, o);
  join(t, out, 1, registration("chief:0", 0, {}));
  deliver(t, out, 1, {message::init_shard, 1, 0, 0, bytes_of(b0)});
  for (const auto& s : out.take()) BOOST_TEST((s.type() == message::reply_ok));
  std::vector<std::byte> two_floats_as_fp16(6);
  BOOST_TEST((deliver(t, out, 1, {message::compressed_push, 1, 0, 0, two_floats_as_fp16}) == dsgd::errc::bad_frame));
}

BOOST_AUTO_TEST_SUITE_END()
