// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Compressed pulls (values ps -> worker in bf16 or fp16): the pull codecs agreed at
// registration (a mismatch is a named error), a ps's replies encoded once per version of a
// shard's values however many workers pull it, the worker's in-place widening of a reply into
// its destination (the values within bf16 / fp16 rounding), and malformed replies refused as
// bad_frame before a byte is written. compress_cluster_test trains through them over TCP.
#include <dsgd/client/detail/compressed_pull.hpp>
#include <dsgd/client/detail/push_encoder.hpp>
#include <dsgd/compress/selection.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/shard_table.hpp>
#include <dsgd/train/trainer_options.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>

#include <support/shard_table_driver.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(compressed_pull_test)

using namespace std::chrono_literals;
namespace client = dsgd::client;
namespace protocol = dsgd::protocol;
namespace c = dsgd::compress;
namespace cd = dsgd::compress::detail;
using protocol::message;
using namespace dsgd::test;

namespace {

using sent = sent_reply;

// w [4, 3] and b [3] on one ps task; values none of which bf16 holds exactly.
const auto& model = w_and_b;
const std::vector<float> w0{0.1f, -2.7f, 3.3f, 1e-3f, 5.55f, -6.1f, 7.7f, 1234.567f, 0.333f, -1e-5f, 11.1f, 0.2f};
const std::vector<float> b0{0.3f, -0.7f, 65504.f};
const c::selection pulls{.all = c::bf16{}, .variables = {{"b", c::fp16{}}}};

protocol::register_request registration(const std::string& task, std::uint32_t replica, const c::selection& p) {
  auto r = w_and_b_registration(task, replica, replica == 0);
  r.compression = client::detail::describe_codecs({}, r.layouts);
  r.pull_compression = client::detail::describe_codecs(p, r.layouts);
  return r;
}

// A ps serving @p served, with @p replicas registered pulling as @p asked, its shards made.
template <class Table>
Table registered(recording_sink& out, std::uint32_t replicas, const c::selection& served = pulls,
                 const c::selection& asked = pulls) {
  auto o = quiet_options<Table>();
  o.pull_compression = served;
  auto t = registered_table<Table>(
      out, replicas, o, [&](const std::string& task, std::uint32_t r) { return registration(task, r, asked); });
  if (out.replies.empty() || out.replies.back().type() != message::reply_error) init_shards(t, out, {w0, b0});
  return t;
}

// A worker's slot awaiting a pull of @p dest in encoding @p e.
client::detail::request_slot slot_for(std::vector<float>& dest, c::value_encoding e) {
  client::detail::request_slot s;
  s.reply_into = boost::asio::buffer(dest.data(), dest.size() * sizeof(float));
  s.reply_encoding = e;
  return s;
}

// Receives @p reply into @p dest as the worker's receive loop does (pull_destination for its
// one chunk, then the widening). @returns the error the destination set.
dsgd::error_code receive(std::vector<float>& dest, c::value_encoding e, const sent& reply) {
  auto slot = slot_for(dest, e);
  auto h = reply.header;
  h.payload_length = reply.payload.size();
  h.total_length = reply.payload.size();
  dsgd::error_code ec;
  auto into = client::detail::pull_destination(slot, reply.type(), h, ec);
  if (ec) return ec;
  BOOST_REQUIRE_EQUAL(into.size(), reply.payload.size());
  std::memcpy(into.data(), reply.payload.data(), into.size());
  if (reply.type() == message::compressed_pull_reply) client::detail::widen_pull_reply(slot);
  return {};
}

}  // namespace

BOOST_AUTO_TEST_CASE(replies_round_trip_within_bf16_and_fp16_rounding) {
  recording_sink out;
  auto t = registered<sync_table>(out, 1);
  for (const auto& s : out.take()) BOOST_TEST((s.type() == message::reply_ok));
  deliver_accepted(t, out, 1, {message::compressed_pull, 0, 0, 0});
  deliver_accepted(t, out, 1, {message::compressed_pull, 1, 0, 0});
  auto r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 2u);
  BOOST_REQUIRE((r[0].type() == message::compressed_pull_reply));
  BOOST_TEST(r[0].payload.size() == 2 * w0.size());  // half a plain pull's bytes
  BOOST_TEST(r[1].payload.size() == 2 * b0.size());
  std::vector<float> w(w0.size(), -99.f), b(b0.size(), -99.f);
  BOOST_REQUIRE(!receive(w, c::value_encoding::bf16, r[0]));
  BOOST_REQUIRE(!receive(b, c::value_encoding::fp16, r[1]));
  for (std::size_t i = 0; i < w0.size(); ++i) {
    // Exactly the value rounded to nearest bf16, within half a unit in its 8 bits' last place.
    BOOST_TEST(w[i] == cd::from_bf16(cd::to_bf16(w0[i])), "w element " << i);
    BOOST_TEST(std::abs(w[i] - w0[i]) <= std::abs(w0[i]) * 0x1p-8f, "w element " << i);
  }
  BOOST_TEST(w[0] != w0[0]);  // 0.1 is not a bf16: the reply was rounded, not sent whole
  for (std::size_t i = 0; i < b0.size(); ++i) {
    BOOST_TEST(b[i] == cd::from_fp16(cd::to_fp16(b0[i])), "b element " << i);
    BOOST_TEST(std::abs(b[i] - b0[i]) <= std::abs(b0[i]) * 0x1p-11f, "b element " << i);
  }
  // A plain pull of the same shard still answers the floats whole.
  deliver_accepted(t, out, 1, {message::pull, 0, 0, 0});
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  std::vector<float> whole(w0.size());
  BOOST_REQUIRE(!receive(whole, c::value_encoding::none, r[0]));
  BOOST_TEST(whole == w0);
}

BOOST_AUTO_TEST_CASE(workers_pulling_one_version_share_one_encode) {
  for (int rule = 0; rule < 2; ++rule) {
    recording_sink out;
    auto pulled_twice = [&](auto& t) {
      deliver_accepted(t, out, 1, {message::compressed_pull, 0, 0, 0});
      deliver_accepted(t, out, 2, {message::compressed_pull, 0, 0, 0});
      auto r = out.take();
      BOOST_REQUIRE_EQUAL(r.size(), 2u);
      BOOST_TEST(r[0].payload == r[1].payload);
      return r;
    };
    if (rule == 0) {
      auto t = registered<sync_table>(out, 2);
      out.take();
      auto r = pulled_twice(t);
      BOOST_TEST(r[0].keep_alive == r[1].keep_alive);  // one encoding, sent to both
      // After a step, a new version: encoded anew, with the new values.
      const std::vector<float> g(w0.size(), 1.f);
      deliver_accepted(t, out, 1, {message::push, 0, 0, 0, bytes_of(g)});
      deliver_accepted(t, out, 2, {message::push, 0, 0, 0, bytes_of(g)});
      out.take();
      auto again = pulled_twice(t);
      BOOST_TEST(again[0].keep_alive == again[1].keep_alive);
      BOOST_TEST(again[0].keep_alive != r[0].keep_alive);
      BOOST_TEST(again[0].header.step == 1u);
      std::vector<float> w(w0.size());
      BOOST_REQUIRE(!receive(w, c::value_encoding::bf16, again[0]));
      BOOST_TEST(w[1] == cd::from_bf16(cd::to_bf16(-2.7f - 0.5f)));
    } else {
      auto t = registered<async_table>(out, 2);
      out.take();
      auto r = pulled_twice(t);
      BOOST_TEST(r[0].keep_alive == r[1].keep_alive);
    }
  }
}

BOOST_AUTO_TEST_CASE(registration_agrees_on_the_pull_codecs_or_names_the_mismatch) {
  recording_sink out;
  // The worker asks for bf16 values of w; the ps serves them plain.
  auto t = registered<sync_table>(out, 1, c::selection{}, pulls);
  auto r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_REQUIRE((r[0].type() == message::reply_error));
  BOOST_TEST(contains(r[0].error().message,
                      "pull compression mismatch: chief:0 pulls w [4, 3] as bf16 but ps:0 serves it as "
                      "none (workers and ps tasks need the same trainer_options::pull_compression)"),
             r[0].error().message);
  // And the other way round, on one variable: the ps serves b as fp16, the worker wants it plain.
  auto t2 = registered<sync_table>(out, 1, pulls, c::selection{.all = c::bf16{}});
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST(contains(r[0].error().message, "pulls b [3] as bf16 but ps:0 serves it as fp16"), r[0].error().message);
  // A worker of a version without pull codecs is taken as pulling plain.
  sync_table t3({"ps", 0}, 1, 1, [] {
    sync_table::options o;
    o.connection.log = [](std::string_view) {};
    o.pull_compression = pulls;
    return o;
  }());
  auto old = registration("chief:0", 0, {});
  old.pull_compression.clear();
  BOOST_REQUIRE(!join(t3, out, 1, old));
  r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_TEST(contains(r[0].error().message, "pulls w [4, 3] as none but ps:0 serves it as bf16"), r[0].error().message);
}

BOOST_AUTO_TEST_CASE(a_compressed_pull_of_a_plain_shard_is_a_named_error) {
  recording_sink out;
  const c::selection only_w{.variables = {{"w", c::bf16{}}}};
  auto t = registered<sync_table>(out, 1, only_w, only_w);
  out.take();
  deliver_accepted(t, out, 1, {message::compressed_pull, 1, 0, 0});
  auto r = out.take();
  BOOST_REQUIRE_EQUAL(r.size(), 1u);
  BOOST_REQUIRE((r[0].type() == message::reply_error));
  BOOST_TEST(
      contains(r[0].error().message, "compressed_pull of b [3] shard 0 from ps:0, whose pulls of it are plain (none)"),
      r[0].error().message);
}

BOOST_AUTO_TEST_CASE(malformed_compressed_replies_are_bad_frame) {
  std::vector<float> dest(6, -99.f);
  sent good;
  good.header.type = static_cast<std::uint16_t>(message::compressed_pull_reply);
  good.payload.resize(12);
  BOOST_TEST(!receive(dest, c::value_encoding::bf16, good));
  // One byte short, one long, odd, twice the floats' bytes, empty: bad_frame, dest untouched.
  for (std::size_t n : {11u, 13u, 7u, 24u, 0u}) {
    std::vector<float> d(6, -99.f);
    sent bad = good;
    bad.payload.resize(n);
    BOOST_TEST(receive(d, c::value_encoding::bf16, bad) == dsgd::make_error_code(dsgd::errc::bad_frame), n << " bytes");
    BOOST_TEST(d == std::vector<float>(6, -99.f));
  }
  // A compressed reply to a plain pull, and a plain one to a compressed pull.
  BOOST_TEST(receive(dest, c::value_encoding::none, good) == dsgd::make_error_code(dsgd::errc::bad_frame));
  sent plain;
  plain.header.type = static_cast<std::uint16_t>(message::pull_reply);
  plain.payload.resize(24);
  BOOST_TEST(receive(dest, c::value_encoding::fp16, plain) == dsgd::make_error_code(dsgd::errc::bad_frame));
  // A chunk past the end of a reply of the right total length.
  auto slot = slot_for(dest, c::value_encoding::bf16);
  dsgd::transport::frame_header h = good.header;
  h.total_length = 12;
  h.chunk_offset = 8;
  h.payload_length = 8;
  dsgd::error_code ec;
  client::detail::pull_destination(slot, message::compressed_pull_reply, h, ec);
  BOOST_TEST(ec == dsgd::make_error_code(dsgd::errc::bad_frame));
}

BOOST_AUTO_TEST_CASE(pull_selections_take_only_value_encodings) {
  dsgd::trainer_options<dsgd::placement::round_robin, dsgd::update::sync_average, dsgd::optim::sgd> o;
  o.pull_compression = {.all = c::bf16{}, .variables = {{"b", c::fp16{}}}};
  BOOST_CHECK_NO_THROW(dsgd::validate(o));
  o.pull_compression.variables.push_back({"w", c::top_k{0.01f}});
  try {
    dsgd::validate(o);
    BOOST_FAIL("top_k accepted for pulls");
  } catch (const dsgd::error& e) {
    BOOST_TEST(contains(e.what(), "trainer_options.pull_compression.variables[w]: must be none, fp16 or bf16"),
               e.what());
  }
  // The worker asks for a compressed pull only of a shard with elements, and plain otherwise.
  auto plan = dsgd::placement::round_robin{}.place(model, 1);
  std::vector<float> w(12);
  const auto& s = plan.shards()[0];
  auto r = client::detail::pull_request(plan, s, 0, 3, w, pulls);
  BOOST_TEST((static_cast<message>(r.h.type) == message::compressed_pull));
  BOOST_TEST((r.reply_encoding == c::value_encoding::bf16));
  r = client::detail::pull_request(plan, s, 0, 3, w, {});
  BOOST_TEST((static_cast<message>(r.h.type) == message::pull));
  BOOST_TEST((r.reply_encoding == c::value_encoding::none));
}

BOOST_AUTO_TEST_SUITE_END()
