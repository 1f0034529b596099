// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The UpdateRule concept: how a ps task combines the gradients workers push.
#pragma once

#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/sgd.hpp>

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace dsgd {

namespace update {

/// What a push did.
enum class push_outcome {
  accumulated,  ///< kept, waiting for the other replicas of this step (sync)
  applied,      ///< the variable changed (async, SSP, or the push that completed a sync step)
  dropped,      ///< stale (computed at an older step) or a second push in the same step
};

/// The clock a ps task uses for deadlines.
using clock_type = std::chrono::steady_clock;

/// True for a rule that applies each push on its own, whatever step it was computed at (async,
/// bounded_staleness): a worker's pushes then form one sequence, which lets a restarted worker
/// complete a push that reached only some shards (ps_client::push's `skip_received`). A rule
/// says so with `static constexpr bool applies_each_push = true;`; sync rules, whose pushes
/// are told apart by their step, do not.
template <class U>
inline constexpr bool applies_each_push_v = requires { requires U::applies_each_push; };

}  // namespace update

/// An UpdateRule @p U makes, for device D and optimizer O, a `U::shard<D, O>`: the state of one
/// variable shard on a ps task, safe to use from many threads, with
///  - `shard(device, initial_values_host, optimizer, workers)`;
///  - `push(worker, step, grad, deadline) -> push_outcome`: a gradient (raw pointer into
///    device memory) computed at `step`;
///  - `pull(worker, step, out, deadline) -> std::uint64_t`: waits until the rule lets `worker`
///    read at `step`, copies a consistent snapshot into `out` and returns the shard's step;
///  - `try_pull(worker, step, out) -> std::optional<std::uint64_t>`: the same without waiting
///    (a ps serving many connections from one thread parks the request instead);
///  - `wait_reason(worker, step)`: what such a pull waits for, for the deadline's message;
///  - `finish(worker)`: the worker has no more data (uneven data ends cleanly);
///  - `step()`, `dropped()`: the global step and the count of stale or duplicate pushes dropped;
/// and the rule itself provides
///  - `U::next_pull(pushed_at, pushes)`: the step a worker asks for after pushing a gradient
///    computed at `pushed_at`, its `pushes`-th (sync: the next step; SSP: its clock; async: 0);
///  - `u.make_shard<D, O>(device, initial, optimizer, workers)`: a new shard, as a unique_ptr.
/// Rules are pure: they know nothing of the network. See docs/policies.md.
template <class U>
concept UpdateRule =
    std::copy_constructible<U> &&
    requires(const U& u, typename U::template shard<device::cpu, optim::sgd>& s, const float* g, float* out,
             update::clock_type::time_point t, std::span<const float> initial) {
      { U::next_pull(std::uint64_t{0}, std::uint64_t{0}) } -> std::same_as<std::uint64_t>;
      u.template make_shard<device::cpu, optim::sgd>(device::cpu{}, initial, optim::sgd{}, std::size_t{1});
      { s.push(std::size_t{0}, std::uint64_t{0}, g, t) } -> std::same_as<update::push_outcome>;
      { s.pull(std::size_t{0}, std::uint64_t{0}, out, t) } -> std::same_as<std::uint64_t>;
      { s.try_pull(std::size_t{0}, std::uint64_t{0}, out) } -> std::same_as<std::optional<std::uint64_t>>;
      { s.wait_reason(std::size_t{0}, std::uint64_t{0}) } -> std::convertible_to<std::string>;
      s.finish(std::size_t{0});
      { s.step() } -> std::same_as<std::uint64_t>;
      { s.dropped() } -> std::same_as<std::uint64_t>;
    };

}  // namespace dsgd
