// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The parameter-server protocol on top of the transport's frames: message types, the control
/// messages (Boost.Serialization), and who sends what. Tensor payloads never go through
/// Boost.Serialization: they travel as raw bytes after the frame header.
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/error.hpp>
#include <dsgd/protocol/detail/bounded_iarchive.hpp>
#include <dsgd/transport/frame.hpp>

#include <boost/archive/binary_oarchive.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>
#include <boost/serialization/version.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::protocol {

// The table below keeps a request a line: not reflowed.
// clang-format off
/// frame_header::type values. Requests go worker -> ps; replies echo the request_id.
///
/// | request | payload | reply |
/// |---|---|---|
/// | register_worker | control: register_request | ok with the push counts (below), or error (placement mismatch, ...) |
/// | init_shard (chief) | raw floats: initial values of (variable, shard) | ok |
/// | wait_ready | none | ok (step = the session stamp) once every shard this ps holds exists and the chief opened a session |
/// | pull (step = step or clock) | none | pull_reply: raw floats, step = shard step |
/// | push (step = computed at) | raw floats: gradient | push_applied / push_accumulated / push_dropped |
/// | sparse_pull (step as pull) | n keys: u64 LE rows of the whole variable | pull_reply: n x dim floats |
/// | sparse_push (step as push) | n keys (u64 LE), then n x dim floats | as push |
/// | finish | none | ok |
/// | shutdown (chief) | none | ok, then the ps closes and join() returns |
/// | save (chief; step = checkpoint step) | control: checkpoint_request | ok once the ps wrote its data file (and its table file: every row, or with `incremental` the changes since `tables_delta_of`) |
/// | restore (chief; step = checkpoint step) | control: checkpoint_request | ok once the ps holds the checkpoint's values and tables (base + deltas, its keys re-routed) |
/// | compressed_push (step as push) | a Compressor's payload (compress/) | as push |
/// | compressed_pull (step as pull) | none | compressed_pull_reply: the shard's values as its agreed pull codec (fp16, bf16) encodes them, 2 bytes each |
/// | open_session (chief; step = a new session stamp) | none | ok |
/// | dropped_count | none | ok, step = the pushes this ps task's shards dropped (stale or duplicate) |
/// | create_table (variable = table id) | control: embedding::table_spec | ok once this ps task holds its part of the table (the same spec again: ok; another: error) |
/// | table_pull (variable = table id; step = step or clock; shard = 0 training, 1 evaluation) | n keys: u64 LE, each this ps task's | pull_reply: n x dim floats, step = the table's step (or clock) |
/// | table_push (variable = table id; step = pulled at) | n keys (u64 LE), then n x dim floats | push_applied / push_accumulated / push_dropped, step as table_pull's; payload: u64 LE, the keys whose gradient was dropped (no row) |
/// | table_stats (variable = table id) | none | ok, step as table_pull's; payload: 7 u64 LE, this ps task's part: rows, bytes, admitted, rejected, evicted, erased, gradient rows dropped |
///
/// The reply to register_worker carries, for each shard of the request's `layouts` in that
/// order, a u64 LE: how many pushes (dense or sparse) of this replica the ps has received for
/// that shard. Pushes go one at a time, in order, on one connection, and a registration closes
/// any older connection of the same replica first, so the counts tell a restarted or
/// reconnected worker exactly which of its pushes arrived (exactly once: it resends none of
/// them, and the one in flight when it died arrived or not, never both).
///
/// A restore re-creates the session: every request from a worker that registered before it is
/// answered with errc::aborted until that worker registers again. It also sets the push counts
/// to the checkpoint's (those its values hold; 0 in a checkpoint of format version < 3), so a
/// worker registering after it resumes at the pushes the restored state holds.
///
/// Sessions: the chief ends each initialisation or restore with open_session, the same fresh
/// stamp to every ps task, and a restore closes the session it finds (stamp 0). wait_ready is
/// answered only within an open session, with its stamp; a worker takes the ps tasks as ready
/// once they all answer the same stamp. So a worker that re-registers while a chief re-creates
/// the session after losing a ps does not read one ps task restored and another not yet.
// clang-format on
enum class message : std::uint16_t {
  register_worker = 1,
  init_shard = 2,
  wait_ready = 3,
  pull = 4,
  push = 5,
  finish = 6,
  shutdown = 7,
  sparse_pull = 8,
  sparse_push = 9,
  save = 10,
  restore = 11,
  compressed_push = 12,
  compressed_pull = 13,
  open_session = 14,
  dropped_count = 15,
  create_table = 16,
  table_pull = 17,
  table_push = 18,
  table_stats = 19,
  reply_ok = 64,
  reply_error = 65,
  pull_reply = 66,
  push_applied = 67,
  push_accumulated = 68,
  push_dropped = 69,
  compressed_pull_reply = 70,
};

/// Where the payload of a request goes on the ps.
enum class payload_kind : std::uint8_t {
  none,        ///< no payload
  control,     ///< a serialized control message (register_request, checkpoint_request)
  dense,       ///< raw floats of a whole shard (init_shard values, a push's gradient)
  sparse,      ///< u64 keys (sparse_pull), or keys then rows (sparse_push)
  compressed,  ///< a gradient as the shard's agreed compress::codec encodes it
  reply,       ///< not a request: a reply the ps sends
};

/// One row of the protocol's table: a message, its name, where its payload goes.
struct message_info {
  message kind;          ///< the frame_header::type value
  const char* name;      ///< for logs and errors
  payload_kind payload;  ///< where a ps puts its payload
};

/// Every message. A new request kind is a value of `message`, a row here, and its handler on
/// the ps (server/requests/: a request without one does not compile).
inline constexpr message_info messages[] = {
    {message::register_worker, "register_worker", payload_kind::control},
    {message::init_shard, "init_shard", payload_kind::dense},
    {message::wait_ready, "wait_ready", payload_kind::none},
    {message::pull, "pull", payload_kind::none},
    {message::push, "push", payload_kind::dense},
    {message::finish, "finish", payload_kind::none},
    {message::shutdown, "shutdown", payload_kind::none},
    {message::sparse_pull, "sparse_pull", payload_kind::sparse},
    {message::sparse_push, "sparse_push", payload_kind::sparse},
    {message::save, "save", payload_kind::control},
    {message::restore, "restore", payload_kind::control},
    {message::compressed_push, "compressed_push", payload_kind::compressed},
    {message::compressed_pull, "compressed_pull", payload_kind::none},
    {message::open_session, "open_session", payload_kind::none},
    {message::dropped_count, "dropped_count", payload_kind::none},
    {message::create_table, "create_table", payload_kind::control},
    {message::table_pull, "table_pull", payload_kind::sparse},
    {message::table_push, "table_push", payload_kind::sparse},
    {message::table_stats, "table_stats", payload_kind::none},
    {message::reply_ok, "reply_ok", payload_kind::reply},
    {message::reply_error, "reply_error", payload_kind::reply},
    {message::pull_reply, "pull_reply", payload_kind::reply},
    {message::push_applied, "push_applied", payload_kind::reply},
    {message::push_accumulated, "push_accumulated", payload_kind::reply},
    {message::push_dropped, "push_dropped", payload_kind::reply},
    {message::compressed_pull_reply, "compressed_pull_reply", payload_kind::reply},
};

/// @returns the row of @p type in `messages`, or nullptr for a type this version does not know.
constexpr const message_info* find_message(std::uint16_t type) noexcept {
  for (const auto& m : messages)
    if (static_cast<std::uint16_t>(m.kind) == type) return &m;
  return nullptr;
}

/// @returns the request a frame_header::type names, or nullptr for a reply or an unknown type:
/// what a ps decodes once per frame.
constexpr const message_info* decode_request(std::uint16_t type) noexcept {
  const auto* m = find_message(type);
  return m && m->payload != payload_kind::reply ? m : nullptr;
}

/// @returns the message's name for logs ("pull", "reply_error").
constexpr const char* to_string(message m) noexcept {
  const auto* info = find_message(static_cast<std::uint16_t>(m));
  return info ? info->name : "unknown";
}

/// What a ps task knows of one shard it holds, for sparse pulls and pushes: the whole
/// variable's name and shape, and the rows of dimension 0 the shard holds.
struct shard_layout {
  std::uint32_t variable = 0;          ///< index of the variable in creation order
  std::uint32_t shard = 0;             ///< index of the shard within its variable
  std::string name;                    ///< the variable's name
  std::vector<std::uint64_t> extents;  ///< the whole variable's shape
  std::uint64_t first_row = 0;         ///< first row of dimension 0 in this shard
  std::uint64_t rows = 0;              ///< rows in this shard

  /// @returns floats per row: the product of the extents after the first (1 for rank 1).
  std::uint64_t row_elements() const noexcept {
    std::uint64_t n = 1;
    for (std::size_t i = 1; i < extents.size(); ++i) n *= extents[i];
    return n;
  }
  /// @returns "emb [1000, 16]".
  std::string describe() const {
    std::string s = name + " [";
    for (std::size_t i = 0; i < extents.size(); ++i) s += (i ? ", " : "") + std::to_string(extents[i]);
    return s + "]";
  }

  template <class Archive>
  void serialize(Archive& ar, unsigned /*version*/) {
    ar& variable& shard& name& extents& first_row& rows;
  }
};

/// A worker introduces itself to a ps task: who it is and the placement it computed.
struct register_request {
  std::string task;                   ///< "worker:1", "chief:0"
  std::uint32_t replica = 0;          ///< the worker's index among the training replicas
  bool chief = false;                 ///< the chief creates and initialises the variables
  std::uint64_t fingerprint = 0;      ///< placement::plan::fingerprint()
  std::string placement;              ///< placement::plan::describe()
  std::uint32_t shards = 0;           ///< how many shards the plan gives this ps task
  std::vector<shard_layout> layouts;  ///< those shards, for sparse pulls and pushes
  /// Per layout, the compress::codec its pushes use (its describe(): "none", "top_k(0.01)"),
  /// which the ps must agree with.
  std::vector<std::string> compression;
  /// Per layout, the encoding its pulls use (describe(): "none", "bf16", "fp16"),
  /// which the ps must agree with.
  std::vector<std::string> pull_compression;
  /// The update rule's settings as the worker holds them (update::describe_rule:
  /// "bounded_staleness(3)"; "" for a rule without settings), which the ps must agree with.
  std::string rule;

  template <class Archive>
  void serialize(Archive& ar, unsigned /*version*/) {
    ar& task& replica& chief& fingerprint& placement& shards& layouts& compression& pull_compression& rule;
  }
};

/// Where a checkpoint is: the chief asks every ps task to write (save) or read (restore) its
/// part of checkpoint `step` in `directory`, a path every ps task can reach (one machine, or a
/// shared file system, as TensorFlow's sharded savers need).
///
/// A save may be incremental (`tables_delta_of`, version 1 of the message): each ps task writes
/// its data file as ever, and of its embedding tables only the rows changed since checkpoint
/// `tables_delta_of` (a committed one it wrote or restored) and the keys removed since
/// (checkpoint/table_file.hpp). A restore reads the chain whatever the checkpoint's kind.
struct checkpoint_request {
  std::string directory;
  bool incremental = false;           ///< save: the tables as a delta of `tables_delta_of`
  std::uint64_t tables_delta_of = 0;  ///< save, incremental: the checkpoint it builds on
  template <class Archive>
  void serialize(Archive& ar, unsigned version) {
    ar& directory;
    if (version >= 1) ar& incremental& tables_delta_of;
  }
};

/// Why a request failed, sent back to the worker that made it.
struct error_reply {
  std::int32_t code = 0;  ///< a dsgd::errc value
  std::string message;

  template <class Archive>
  void serialize(Archive& ar, unsigned /*version*/) {
    ar& code& message;
  }
};

/// @returns @p m serialized as a control payload.
template <class M>
std::string encode_control(const M& m) {
  std::ostringstream out(std::ios::binary);
  {
    boost::archive::binary_oarchive ar(out, boost::archive::no_header);
    ar << m;
  }
  return std::move(out).str();
}

/// Decodes a control payload received from an authenticated peer.
/// @throws dsgd::error(errc::bad_frame) naming @p what when the bytes do not decode.
template <class M>
M decode_control(std::string_view bytes, const char* what) {
  M m;
  try {
    std::istringstream in(std::string(bytes), std::ios::binary);
    detail::bounded_iarchive ar(in, bytes.size());
    ar >> m;
  } catch (const std::exception& e) {
    throw error(errc::bad_frame, std::string("malformed ") + what + " control message: " + e.what());
  }
  return m;
}

}  // namespace dsgd::protocol

// Version 1 adds the incremental save's fields; a version 0 payload decodes as a full save.
BOOST_CLASS_VERSION(dsgd::protocol::checkpoint_request, 1)
