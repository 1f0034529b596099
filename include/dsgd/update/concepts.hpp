// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The UpdateRule concept: how a ps task combines the gradients workers push; and the optional
/// capabilities of a rule's shard that a ps uses where a shard has them.
#pragma once

#include <dsgd/device/concepts.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/update/detail/archetypes.hpp>

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

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

/// What a checkpoint holds of a shard, in host memory: its values and step, and the
/// optimizer's slots (one float per element) and counters by name (Optimizer's `visit`). A
/// shard's `saved_state` is this type or one with the same members.
struct shard_state {
  std::uint64_t step = 0;                                         ///< the shard's step
  std::vector<float> values;                                      ///< the shard's values
  std::vector<std::pair<std::string, std::vector<float>>> slots;  ///< e.g. "velocity"
  std::vector<std::pair<std::string, std::uint64_t>> counters;    ///< e.g. "t" of adam
};

/// True for a rule that applies each push on its own, whatever step it was computed at (async,
/// bounded_staleness): a worker's pushes then form one sequence, which lets a restarted worker
/// complete a push that reached only some shards (ps_client::push's `skip_received`). A rule
/// says so with `static constexpr bool applies_each_push = true;`; sync rules, whose pushes
/// are told apart by their step, do not.
template <class U>
inline constexpr bool applies_each_push_v = requires {
  requires U::applies_each_push;
};

/// @returns rule @p u's settings as text where it has a `describe()` ("bounded_staleness(3)"),
/// else "": a worker's registration carries it, and a ps whose own rule describes itself
/// otherwise refuses the worker, naming both (a rule's settings must agree across the job).
template <class U>
std::string describe_rule(const U& u) {
  if constexpr (requires {
                  { u.describe() } -> std::convertible_to<std::string>;
                })
    return u.describe();
  else return {};
}

/// A saved shard as checkpoints write and read it: shard_state's members.
template <class S>
concept saved_shard_state = std::default_initializable<S> && requires(S& s) {
  { s.step } -> std::convertible_to<std::uint64_t>;
  { s.values } -> std::convertible_to<std::vector<float>>;
  s.slots.emplace_back(std::string(), std::vector<float>());
  s.counters.emplace_back(std::string(), std::uint64_t{0});
};

/// The members every shard of an UpdateRule has: the small core the ps calls on every rule (see
/// UpdateRule for what each does). What only some rules do is an optional capability below.
template <class S>
concept rule_shard = saved_shard_state<typename S::saved_state> &&
    requires(S& s, const S& cs, const float* g, float* out, std::span<const float> v,
             const typename S::saved_state& saved) {
  { cs.size() } -> std::convertible_to<std::size_t>;
  { s.push(std::size_t{0}, std::uint64_t{0}, g) } -> std::same_as<push_outcome>;
  { s.try_pull(std::size_t{0}, std::uint64_t{0}, out) } -> std::same_as<std::optional<std::uint64_t>>;
  { s.wait_reason(std::size_t{0}, std::uint64_t{0}) } -> std::convertible_to<std::string>;
  s.finish(std::size_t{0});
  { s.step() } -> std::same_as<std::uint64_t>;
  { s.dropped() } -> std::same_as<std::uint64_t>;
  s.assign(v, std::uint64_t{0});
  { s.save() } -> std::same_as<typename S::saved_state>;
  s.restore(saved);
};

/// A shard that reads and updates by rows, as an embedding table is (sparse_pull, sparse_push):
/// `push_rows(worker, step, rows, dim, grads) -> push_outcome`, rows local to the
/// shard, @p dim floats wide, host memory, counting as one gradient; `try_pull_rows(worker,
/// step, rows, dim, out)`. The shards of the built-in rules do; a ps whose rule's shards do not
/// answers a sparse request with errc::invalid_argument naming the rule.
template <class S>
concept keyed_rows = requires(S& s, const float* g, float* out, std::span<const std::uint64_t> rows) {
  { s.push_rows(std::size_t{0}, std::uint64_t{0}, rows, std::size_t{1}, g) } -> std::same_as<push_outcome>;
  {
    s.try_pull_rows(std::size_t{0}, std::uint64_t{0}, rows, std::size_t{1}, out)
    } -> std::same_as<std::optional<std::uint64_t>>;
};

/// A shard that can lend its current values for a pull reply without a copy (try_pin(), as
/// the shards of the built-in rules do); other rules' pulls go through a snapshot copy.
template <class S>
concept pins_values = requires(S& s) {
  { s.try_pin(std::size_t{0}, std::uint64_t{0})->values->data() } -> std::convertible_to<const float*>;
  { s.try_pin(std::size_t{0}, std::uint64_t{0})->step } -> std::convertible_to<std::uint64_t>;
};

/// A shard that applies a push chunk by chunk as it arrives (push_chunk, then push_streamed
/// with the whole gradient), as the async and bounded-staleness shards do for optimizers with
/// an update::chunked_apply; other shards apply a push once it is complete.
template <class S>
concept streams_pushes = requires(S& s, const float* g) {
  { s.push_chunk(std::size_t{0}, std::size_t{0}, std::size_t{0}, g) } -> std::same_as<bool>;
  { s.push_streamed(std::size_t{0}, std::uint64_t{0}, g) } -> std::same_as<push_outcome>;
};

/// A shard that takes a push as a function adding the gradient into the rule's accumulator
/// (update::sync_average): `push_decoded(worker, step, add)` calls `add(acc)` with
/// the accumulator (its size() floats, device memory) once the push is admitted, so a
/// compressed push is decoded straight into it, with no full-size temporary. Other shards get
/// a compressed push decoded into the ps's receive buffer, then push().
template <class S>
concept accumulates_decoded = requires(S& s) {
  {
    s.push_decoded(std::size_t{0}, std::uint64_t{0}, [](float*) {})
    } -> std::same_as<push_outcome>;
};

/// A shard that is told when a worker's connection is lost and when it registers again
/// (update::sync_average, whose backups then stand in for a dead worker and whose elastic steps
/// average the members present; update::bounded_staleness, whose bound counts only members).
template <class S>
concept tracks_departures = requires(S& s) {
  s.depart(std::size_t{0});
  s.rejoin(std::size_t{0});
};

}  // namespace update

/// An UpdateRule @p U makes, for any Device D and Optimizer O, a `U::shard<D, O>`: the state of
/// one variable shard on a ps task, safe to use from many threads, with (update::rule_shard)
///  - `shard(device, initial_values_host, optimizer, workers)`, `size()`: its element count;
///  - `push(worker, step, grad) -> push_outcome`: a gradient (raw pointer into device memory)
///    computed at `step`; it never blocks (a sync push that completes the step applies it);
///  - `try_pull(worker, step, out) -> std::optional<std::uint64_t>`: if the rule lets `worker`
///    read at `step` now, copies a consistent snapshot into `out` and returns the shard's step
///    (else nullopt: the ps parks the request and asks again after the next push or finish);
///  - `wait_reason(worker, step)`: what such a pull waits for ("" when it need not wait);
///  - `finish(worker)`: the worker has no more data (uneven data ends cleanly);
///  - `step()`, `dropped()`: the global step and the count of stale or duplicate pushes dropped;
///  - `assign(values, step)`, `save() -> saved_state`, `restore(saved_state)`: checkpoints,
///    with `saved_state` an update::shard_state or alike;
/// and the rule itself provides
///  - `U::next_pull(pushed_at, pushes)`: the step a worker asks for after pushing a gradient
///    computed at `pushed_at`, its `pushes`-th (sync: the next step; SSP: its clock; async: 0);
///  - `u.make_shard<D, O>(device, initial, optimizer, workers)`: a new shard, as a unique_ptr.
/// A shard may add the capabilities update::keyed_rows, pins_values, streams_pushes,
/// accumulates_decoded and tracks_departures: the ps uses each where a shard has it. The concept is
/// checked on a device and an optimizer that model only their concepts (update/detail/
/// archetypes.hpp). Rules are pure: they know nothing of the network. See docs/policies.md.
template <class U>
concept UpdateRule = std::copy_constructible<U> && update::rule_shard<
    typename U::template shard<update::detail::archetype_device, update::detail::archetype_optimizer>> &&
    requires(const U& u, std::span<const float> initial) {
  { U::next_pull(std::uint64_t{0}, std::uint64_t{0}) } -> std::same_as<std::uint64_t>;
  {
    u.template make_shard<update::detail::archetype_device, update::detail::archetype_optimizer>(
        update::detail::archetype_device{}, initial, update::detail::archetype_optimizer{}, std::size_t{1})
    } -> std::same_as<std::unique_ptr<
        typename U::template shard<update::detail::archetype_device, update::detail::archetype_optimizer>>>;
};

namespace update {

/// `static_assert(update::checked_rule<U>)` where a rule is used: true, or a compile error that
/// says what is wrong before the compiler lists the unmet requirements.
template <class U>
inline constexpr bool checked_rule = [] {
  static_assert(UpdateRule<U>,
                "this type is no dsgd::UpdateRule: it needs a copyable rule with next_pull and make_shard, whose "
                "shard<D, O> has size, push, try_pull, wait_reason, finish, step, dropped, assign, save, restore "
                "and a saved_state (see update/concepts.hpp)");
  return true;
}();

}  // namespace update

}  // namespace dsgd
