// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support: a ps task's shard_table driven without a socket, as the server, membership,
// push count and compression tests drive it. A request is a frame built in memory and delivered
// as a connection would deliver it (the header, its payload into destination(), received());
// recording_sink is the reply_sink that keeps every reply the table sends. The helpers build
// what a worker sends first: its registration (one ps task holding the whole plan) and, as the
// chief, the variables' initial values.
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/plan.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/shard_table.hpp>
#include <dsgd/transport/frame.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsgd::test {

// The tables most of these tests drive: sgd steps, synchronous (averaged) or asynchronous.
using sync_table = server::shard_table<update::sync_average, optim::sgd>;
using async_table = server::shard_table<update::async, optim::sgd>;

// One reply the table sent: to which peer, its header, a copy of its payload, and what kept the
// payload alive (an encoding shared by every peer it went to is one object).
struct sent_reply {
  server::peer_id to = 0;
  transport::frame_header header;
  std::vector<std::byte> payload;
  std::shared_ptr<const void> keep_alive;

  protocol::message type() const { return static_cast<protocol::message>(header.type); }
  // The payload as floats (a plain pull's reply).
  std::vector<float> floats() const {
    std::vector<float> v(payload.size() / sizeof(float));
    std::memcpy(v.data(), payload.data(), v.size() * sizeof(float));
    return v;
  }
  // The payload as the error_reply of a reply_error.
  protocol::error_reply error() const {
    return protocol::decode_control<protocol::error_reply>(
        std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size()), "reply_error");
  }
};

// Records every reply. A peer is open until the test closes it (closed) or, with
// supersede_closes, until the table supersedes it (as a ps closes a superseded connection).
struct recording_sink {
  std::vector<sent_reply> replies;
  std::vector<server::peer_id> superseded;
  std::optional<sent_reply> shutdown;
  std::set<server::peer_id> closed;
  bool supersede_closes = false;

  void send(server::peer_id p, server::outgoing_reply r) {
    replies.push_back({p, r.header, {r.payload.begin(), r.payload.end()}, r.keep_alive});
  }
  bool is_open(server::peer_id p) const { return !closed.contains(p); }
  void supersede(server::peer_id p) {
    superseded.push_back(p);
    if (supersede_closes) closed.insert(p);
  }
  void shut_down(server::peer_id p, server::outgoing_reply r) { shutdown = sent_reply{p, r.header, {}, {}}; }
  // The replies since the last take().
  std::vector<sent_reply> take() { return std::exchange(replies, {}); }
};
static_assert(server::reply_sink<recording_sink>);

// One request as a worker sends it: chunk is the most payload bytes per frame; with chunks_sent,
// only that many chunks go (a request cut off by a lost connection).
struct table_request {
  protocol::message type;
  std::uint32_t variable = 0;
  std::uint32_t shard = 0;
  std::uint64_t step = 0;
  std::vector<std::byte> payload = {};
  std::size_t chunk = std::numeric_limits<std::size_t>::max();
  std::size_t chunks_sent = std::numeric_limits<std::size_t>::max();
};

// Request ids, unique across the tests of a process as a worker's are across its requests.
inline std::uint64_t next_request_id = 1;

// Delivers @p f from peer @p p to @p t as the transport would: each chunk's header, its payload
// into destination(), then received(). @returns the error destination() set (the connection
// would close), after which nothing more is delivered.
template <class Table>
error_code deliver(Table& t, recording_sink& out, server::peer_id p, const table_request& f) {
  const auto* info = protocol::find_message(static_cast<std::uint16_t>(f.type));
  const bool control = info && info->payload == protocol::payload_kind::control;
  const std::uint64_t id = next_request_id++;
  std::size_t at = 0, sent = 0;
  do {
    transport::frame_header h;
    h.type = static_cast<std::uint16_t>(f.type);
    h.flags = control ? transport::frame_flags::control : 0;
    h.request_id = id;
    h.variable = f.variable;
    h.shard = f.shard;
    h.step = f.step;
    h.chunk_offset = at;
    h.payload_length = std::min(f.chunk, f.payload.size() - at);
    h.total_length = f.payload.size();
    error_code ec;
    auto dst = t.destination(p, h, ec);
    if (ec) return ec;
    BOOST_REQUIRE_EQUAL(dst.size(), h.payload_length);
    if (!dst.empty()) std::memcpy(dst.data(), f.payload.data() + at, dst.size());
    t.received(p, h, out);
    at += h.payload_length;
  } while (at < f.payload.size() && ++sent < f.chunks_sent);
  return {};
}

// deliver(), for a request whose frames the table must take (destination() sets no error).
template <class Table>
void deliver_accepted(Table& t, recording_sink& out, server::peer_id p, const table_request& f) {
  BOOST_REQUIRE(!deliver(t, out, p, f));
}

// The bytes of @p r (floats, or an encoded control message) as a request's payload.
template <class R>
std::vector<std::byte> bytes_of(const R& r) {
  auto b = std::as_bytes(std::span(r));
  return {b.begin(), b.end()};
}

// @p m serialized as a control payload.
template <class M>
std::vector<std::byte> control_of(const M& m) {
  return bytes_of(protocol::encode_control(m));
}

// The task of training replica @p replica: the chief is replica 0, worker:k replica k + 1.
inline std::string replica_task(std::uint32_t replica) {
  return replica == 0 ? std::string("chief:0") : "worker:" + std::to_string(replica - 1);
}

// @p task's registration as @p replica (@p chief: it creates the variables) for @p model placed
// round robin on one ps task, whose shards are @p layouts.
inline protocol::register_request registration_of(const std::string& task, std::uint32_t replica, bool chief,
                                                  const std::vector<placement::variable_info>& model,
                                                  std::vector<protocol::shard_layout> layouts) {
  const auto plan = placement::round_robin{}.place(model, 1);
  const auto shards = static_cast<std::uint32_t>(layouts.size());
  return {task, replica, chief, plan.fingerprint(), plan.describe(), shards, std::move(layouts), {}, {}};
}

// w [4, 3] and b [3] on one ps task: two shards, w as 4 rows of 3.
inline const std::vector<placement::variable_info> w_and_b{{"w", {4, 3}}, {"b", {3}}};

// registration_of() for the shards of w_and_b, or of @p model (a variable of 4 rows of 3 and a
// vector: w_and_b under other names, or with b of another length).
inline protocol::register_request w_and_b_registration(const std::string& task, std::uint32_t replica, bool chief,
                                                       const std::vector<placement::variable_info>& model = w_and_b) {
  const auto b_rows = model[1].shape.extents()[0];
  return registration_of(task, replica, chief, model,
                         {{0, 0, model[0].name, {4, 3}, 0, 4}, {1, 0, model[1].name, {b_rows}, 0, b_rows}});
}

// Options for a table whose log is silent: sgd at rate 0.5, and deadlines of 1 s for a step and
// for the variables to be ready.
template <class Table>
typename Table::options quiet_options() {
  typename Table::options o;
  o.connection.log = [](std::string_view) {};
  o.optimizer = {0.5f};
  o.serving.step_timeout = std::chrono::seconds(1);
  o.serving.ready_timeout = std::chrono::seconds(1);
  return o;
}

// Connects peer @p p as @p r.task and sends its registration @p r. @returns destination()'s error.
template <class Table>
error_code join(Table& t, recording_sink& out, server::peer_id p, const protocol::register_request& r) {
  t.connect(p, r.task);
  return deliver(t, out, p, {protocol::message::register_worker, 0, 0, 0, control_of(r)});
}

// ps:0's table of @p replicas replicas with options @p o, peer r + 1 registered as replica r
// with registration(replica_task(r), r) (the table takes each; it may answer with an error).
template <class Table, class Registration>
Table registered_table(recording_sink& out, std::uint32_t replicas, const typename Table::options& o,
                       Registration registration) {
  Table t({"ps", 0}, 1, replicas, o);
  for (std::uint32_t r = 0; r < replicas; ++r) BOOST_REQUIRE(!join(t, out, r + 1, registration(replica_task(r), r)));
  return t;
}

// The chief (peer 1) creates variable v's one shard with @p values[v], for each v.
template <class Table>
void init_shards(Table& t, recording_sink& out, const std::vector<std::vector<float>>& values) {
  for (std::uint32_t v = 0; v < values.size(); ++v)
    deliver_accepted(t, out, 1, {protocol::message::init_shard, v, 0, 0, bytes_of(values[v])});
}

}  // namespace dsgd::test
