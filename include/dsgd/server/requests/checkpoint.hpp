// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The chief's checkpoints on a ps task: save (this task's data file of a checkpoint: values,
/// slots, counters, pushes received; and its table file: every row of its embedding tables, or
/// an incremental save's changes) and restore (every shard and table from a checkpoint, tables
/// from their chain of deltas, keys re-routed; over existing shards a new generation, whose
/// older workers' requests are aborted).
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/detail/shard_checkpoint.hpp>
#include <dsgd/server/detail/shard_replies.hpp>
#include <dsgd/server/detail/table_store.hpp>
#include <dsgd/server/requests/handler.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace dsgd::server::requests {

template <>
struct handler<protocol::message::save> {
  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer& s, const transport::frame_header& h, S& out) {
    const auto r = detail::checkpoint_request_of(s.control, "save");
    t.shards.save(r.directory, h.step, t.ps_index, t.ps_tasks);
    t.tables.save(r.directory, h.step, t.ps_index, t.ps_tasks,
                  r.incremental ? std::optional<std::uint64_t>(r.tables_delta_of) : std::nullopt, t.self);
    detail::reply(out, p, h, protocol::message::reply_ok);
    return after::nothing;
  }
};

template <>
struct handler<protocol::message::restore> {
  // Overwrites (or creates) every shard this task holds from checkpoint h.step and closes the
  // session; over existing shards it starts a new generation, whose requests of workers
  // registered before it are aborted, while @p s, which asked for it, belongs to the new one.
  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer& s, const transport::frame_header& h, S& out) {
    auto dir = detail::checkpoint_directory(s.control, "restore");
    checkpoint::checkpoint_reader reader(dir, h.step);  // verifies every file and checksum
    // The tables' chain is read and verified before anything changes.
    auto tables = detail::table_store::read(dir, h.step, t.ps_index, t.ps_tasks);
    const auto table_count = tables.size();
    auto done = t.shards.restore(reader, [&](auto& shard) { t.peers.members().admit(shard); });
    const auto rows = t.tables.install(std::move(tables), h.step, t.peers.replicas(), t.ps_index, t.ps_tasks);
    t.tables.for_each_mut([&](std::uint32_t, detail::served_table& table) {
      for (std::size_t r = 0; r < t.peers.replicas(); ++r)
        if (t.peers.finished(r)) table.finish(r);
    });
    if (!done.missing.empty())
      t.log(t.self + ": checkpoint " + std::to_string(h.step) + " is of format version " +
            std::to_string(reader.format_version()) + " and holds no " + done.missing + ": they start afresh");
    t.log(t.self + " restored checkpoint " + std::to_string(h.step) + " from " + dir.string() + " (" +
          std::to_string(done.shards) + " shards" +
          (table_count ? ", " + std::to_string(table_count) + " tables of " + std::to_string(rows) + " rows" : "") +
          ")" + (done.recreated ? "; workers register again" : "") +
          (reader.format_version() < 3 ? "; it holds no push counts (format version < 3): they start at 0" : ""));
    t.peers.session().restored(h.step, done.recreated);  // closed until the chief opens the next
    s.generation = t.peers.session().generation();
    detail::reply(out, p, h, protocol::message::reply_ok);
    // Requests of workers registered before a restore that re-created the session read values
    // that are gone (none are parked after a restore onto a fresh ps task).
    t.parked.erase_if([&](const parked_request& r) {
      const auto& from = t.peers.at(r.from);
      if (t.peers.current(from)) return false;
      const auto e = t.peers.aborted(from);
      detail::reply_error(out, r.from, r.request, e.code(), e.what());
      return true;
    });
    return after::retry_parked;
  }
};

}  // namespace dsgd::server::requests
