// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// server::detail::table_state: what a shard_table's request handlers act on. The task's name
/// and settings and its parts, each behind its own interface: the shards (shard_store), the
/// peers and the session (peer_registry), the parked requests, the compressed pulls'
/// encodings, and the embedding tables (table_store).
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/server/detail/compressed_pull.hpp>
#include <dsgd/server/detail/parked_requests.hpp>
#include <dsgd/server/detail/peer_registry.hpp>
#include <dsgd/server/detail/shard_store.hpp>
#include <dsgd/server/detail/table_store.hpp>
#include <dsgd/server/ps_options.hpp>
#include <dsgd/update/concepts.hpp>
#include <dsgd/update/sync_average.hpp>

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>

namespace dsgd::server::detail {

/// The parts of ps task @p self's table under rule @p U, optimizer @p O, on device @p D.
template <UpdateRule U, class O, Device D>
struct table_state {
  using options = ps_options<U, O>;
  using shard_type = typename U::template shard<D, O>;
  using device_type = D;

  table_state(cluster::task_id task, std::size_t ps_tasks, std::size_t replicas, options o, D device)
      : self(task.to_string()),
        ps_index(static_cast<std::size_t>(task.index)),
        ps_tasks(ps_tasks),
        opts(std::move(o)),
        shards(self, replicas, opts.rule, opts.optimizer, std::move(device)),
        peers(self, replicas, opts.serving, opts.connection.log) {}

  void log(const std::string& s) const { opts.connection.log(s); }

  /// @returns whether no sync step can complete: more replicas refused at authentication than
  /// backups (never for other rules, nor where an elastic job does not count a refused replica
  /// as a member).
  bool stalled_by_refusals() const {
    if constexpr (std::is_same_v<U, update::sync_average>)
      return !peers.members().elastic() && peers.absent().stall_sync(opts.rule.replicas_to_aggregate, peers.replicas());
    else return false;
  }

  std::string self;  ///< "ps:0"
  std::size_t ps_index;
  std::size_t ps_tasks;
  options opts;
  shard_store<U, O, D> shards;
  peer_registry peers;
  parked_requests parked;
  pull_encodings encodings;  ///< compressed pulls' replies, encoded once per version
  table_store tables;        ///< the embedding tables, each under its own rule
};

}  // namespace dsgd::server::detail
