// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// server::ps_options: the settings of a ps task, nested (CUTLASS's Arguments): the connection
/// settings every task shares, what the ps does with requests, and its two policies.
#pragma once

#include <dsgd/compress/selection.hpp>
#include <dsgd/detail/validate.hpp>
#include <dsgd/transport/asio_tcp.hpp>

#include <boost/asio/ip/address.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace dsgd::server {

/// What a ps task does with the requests it serves.
struct serving_options {
  /// A pull that the rule makes wait (sync: the step is not complete) fails after this with a
  /// message naming the workers it waits for.
  std::chrono::milliseconds step_timeout{60'000};
  /// A wait_ready fails after this when the chief has not created every shard.
  std::chrono::milliseconds ready_timeout{120'000};
  /// Once a chief has registered, the ps stops (join() throws errc::peer_lost naming it) when
  /// no chief has been connected for this long: the chief died and was not restarted, and only
  /// it could shut the cluster down. A chief restarted within it resumes. 0: wait forever.
  std::chrono::milliseconds chief_timeout{600'000};
  /// Apply a push that arrives in several chunks chunk by chunk, overlapping the apply with the
  /// rest of it arriving, where the rule and the optimizer can (update::streams_pushes); pushes from a
  /// worker whose payloads come through shared memory are applied whole. Off: every push is
  /// applied once complete.
  bool apply_in_chunks = true;
  /// Most keys one sparse_pull or sparse_push may carry; checked from the frame header before
  /// anything is allocated (a larger request is answered with an error naming the cap).
  std::size_t max_rows_per_request = std::size_t{1} << 22;
  /// Where the ps listens (cluster::listen_endpoint): "" its cluster-spec address; "*" any
  /// address, IPv6 and IPv4, as a pod whose dialled name is a Service's needs; an IP address;
  /// or "if:NAME", the address of a network interface. The port is always the spec's.
  std::string listen;
  /// Elastic workers (docs/reliability.md, "Elastic workers"): 0, the cluster spec's replicas
  /// (chief and workers) all take part from the start and a sync step waits for every one;
  /// N >= 1, they are slots (at most that many, MAX), a replica is a member from its
  /// registration until its connection is lost or it finished, a sync step averages the
  /// members present and needs at least N of them (finished ones count). dsgd-launch
  /// --workers MIN:MAX sets DSGD_MIN_REPLICAS for programs to pass here.
  std::size_t min_replicas = 0;
  /// Elastic jobs: called on a serving thread, one call at a time, with the members and the
  /// global step after every change of membership (a summary's "membership/workers"; dsgd-train
  /// writes it). Empty: none.
  std::function<void(std::size_t members, std::uint64_t step)> on_membership;
  /// Threads serving the connections (TCP: a transport that serves_threads): 1, the thread
  /// calling join() does all; N > 1, join() and N - 1 more run the connections' reads, writes,
  /// checksums and TLS side by side, each connection on a strand of its own, while the shards
  /// and every request's bookkeeping stay behind one lock (docs/design.md, "Threads of a ps").
  std::size_t threads = 1;
};

/// Checks @p o, naming a bad field by its path (@p path: "serving_options", "trainer_options.ps").
/// @throws dsgd::error(errc::invalid_argument)
inline void validate(const serving_options& o, std::string_view path = "serving_options") {
  dsgd::detail::require_deadline(o.step_timeout, path, "step_timeout");
  dsgd::detail::require_deadline(o.ready_timeout, path, "ready_timeout");
  if (o.chief_timeout.count() < 0)
    dsgd::detail::bad_option(path, "chief_timeout", "must not be negative (0: wait for the chief forever)");
  dsgd::detail::require_positive(o.max_rows_per_request, path, "max_rows_per_request");
  if (o.threads == 0 || o.threads > 1024)
    dsgd::detail::bad_option(path, "threads", "is " + std::to_string(o.threads) + "; expected 1 to 1024");
  if (!o.listen.empty() && o.listen != "*" && !o.listen.starts_with("if:")) {
    error_code ec;
    boost::asio::ip::make_address(o.listen, ec);
    if (ec)
      dsgd::detail::bad_option(path, "listen",
                               "\"" + o.listen + "\": expected \"\", \"*\", an IP address or \"if:NAME\"");
  }
}

/// Settings of a ps task.
/// @code
///   server::ps_options<update::sync_average, optim::momentum> o{
///       .connection = {.token = "secret"}, .serving = {.step_timeout = 5s}, .optimizer = {.learning_rate = 0.1f}};
/// @endcode
template <class U, class O>
struct ps_options {
  /// Every connection's settings: the cluster token, caps, chunk size, payload CRCs, TLS, the
  /// dead-peer deadline, shared memory, the log (stderr when empty). The ps fills in its own
  /// identity and which peers it accepts.
  transport::tcp_options connection{};
  serving_options serving{};  ///< deadlines and limits of the requests it serves
  O optimizer{};              ///< how a combined gradient changes a variable
  U rule{};                   ///< how gradients are combined (sync_average, async, ...)
  /// How each variable's pushes arrive (compress/): workers must register with the same.
  compress::selection compression{};
  /// How each variable's values are sent to workers that pull (none, fp16, bf16): workers must
  /// register with the same.
  compress::selection pull_compression{};
};

/// Checks @p o (its connection and serving settings), naming a bad field by its path.
/// @throws dsgd::error(errc::invalid_argument)
template <class U, class O>
void validate(const ps_options<U, O>& o, std::string_view path = "ps_options") {
  transport::validate(o.connection, std::string(path) + ".connection");
  validate(o.serving, std::string(path) + ".serving");
  compress::validate(o.compression, std::string(path) + ".compression");
  compress::validate_pull(o.pull_compression, std::string(path) + ".pull_compression");
}

}  // namespace dsgd::server
