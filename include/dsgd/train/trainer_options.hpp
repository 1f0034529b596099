// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// dsgd::trainer_options: the settings of every task of a training cluster, and the parts each
/// role takes from them (server::ps_options for a ps task, client::client_options for a worker).
#pragma once

#include <dsgd/client/options.hpp>
#include <dsgd/server/ps_options.hpp>
#include <dsgd/transport/asio_tcp.hpp>
#include <dsgd/update/concepts.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>

namespace dsgd {

/// Settings of a trainer; the policies are values with defaults.
template <class P, class U, class O>
struct trainer_options {
  /// Every connection of this task: the cluster token (every task must use the same one), TLS,
  /// caps, chunk size, payload CRCs, the dead-peer deadline, shared memory, the log (stderr when
  /// empty).
  transport::tcp_options connection{};
  /// ps tasks: what they do with requests (deadlines, limits). A worker waits as long for the
  /// chief to initialise the variables (ready_timeout).
  server::serving_options serving{.step_timeout = std::chrono::milliseconds{120'000},
                                  .ready_timeout = std::chrono::milliseconds{300'000}};
  /// Workers: connect retries (startup_timeout: how long to keep retrying an unreachable ps at
  /// start) and request deadlines. A request_timeout of 0 (the default) is derived from the ps
  /// deadlines: max(serving.step_timeout, serving.ready_timeout) + 30 s, so that a slow step is
  /// reported by the ps with its reason before the worker gives up.
  client::request_options requests{.startup_timeout = std::chrono::milliseconds{120'000},
                                   .request_timeout = std::chrono::milliseconds{0}};
  O optimizer{};  ///< how a ps applies a combined gradient
  U rule{};       ///< how a ps combines gradients
  P placement{};  ///< which ps task holds which variable
  /// How each variable's gradients travel to the ps (compress/: none, fp16, bf16, top_k,
  /// two_bit; one for all, overridable per variable). Workers and ps tasks take the same.
  compress::selection compression{};
  /// How each variable's values travel back to the workers on a dense pull (none, fp16, bf16;
  /// one for all, overridable per variable; sparse pulls stay plain). Workers and ps tasks
  /// take the same.
  compress::selection pull_compression{};
};

/// Checks @p o, naming a bad field by its path ("trainer_options.serving.step_timeout").
/// @throws dsgd::error(errc::invalid_argument)
template <class P, class U, class O>
void validate(const trainer_options<P, U, O>& o, std::string_view path = "trainer_options") {
  transport::validate(o.connection, std::string(path) + ".connection");
  server::validate(o.serving, std::string(path) + ".serving");
  compress::validate(o.compression, std::string(path) + ".compression");
  compress::validate_pull(o.pull_compression, std::string(path) + ".pull_compression");
  auto requests = o.requests;
  if (requests.request_timeout.count() == 0) requests.request_timeout = std::chrono::milliseconds{1};  // derived
  client::validate(requests, std::string(path) + ".requests");
}

/// @returns what a ps task of a cluster set up with @p o serves with: its connection, serving,
/// optimizer and rule settings.
template <class P, class U, class O>
server::ps_options<U, O> ps_options_of(const trainer_options<P, U, O>& o) {
  return {o.connection, o.serving, o.optimizer, o.rule, o.compression, o.pull_compression};
}

/// @returns what a worker of a cluster set up with @p o connects with: its connection and request
/// settings, a request_timeout of 0 derived from the ps deadlines (see trainer_options::requests).
template <class P, class U, class O>
client::client_options client_options_of(const trainer_options<P, U, O>& o) {
  client::client_options c{o.connection, o.requests, o.compression, o.pull_compression, update::describe_rule(o.rule)};
  if (c.requests.request_timeout.count() == 0)
    c.requests.request_timeout = std::max(o.serving.step_timeout, o.serving.ready_timeout) + std::chrono::seconds(30);
  return c;
}

}  // namespace dsgd
