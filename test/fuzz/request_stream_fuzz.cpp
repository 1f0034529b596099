// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Fuzz target for <dsgd/server/shard_table.hpp>: a stream of request frames from three
// authenticated peers, delivered as a connection delivers them (each chunk's header, its payload
// into destination(), then received()), to a table whose two replicas registered, created w [4, 3]
// and b [3], opened a session and created two embedding tables (0 sync, 1 async with admission
// and a cap). Every request kind of protocol::messages is reached through its
// handler (but save and restore, which touch the file system), with any variable, shard, step,
// length and chunking, as are reply kinds and unknown types sent as requests.
//
// The contract: the table never crashes nor throws; for a frame it takes it names exactly
// payload_length bytes, and it refuses the others with errc::bad_frame (the connection would
// close: the peer is then connected afresh, unregistered); it allocates in proportion to what
// arrived. At the end a sweep past every deadline answers every parked request.
//
// Input: frames, each [peer][kind][variable][shard][step][total length: u16 LE][chunk bytes],
// then its payload (zeros past the end of the input), at most 64 frames.
#include "fuzz_support.hpp"

#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/shard_table.hpp>
#include <dsgd/update/sync_average.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

namespace protocol = dsgd::protocol;
namespace server = dsgd::server;

namespace {

using table = server::shard_table<dsgd::update::sync_average, dsgd::optim::sgd>;

// Keeps count of the replies and checks each goes to a peer that was connected.
struct counting_sink {
  std::size_t replies = 0;
  bool shut = false;
  void send(server::peer_id p, server::outgoing_reply) {
    dsgd::fuzz::check(p >= 1 && p <= 3, "a reply to a peer that never connected");
    ++replies;
  }
  bool is_open(server::peer_id) const { return true; }
  void supersede(server::peer_id) {}
  void shut_down(server::peer_id, server::outgoing_reply) { shut = true; }
};

// The kinds a frame may carry: every request but save and restore, a reply and an unknown type.
std::vector<std::uint16_t> kinds() {
  std::vector<std::uint16_t> out;
  for (const auto& m : protocol::messages)
    if (m.payload != protocol::payload_kind::reply && m.kind != protocol::message::save &&
        m.kind != protocol::message::restore)
      out.push_back(static_cast<std::uint16_t>(m.kind));
  out.push_back(static_cast<std::uint16_t>(protocol::message::reply_ok));
  out.push_back(200);
  return out;
}

const std::vector<dsgd::placement::variable_info> model{{"w", {4, 3}}, {"b", {3}}};

protocol::register_request registration(const std::string& task, std::uint32_t replica) {
  const auto plan = dsgd::placement::round_robin{}.place(model, 1);
  return {task,
          replica,
          replica == 0,
          plan.fingerprint(),
          plan.describe(),
          2,
          {{0, 0, "w", {4, 3}, 0, 4}, {1, 0, "b", {3}, 0, 3}},
          {},
          {}};
}

std::uint64_t request_id = 1;

// Delivers one request of @p payload bytes in chunks of @p chunk. @returns destination()'s error.
dsgd::error_code deliver(table& t, counting_sink& out, server::peer_id p, std::uint16_t type, std::uint32_t variable,
                         std::uint32_t shard, std::uint64_t step, const std::vector<std::byte>& payload,
                         std::size_t chunk) {
  const auto* info = protocol::find_message(type);
  std::size_t at = 0;
  const std::uint64_t id = request_id++;
  do {
    dsgd::transport::frame_header h;
    h.type = type;
    h.flags = info && info->payload == protocol::payload_kind::control ? dsgd::transport::frame_flags::control : 0;
    h.request_id = id;
    h.variable = variable;
    h.shard = shard;
    h.step = step;
    h.chunk_offset = at;
    h.payload_length = std::min(chunk, payload.size() - at);
    h.total_length = payload.size();
    dsgd::error_code ec;
    auto dst = t.destination(p, h, ec);
    if (ec) {
      dsgd::fuzz::check(ec == dsgd::make_error_code(dsgd::errc::bad_frame), "destination() set another error");
      return ec;
    }
    dsgd::fuzz::check(dst.size() == h.payload_length, "destination() named another size than payload_length");
    if (!dst.empty()) std::memcpy(dst.data(), payload.data() + at, dst.size());
    t.received(p, h, out);
    at += h.payload_length;
  } while (at < payload.size());
  return {};
}

template <class R>
std::vector<std::byte> bytes_of(const R& r) {
  auto b = std::as_bytes(std::span(r));
  return {b.begin(), b.end()};
}

const char* const tasks[] = {"", "chief:0", "worker:0", "worker:1"};

// A table whose two replicas registered, created w and b and opened a session; peer 3 is
// connected only.
table make_table(counting_sink& out) {
  table::options o;
  o.connection.log = [](std::string_view) {};
  o.optimizer = {0.5f};
  table t({"ps", 0}, 1, 2, o);
  for (server::peer_id p = 1; p <= 3; ++p) t.connect(p, tasks[p]);
  for (std::uint32_t r = 0; r < 2; ++r)
    deliver(t, out, r + 1, static_cast<std::uint16_t>(protocol::message::register_worker), 0, 0, 0,
            bytes_of(protocol::encode_control(registration(tasks[r + 1], r))), 1 << 16);
  deliver(t, out, 1, static_cast<std::uint16_t>(protocol::message::init_shard), 0, 0, 0,
          bytes_of(std::vector<float>(12, 1.f)), 1 << 16);
  deliver(t, out, 1, static_cast<std::uint16_t>(protocol::message::init_shard), 1, 0, 0,
          bytes_of(std::vector<float>(3, 1.f)), 1 << 16);
  deliver(t, out, 1, static_cast<std::uint16_t>(protocol::message::open_session), 0, 0, 7, {}, 1);
  dsgd::fuzz::check(t.ready(), "the table is not ready after its setup");
  // Two embedding tables: 0 sync, rows of 2; 1 async, rows of 3, count admission and a cap of
  // 4 rows with eviction, so that pulls and pushes reach admission, eviction and the cap. Both
  // capped: an uncapped table's arena grows by blocks of 256 KiB, a fixed allocation the
  // harness's bound (proportional to the input) would count against the input.
  namespace emb = dsgd::embedding;
  const emb::table_spec tables[] = {{.name = "sync_ids",
                                     .dim = 2,
                                     .rule = emb::table_rule::sync(),
                                     .optimizer = emb::row_optimizer_spec::sgd(0.5f),
                                     .max_rows = 64},
                                    {.name = "async_ids",
                                     .dim = 3,
                                     .rule = emb::table_rule::async(),
                                     .optimizer = emb::row_optimizer_spec::adagrad(0.1f),
                                     .initializer = emb::initializer_spec::uniform(-1.f, 1.f, 3),
                                     .admission = emb::admission_spec::by_count(2),
                                     .eviction = emb::eviction_spec::least_frequent(),
                                     .max_rows = 4}};
  for (std::uint32_t id = 0; id < 2; ++id)
    deliver(t, out, 1, static_cast<std::uint16_t>(protocol::message::create_table), id, 0, 0,
            bytes_of(protocol::encode_control(tables[id])), 1 << 16);
  return t;
}

// Once per process, before any input is tracked: a sync step on a table of its own, so that
// what the process sets up once (the OpenMP runtime of the first kernel, about 1 MiB) is not
// counted against the first input that happens to push.
bool warm_up() {
  counting_sink out;
  auto t = make_table(out);
  const auto g = bytes_of(std::vector<float>(12, 0.25f));
  for (server::peer_id p = 1; p <= 2; ++p)
    deliver(t, out, p, static_cast<std::uint16_t>(protocol::message::push), 0, 0, 0, g, 1 << 16);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool warm = warm_up();
  (void)warm;
  dsgd::fuzz::input_scope scope({data, size});
  static const auto kind = kinds();
  counting_sink out;
  auto t = make_table(out);

  dsgd::fuzz::input_reader in({data, size});
  for (int frames = 0; frames < 64 && in.remaining() > 0 && !out.shut; ++frames) {
    const server::peer_id p = 1 + in.byte() % 3;
    const auto type = kind[in.byte() % kind.size()];
    const std::uint32_t variable = in.byte() % 3, shard = in.byte() % 2;
    const std::uint64_t step = in.byte();
    const auto total = in.le<std::uint16_t>();
    const std::size_t chunk = 1 + in.byte() * 64u;
    const auto payload = in.bytes(std::min<std::size_t>(total, in.remaining() + 64));
    if (deliver(t, out, p, type, variable, shard, step, payload, chunk)) {
      t.disconnect(p, true, out);  // the connection closes; the peer comes back unregistered
      t.connect(p, tasks[p]);
    }
  }
  t.sweep(dsgd::update::clock_type::now() + std::chrono::hours(1), out);
  dsgd::fuzz::check(out.shut || t.parked() == 0, "a parked request survived a sweep past every deadline");
  return 0;
}

std::vector<std::string> dsgd::fuzz::seeds() {
  std::vector<std::string> out;
  auto frame = [](protocol::message m, std::uint8_t peer, std::uint8_t variable, std::uint8_t step,
                  const std::vector<std::byte>& payload) {
    const auto k = kinds();
    const auto index = std::find(k.begin(), k.end(), static_cast<std::uint16_t>(m)) - k.begin();
    std::string f{char(peer - 1),
                  char(index),
                  char(variable),
                  0,
                  char(step),
                  char(payload.size() & 0xff),
                  char(payload.size() >> 8),
                  char(1)};
    return f + dsgd::fuzz::as_string(payload);
  };
  const auto grad = bytes_of(std::vector<float>(12, 0.25f));
  std::vector<std::uint64_t> keys{1, 3};
  // A sync step: both pushes, then a pull of the next step; a stale push and dropped_count.
  out.push_back(frame(protocol::message::push, 1, 0, 0, grad) + frame(protocol::message::push, 2, 0, 0, grad) +
                frame(protocol::message::pull, 1, 0, 1, {}) + frame(protocol::message::push, 2, 0, 0, grad) +
                frame(protocol::message::dropped_count, 2, 0, 0, {}));
  // A pull that parks, rows by key, a sparse push of one row.
  std::vector<std::byte> row = bytes_of(std::vector<std::uint64_t>{2});
  const auto g = bytes_of(std::vector<float>(3, 1.f));
  row.insert(row.end(), g.begin(), g.end());
  out.push_back(frame(protocol::message::pull, 2, 0, 1, {}) +
                frame(protocol::message::sparse_pull, 1, 0, 0, bytes_of(keys)) +
                frame(protocol::message::sparse_push, 1, 0, 0, row));
  // wait_ready, both finish, the chief's shutdown.
  out.push_back(frame(protocol::message::wait_ready, 2, 0, 0, {}) + frame(protocol::message::finish, 1, 0, 0, {}) +
                frame(protocol::message::finish, 2, 0, 0, {}) + frame(protocol::message::shutdown, 1, 0, 0, {}));
  return out;
}
