// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Embedding tables by key: create_table (an embedding::table_spec), table_pull (u64 LE keys,
/// answered with their rows once the table's rule lets the reader have them; evaluation reads
/// at once) and table_push (keys, then a gradient row each). A table request that fails a check
/// on its first chunk is read into scratch and its error answered at its last.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/detail/shard_replies.hpp>
#include <dsgd/server/detail/table_store.hpp>
#include <dsgd/server/requests/handler.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dsgd::server::requests {

/// Checks table request @p kind (table_pull, table_push) from its first header and sizes its
/// buffer, or marks it rejected (its payload then goes into a scratch chunk); names the chunk's
/// bytes. A pull's payload is whole u64 keys; a push's, whole (key, row) pairs of the table's
/// width; at most serving.max_rows_per_request keys.
template <class T>
std::span<std::byte> table_payload(T& t, table_peer& s, protocol::message kind, const transport::frame_header& h,
                                   error_code& ec) {
  const bool pull = kind == protocol::message::table_pull;
  return detail::keyed_chunk(
      s, h, ec,
      [&](table_peer& s) {
        const auto& table = t.tables.at(h.variable, t.self, protocol::to_string(kind));
        const std::size_t per_key = sizeof(std::uint64_t) + (pull ? 0 : table.dim() * sizeof(float));
        const auto what = [&] {
          return t.self + ": " + protocol::to_string(kind) + " of table '" + table.spec().name + "': ";
        };
        if (h.total_length % per_key != 0)
          throw error(errc::invalid_argument, what() + std::to_string(h.total_length) +
                                                  " bytes are not whole keys of " + std::to_string(per_key) + " bytes");
        const std::size_t n = h.total_length / per_key;
        if (n > t.opts.serving.max_rows_per_request)
          throw error(errc::invalid_argument, what() + std::to_string(n) + " keys in one request, more than the " +
                                                  std::to_string(t.opts.serving.max_rows_per_request) +
                                                  " this ps task takes (ps_options::serving.max_rows_per_request)");
        if (pull) {
          s.keys_in.resize(n);
        } else {
          s.sparse_keys = n;
          s.sparse_in.resize(h.total_length / sizeof(float));
        }
      },
      [&](table_peer& s) {
        return pull ? std::as_writable_bytes(std::span(s.keys_in)) : std::as_writable_bytes(std::span(s.sparse_in));
      });
}

/// Sends @p rows (keys x dim floats, owned by the reply until written) to @p p as the pull_reply
/// to @p request, at the table's step or clock @p step.
template <reply_sink S>
void send_rows(S& out, peer_id p, const transport::frame_header& request, std::shared_ptr<std::vector<float>> rows,
               std::uint64_t step) {
  auto header = detail::reply_header(request, protocol::message::pull_reply);
  header.step = step;
  auto bytes = std::as_bytes(std::span(*rows));
  out.send(p, outgoing_reply{header, bytes, std::move(rows)});
}

template <>
struct handler<protocol::message::create_table> {
  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer& s, const transport::frame_header& h, S& out) {
    auto spec = protocol::decode_control<embedding::table_spec>(detail::control_bytes(s), "create_table");
    auto [table, made] = t.tables.create(h.variable, spec, t.peers.replicas(), static_cast<int>(t.ps_index), t.self);
    if (made) {
      for (std::size_t r = 0; r < t.peers.replicas(); ++r)
        if (t.peers.finished(r)) table->finish(r);
      t.log(t.self + ": created table " + std::to_string(h.variable) + ", " + spec.describe());
    }
    detail::reply(out, p, h, protocol::message::reply_ok);
    return after::nothing;
  }
};

template <>
struct handler<protocol::message::table_pull> {
  static constexpr bool parks = true;

  template <class T>
  static std::span<std::byte> destination(T& t, table_peer& s, const transport::frame_header& h, error_code& ec) {
    return table_payload(t, s, protocol::message::table_pull, h, ec);
  }
  // Evaluation (shard 1) reads at once; a training pull waits as the table's rule says.
  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer& s, const transport::frame_header& h, S& out) {
    detail::throw_if_rejected(s);
    auto& table = t.tables.at(h.variable, t.self, "table_pull");
    if (h.shard == 1) {
      auto rows = std::make_shared<std::vector<float>>(s.keys_in.size() * table.dim());
      table.read(s.keys_in, *rows);
      send_rows(out, p, h, std::move(rows), table.step());
      return after::nothing;
    }
    if (h.shard != 0)
      throw error(errc::invalid_argument, t.self + ": table_pull of table '" + table.spec().name + "': shard " +
                                              std::to_string(h.shard) + " is neither 0 (training) nor 1 (evaluation)");
    return answer_or_park<protocol::message::table_pull>(t, p, h, out, std::move(s.keys_in));
  }
  template <class T, reply_sink S>
  static bool try_answer(T& t, const parked_request& r, S& out) {
    auto& table = t.tables.at(r.request.variable, t.self, "table_pull");
    auto rows = std::make_shared<std::vector<float>>(r.rows.size() * table.dim());
    auto at = table.try_pull(t.peers.at(r.from).replica, r.request.step, r.rows, *rows);
    if (!at) return false;
    send_rows(out, r.from, r.request, std::move(rows), *at);
    return true;
  }
  template <class T>
  static std::string why_waiting(const T& t, const parked_request& r) {
    const auto* table = t.tables.find(r.request.variable);
    return t.self + ": " +
           (table ? table->wait_reason(t.peers.at(r.from).replica, r.request.step) : std::string("no such table")) +
           t.peers.absent().describe();
  }
  template <class T>
  static auto timeout(const T& t) {
    return t.opts.serving.step_timeout;
  }
};

template <>
struct handler<protocol::message::table_push> {
  template <class T>
  static std::span<std::byte> destination(T& t, table_peer& s, const transport::frame_header& h, error_code& ec) {
    return table_payload(t, s, protocol::message::table_push, h, ec);
  }
  // The reply carries, besides the outcome and the table's step, the keys dropped (no row).
  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer& s, const transport::frame_header& h, S& out) {
    detail::throw_if_rejected(s);
    auto& table = t.tables.at(h.variable, t.self, "table_push");
    const std::size_t n = s.sparse_keys;
    std::vector<std::uint64_t> keys(n);
    if (n) std::memcpy(keys.data(), s.sparse_in.data(), n * sizeof(std::uint64_t));
    const std::span<const float> grads(s.sparse_in.data() + n * (sizeof(std::uint64_t) / sizeof(float)),
                                       n * table.dim());
    const auto done = table.push(s.replica, h.step, keys, grads);
    auto header = detail::reply_header(
        h, done.outcome == update::push_outcome::applied       ? protocol::message::push_applied
           : done.outcome == update::push_outcome::accumulated ? protocol::message::push_accumulated
                                                               : protocol::message::push_dropped);
    header.step = table.step();
    auto dropped = std::make_shared<std::uint64_t>(done.dropped_keys);
    out.send(p, outgoing_reply{header, std::as_bytes(std::span(dropped.get(), 1)), dropped});
    return done.outcome == update::push_outcome::applied ? after::retry_parked : after::nothing;
  }
};

// The counts of this ps task's part of a table, for the chief's summaries.
template <>
struct handler<protocol::message::table_stats> {
  template <class T, reply_sink S>
  static after answer(T& t, peer_id p, table_peer&, const transport::frame_header& h, S& out) {
    const auto& table = t.tables.at(h.variable, t.self, "table_stats");
    const auto s = table.stats();
    auto counts = std::make_shared<std::array<std::uint64_t, 7>>(std::array<std::uint64_t, 7>{
        table.rows(), table.bytes_used(), s.admitted, s.rejected, s.evicted, s.erased, table.dropped_keys()});
    auto header = detail::reply_header(h, protocol::message::reply_ok);
    header.step = table.step();
    auto bytes = std::as_bytes(std::span(*counts));
    out.send(p, outgoing_reply{header, bytes, std::move(counts)});
    return after::nothing;
  }
};

}  // namespace dsgd::server::requests
