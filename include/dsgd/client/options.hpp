// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// client::client_options: the settings of a worker's connections to the ps tasks, nested: the
/// connection settings every task shares and the deadlines of the worker's requests.
#pragma once

#include <dsgd/compress/selection.hpp>
#include <dsgd/detail/validate.hpp>
#include <dsgd/transport/asio_tcp.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace dsgd::client {

/// How a worker connects and how long its requests may take.
struct request_options {
  /// connect() retries an unreachable ps with exponential backoff until this has passed, then
  /// fails naming every ps task it could not reach (a worker may start before its ps).
  std::chrono::milliseconds startup_timeout{60'000};
  std::chrono::milliseconds initial_backoff{50};  ///< the first retry's wait
  std::chrono::milliseconds max_backoff{2'000};   ///< the longest wait between retries
  /// A request without an answer after this fails with errc::timed_out naming the ps task. Keep
  /// it above the ps's step_timeout, so that a slow step is reported by the ps with its reason.
  std::chrono::milliseconds request_timeout{180'000};
};

/// Checks @p o, naming a bad field by its path.
/// @throws dsgd::error(errc::invalid_argument)
inline void validate(const request_options& o, std::string_view path = "request_options") {
  dsgd::detail::require_deadline(o.startup_timeout, path, "startup_timeout");
  dsgd::detail::require_deadline(o.initial_backoff, path, "initial_backoff");
  if (o.max_backoff < o.initial_backoff)
    dsgd::detail::bad_option(path, "max_backoff", "must be at least initial_backoff");
  dsgd::detail::require_deadline(o.request_timeout, path, "request_timeout");
}

/// Settings of a worker's connections to the ps tasks.
struct client_options {
  /// Every connection's settings (token, TLS, caps, CRCs, shared memory, log, ...); the client
  /// fills in its own identity.
  transport::tcp_options connection{};
  request_options requests{};  ///< connect retries and request deadlines
  /// How each variable's pushes are encoded (compress/); the ps tasks must hold the same.
  compress::selection compression{};
  /// How each variable's values come back from the ps (none, fp16, bf16); the ps tasks must
  /// serve the same.
  compress::selection pull_compression{};
  /// The update rule's settings (update::describe_rule: "bounded_staleness(3)"), sent at
  /// registration; a ps whose rule has other settings refuses this worker. The trainer sets it;
  /// left empty, the ps does not check them.
  std::string rule{};
};

/// Checks @p o, naming a bad field by its path.
/// @throws dsgd::error(errc::invalid_argument)
inline void validate(const client_options& o, std::string_view path = "client_options") {
  transport::validate(o.connection, std::string(path) + ".connection");
  validate(o.requests, std::string(path) + ".requests");
  compress::validate(o.compression, std::string(path) + ".compression");
  compress::validate_pull(o.pull_compression, std::string(path) + ".pull_compression");
}

}  // namespace dsgd::client
