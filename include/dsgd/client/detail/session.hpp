// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Sessions (protocol/messages.hpp, "Sessions"), the workers' side: the chief's fresh stamp,
/// and a worker's wait until every ps task answers the same stamp (the ps side is
/// server/detail/ps_session.hpp).
// IWYU pragma: private
#pragma once

#include <dsgd/client/detail/request_table.hpp>
#include <dsgd/detail/retry.hpp>
#include <dsgd/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace dsgd::client::detail {

/// @returns a fresh session stamp: random, never 0 (0 means no session is open).
inline std::uint64_t new_session_stamp() {
  std::random_device entropy;
  std::uint64_t stamp = 0;
  while (stamp == 0) stamp = (std::uint64_t{entropy()} << 32) ^ entropy();
  return stamp;
}

/// Worker: calls @p ask (every ps task's wait_ready answer, in ps order; step: its stamp) until
/// all stamps agree, with backoff (dsgd::detail::retry_until).
/// @throws dsgd::error errc::timed_out once they still differ at @p deadline, naming each ps
///         task (@p name(i)) with its stamp; what @p ask throws
template <class Ask, class Name>
void await_one_session(Ask ask, Name name, const std::string& me, std::chrono::steady_clock::time_point deadline,
                       std::chrono::milliseconds backoff, std::chrono::milliseconds max_backoff) {
  std::vector<reply> replies;
  const bool agreed = dsgd::detail::retry_until(deadline, backoff, max_backoff, [&] {
    replies = ask();
    return std::all_of(replies.begin(), replies.end(), [&](const reply& r) { return r.step == replies.front().step; });
  });
  if (agreed) return;
  std::string stamps;
  for (std::size_t i = 0; i < replies.size(); ++i)
    stamps += (i ? ", " : "") + name(i) + " " + std::to_string(replies[i].step);
  throw error(errc::timed_out, me + ": the ps tasks still hold different sessions at the deadline (" + stamps +
                                   "): a chief's restore or initialisation reached only some of them");
}

}  // namespace dsgd::client::detail
