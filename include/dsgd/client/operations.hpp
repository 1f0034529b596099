// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// client::pull_operation and client::push_operation: a pull or a push of a ps_client whose
/// requests go out in parts and whose answers are collected in parts, so that a worker overlaps
/// them with its compute. Each holds only its own state; ps_client drives both.
#pragma once

#include <dsgd/client/detail/request_table.hpp>
#include <dsgd/placement/plan.hpp>
#include <dsgd/transport/concepts.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dsgd::client {

template <Transport T>
class basic_ps_client;

/// A pull in flight: returned by ps_client::start_pull(), which sends every request; waited for
/// by ps_client::wait(op, v) (one variable's values) and ps_client::wait(op) (all). Every answer
/// is collected before the operation ends, also when one of them fails, so that no late reply
/// writes into a buffer the caller has moved on from. Single-use; move-only.
class pull_operation {
 public:
  /// An operation that sent nothing (nothing pending).
  pull_operation() = default;
  pull_operation(pull_operation&&) noexcept = default;             ///< takes over @p other's requests
  pull_operation& operator=(pull_operation&&) noexcept = default;  ///< takes over @p other's requests
  pull_operation(const pull_operation&) = delete;
  pull_operation& operator=(const pull_operation&) = delete;

  /// @returns whether requests are sent and not all of their answers collected.
  bool pending() const noexcept { return parts_.pending(); }

 private:
  template <Transport T>
  friend class basic_ps_client;
  detail::request_parts parts_;
  std::uint64_t step_ = 0;  // the step asked
};

/// A push in flight: opened by ps_client::start_push(), which sends nothing yet;
/// ps_client::push_variable() sends one variable's gradient, ps_client::finish_push() sends the
/// rest, collects every answer and counts the push. Single-use; move-only.
class push_operation {
 public:
  /// An operation that sent nothing (nothing pending).
  push_operation() = default;
  push_operation(push_operation&&) noexcept = default;             ///< takes over @p other's requests
  push_operation& operator=(push_operation&&) noexcept = default;  ///< takes over @p other's requests
  push_operation(const push_operation&) = delete;
  push_operation& operator=(const push_operation&) = delete;

  /// @returns whether requests are sent and not all of their answers collected.
  bool pending() const noexcept { return parts_.pending(); }
  /// @returns whether variable @p v has been sent.
  bool sent(std::size_t v) const noexcept { return v < sent_.size() && sent_[v]; }

 private:
  template <Transport T>
  friend class basic_ps_client;
  detail::request_parts parts_;
  const placement::plan* plan_ = nullptr;
  std::uint64_t step_ = 0;                     // the step the gradients were computed at
  std::vector<std::span<const float>> grads_;  // one span per variable
  std::vector<bool> sent_;                     // variables sent
  std::vector<std::size_t> shards_;            // every shard it goes to (plan index)
  std::uint64_t lowest_received_ = 0;          // see ps_client::send_push()
  bool skip_received_ = false;
};

}  // namespace dsgd::client
