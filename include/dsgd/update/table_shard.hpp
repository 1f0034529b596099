// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// update::table_shard: one ps task's part of a dynamic embedding table under an update rule:
/// pulls and pushes of rows by 64-bit key, with sync_average, async or bounded_staleness
/// semantics, the row optimizer applied to the rows a step touched only.
#pragma once

#include <dsgd/embedding/detail/counter_hash.hpp>
#include <dsgd/embedding/row_table.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/concepts.hpp>
#include <dsgd/update/sync_average.hpp>

#include <tsl/robin_map.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace dsgd::update {

/// What a push to a table shard did: the push's outcome as a dense push's (applied, accumulated
/// for its step, or dropped whole as stale or a second push of the step) and how many of its
/// keys had their gradient dropped because the key had no row (not admitted, or evicted since
/// the pull that read it).
struct table_push_result {
  push_outcome outcome = push_outcome::applied;
  std::size_t dropped_keys = 0;
};

/// A table shard's counters besides its rows (table_shard::counters()): what a checkpoint saves
/// so that training continues exactly after a restore.
struct table_shard_counters {
  std::uint64_t step = 0;             ///< sync: the steps applied
  std::uint64_t updates = 0;          ///< the updates applied (optim::row_step::t: lazy Adam's t)
  std::uint64_t dropped_keys = 0;     ///< gradient rows dropped (no row)
  std::uint64_t dropped_pushes = 0;   ///< pushes dropped whole (sync: stale or a second one)
  std::vector<std::uint64_t> clocks;  ///< bounded_staleness: each worker's pushes (empty otherwise)
  friend bool operator==(const table_shard_counters&, const table_shard_counters&) = default;
};

/// One ps task's part of a dynamic embedding table (an embedding::row_table) under update rule
/// @p U, its rows updated by row optimizer @p O (optim::row_optimizer), each row's optimizer
/// state kept next to it in the table.
///
/// - **sync_average**: a push is tagged with the step its rows were pulled at; the pushes of a
///   step are summed by key, and once every unfinished worker pushed (replicas_to_aggregate 0:
///   backups are not offered for tables), their mean is applied to the keys they touched, in
///   ascending key order. Admission is decided there, once per key and step
///   (`find_or_admit(key, step)`): a key pushed in a step counts one sighting, whichever workers
///   pushed it, so the cluster equals one process that pulls, computes and pushes the
///   concatenated batch, bit for bit up to the float sums' order. Pulls wait for the step and
///   read rows without admitting (a key without a row reads its initial row). A stale push (an
///   older step) or a second push of one worker in a step is dropped whole and counted.
/// - **async** and **bounded_staleness**: a training pull admits (`find_or_admit` at the
///   shard's update count): it creates the rows admission lets in and reads the others'
///   initial rows; a push is applied at once to the keys that have a row, and the gradients of
///   the others (not admitted, or evicted since their pull) are dropped and counted. Under
///   bounded_staleness a pull at clock c waits until the slowest unfinished worker has pushed
///   c - S times.
///
/// Every apply is one update of the table (`optim::row_step::t`, lazy Adam's bias correction).
/// A push's duplicate keys are summed first. Evaluation reads (read()) never admit or touch a
/// row. Thread-safe: every member takes the shard's lock; a waiting pull waits on a condition
/// variable with its deadline and then throws errc::timed_out naming whom it waits for.
///
/// @tparam Table an embedding::row_table whose state_floats is `o.row_slots(dim)`
///         (table_shard::prepare() fills them in).
template <UpdateRule U, optim::row_optimizer O, class Table>
class table_shard {
  static constexpr bool sync = std::is_same_v<U, sync_average>;
  static constexpr bool ssp = std::is_same_v<U, bounded_staleness>;
  static_assert(sync || ssp || std::is_same_v<U, async>,
                "update::table_shard: tables follow sync_average, async or bounded_staleness");

 public:
  /// @returns @p options with the row state @p o keeps: state_floats and initial_state.
  static embedding::table_options prepare(embedding::table_options options, const O& o) {
    options.state_floats = o.row_slots(options.dim);
    options.initial_state.assign(options.state_floats, 0.f);
    if (options.state_floats != 0) o.init_row_slots(options.initial_state.data(), options.dim);
    return options;
  }

  /// A shard holding @p table, updated by @p optimizer, for @p workers workers under @p rule.
  /// @throws dsgd::error (errc::invalid_argument) for no workers, a table whose state does not
  ///         fit the optimizer, or sync_average with replicas_to_aggregate (backups) set
  table_shard(Table table, O optimizer, std::size_t workers, U rule = {})
      : table_(std::move(table)),
        optimizer_(std::move(optimizer)),
        rule_(rule),
        workers_(workers),
        finished_(workers, false),
        pushed_(workers, false),
        clocks_(workers, 0) {
    const std::string who = "update::table_shard(" + table_.name() + ")";
    if (workers == 0) throw error(errc::invalid_argument, who + ": no workers");
    if (table_.state_floats() != optimizer_.row_slots(table_.dim()))
      throw error(errc::invalid_argument, who + ": the table keeps " + std::to_string(table_.state_floats()) +
                                              " state floats a row, its optimizer " +
                                              std::to_string(optimizer_.row_slots(table_.dim())) +
                                              " (make its options with table_shard::prepare)");
    if constexpr (sync) {
      if (rule_.replicas_to_aggregate != 0 && rule_.replicas_to_aggregate != workers)
        throw error(errc::invalid_argument,
                    who + ": sync_average with replicas_to_aggregate " + std::to_string(rule_.replicas_to_aggregate) +
                        " of " + std::to_string(workers) + " workers: backup workers are not offered for tables");
    }
  }

  /// The lookup of a training step: waits until the rule lets @p worker read at @p step (sync:
  /// the shard's step is at least @p step; SSP: @p step is the worker's clock, within S of the
  /// slowest unfinished worker; async: never waits), then writes the row of each of @p keys to
  /// @p out (keys.size() x dim), admitting keys under async and SSP (see the class).
  /// @returns the shard's step (sync), the worker's clock (SSP) or update count (async).
  /// @throws dsgd::error: errc::shape_mismatch for @p out of another size, errc::timed_out past
  ///         @p deadline naming whom it waited for, errc::invalid_argument for a worker out of
  ///         range or a table at its cap that may not evict (nothing written then)
  std::uint64_t pull(std::size_t worker, std::uint64_t step, std::span<const std::uint64_t> keys, std::span<float> out,
                     clock_type::time_point deadline) {
    check_out(keys, out, "pull");
    std::unique_lock lock(mutex_);
    check_worker(worker, "pull");
    if (!cv_.wait_until(lock, deadline, [&] { return ready(step); }))
      throw error(errc::timed_out, reason(worker, step));
    return fill_locked(worker, keys, out);
  }

  /// pull() that never waits, for a ps that parks the request instead: nothing, and nothing
  /// written, while the rule makes @p worker wait (wait_reason() says why).
  std::optional<std::uint64_t> try_pull(std::size_t worker, std::uint64_t step, std::span<const std::uint64_t> keys,
                                        std::span<float> out) {
    check_out(keys, out, "pull");
    std::lock_guard lock(mutex_);
    check_worker(worker, "pull");
    if (!ready(step)) return std::nullopt;
    return fill_locked(worker, keys, out);
  }

  /// @returns why a pull of @p worker at @p step waits now ("" when it would not).
  std::string wait_reason(std::size_t worker, std::uint64_t step) const {
    std::lock_guard lock(mutex_);
    return ready(step) ? std::string() : reason(worker, step);
  }

  /// The lookup of an evaluation: each key's row, or its initial row; never waits, admits,
  /// creates or touches a row. @throws dsgd::error (errc::shape_mismatch) for @p out of
  /// another size
  void read(std::span<const std::uint64_t> keys, std::span<float> out) const {
    check_out(keys, out, "read");
    std::lock_guard lock(mutex_);
    const std::size_t dim = table_.dim();
    for (std::size_t i = 0; i < keys.size(); ++i) table_.read(keys[i], out.subspan(i * dim, dim));
  }

  /// The gradient rows @p grads (keys.size() x dim) of @p keys from @p worker, computed on rows
  /// pulled at @p step (sync; the other rules ignore it): summed into the step (sync) or
  /// applied at once (async, SSP).
  /// @throws dsgd::error: errc::shape_mismatch for @p grads of another size, errc::
  ///         invalid_argument for a NaN or infinite gradient (naming the key; nothing applied),
  ///         a worker out of range, a sync push from a step the shard has not reached
  table_push_result push(std::size_t worker, std::uint64_t step, std::span<const std::uint64_t> keys,
                         std::span<const float> grads) {
    check_out(keys, grads, "push");
    check_finite(keys, grads);
    std::unique_lock lock(mutex_);
    check_worker(worker, "push");
    if constexpr (sync) {
      if (step > step_)
        throw error(errc::invalid_argument, who() + "::push: worker " + std::to_string(worker) + " pushed for step " +
                                                std::to_string(step) + " but the shard is at step " +
                                                std::to_string(step_));
      if (step < step_ || pushed_[worker]) {
        ++dropped_pushes_;
        return {push_outcome::dropped, 0};
      }
      add_to_step(keys, grads);
      pushed_[worker] = true;
      ++count_;
      if (!step_complete()) return {push_outcome::accumulated, 0};
      return {push_outcome::applied, apply_step()};
    } else {
      const std::size_t dropped = apply_now(keys, grads);
      if constexpr (ssp) ++clocks_[worker];
      cv_.notify_all();
      return {push_outcome::applied, dropped};
    }
  }

  /// @p worker has no more data: it no longer holds a step or the slowest clock back.
  void finish(std::size_t worker) {
    std::lock_guard lock(mutex_);
    check_worker(worker, "finish");
    finished_[worker] = true;
    if constexpr (sync)
      if (count_ > 0 && step_complete()) apply_step();
    cv_.notify_all();
  }

  /// Evicts the rows the table's eviction policy says expired at the shard's step or update
  /// count (embedding::eviction::by_age). @returns how many.
  std::size_t evict_expired() {
    std::lock_guard lock(mutex_);
    return table_.evict_expired(sync ? step_ : updates_);
  }

  /// @returns the sync step (the steps applied), or the updates applied under async and SSP.
  std::uint64_t step() const {
    std::lock_guard lock(mutex_);
    return sync ? step_ : updates_;
  }
  /// @returns the updates applied to the table (optim::row_step::t of the last).
  std::uint64_t updates() const {
    std::lock_guard lock(mutex_);
    return updates_;
  }
  /// @returns the gradient rows dropped because their key had no row.
  std::uint64_t dropped_keys() const {
    std::lock_guard lock(mutex_);
    return dropped_keys_;
  }
  /// @returns the pushes dropped whole (sync: stale, or a second push in a step).
  std::uint64_t dropped_pushes() const {
    std::lock_guard lock(mutex_);
    return dropped_pushes_;
  }
  /// @returns the table's counters (admitted, rejected, evicted, erased).
  embedding::table_stats stats() const {
    std::lock_guard lock(mutex_);
    return table_.stats();
  }
  /// Calls @p f(const Table&) under the shard's lock (a checkpoint, the ps's summaries).
  template <class F>
  decltype(auto) with_table(F&& f) const {
    std::lock_guard lock(mutex_);
    return f(std::as_const(table_));
  }

  /// Calls @p f(Table&, const table_shard_counters&) under the shard's lock: the rows and the
  /// counters at one moment, and the table mutable (a checkpoint reads its changes and mark()s
  /// it). @p f must keep the table's rows and their optimizer state as they are.
  template <class F>
  decltype(auto) with_table_mut(F&& f) {
    std::lock_guard lock(mutex_);
    const table_shard_counters c = counters_locked();
    return f(table_, c);
  }

  /// @returns the shard's counters (checkpoints).
  table_shard_counters counters() const {
    std::lock_guard lock(mutex_);
    return counters_locked();
  }

  /// A restore: under the shard's lock, calls @p fill(Table&) (which assigns the checkpoint's
  /// rows), then sets the counters to @p c (clocks beyond the shard's workers are ignored, the
  /// missing ones are 0) and drops a sync step's pushes not yet applied (a checkpoint holds
  /// none: it is taken between steps), then wakes the waiting pulls.
  template <class F>
  void restore(F&& fill, const table_shard_counters& c) {
    std::lock_guard lock(mutex_);
    fill(table_);
    step_ = c.step;
    updates_ = c.updates;
    dropped_keys_ = c.dropped_keys;
    dropped_pushes_ = c.dropped_pushes;
    for (std::size_t w = 0; w < workers_; ++w) clocks_[w] = w < c.clocks.size() ? c.clocks[w] : 0;
    step_rows_.clear();
    step_keys_.clear();
    step_sums_.clear();
    std::fill(pushed_.begin(), pushed_.end(), false);
    count_ = 0;
    cv_.notify_all();
  }

 private:
  std::string who() const { return "update::table_shard(" + table_.name() + ")"; }

  table_shard_counters counters_locked() const {
    table_shard_counters c{step_, updates_, dropped_keys_, dropped_pushes_, {}};
    if constexpr (ssp) c.clocks = clocks_;
    return c;
  }

  template <class T>
  void check_out(std::span<const std::uint64_t> keys, std::span<T> rows, const char* what) const {
    if (rows.size() != keys.size() * table_.dim())
      throw error(errc::shape_mismatch, who() + "::" + what + ": " + std::to_string(keys.size()) + " keys of " +
                                            std::to_string(table_.dim()) + " floats need " +
                                            std::to_string(keys.size() * table_.dim()) + " floats, not " +
                                            std::to_string(rows.size()));
  }

  void check_finite(std::span<const std::uint64_t> keys, std::span<const float> grads) const {
    if (all_finite(grads)) [[likely]]
      return;
    const std::size_t dim = table_.dim();
    for (std::size_t i = 0; i < grads.size(); ++i)
      if (!std::isfinite(grads[i]))
        throw error(errc::invalid_argument, who() + "::push: the gradient of key " + std::to_string(keys[i / dim]) +
                                                " has a non-finite value in column " + std::to_string(i % dim) +
                                                "; nothing of the push was applied");
  }

  // @returns whether every float of @p v is finite. A float is NaN or infinite when its exponent
  // is all ones, and then adding 1 to the exponent carries into the sign bit: an integer OR over
  // 8 lanes, which the compiler vectorises (std::isfinite per float does not, and was a tenth of
  // an async push of dim 16), and which holds under -ffast-math too.
  static bool all_finite(std::span<const float> v) noexcept {
    constexpr std::size_t lanes = 8;
    std::array<std::uint32_t, lanes> acc{};
    std::size_t i = 0;
    for (; i + lanes <= v.size(); i += lanes)
      for (std::size_t k = 0; k < lanes; ++k) acc[k] |= exponent_carry(v[i + k]);
    for (; i < v.size(); ++i) acc[0] |= exponent_carry(v[i]);
    std::uint32_t all = 0;
    for (std::uint32_t a : acc) all |= a;
    return (all & 0x80000000u) == 0;
  }
  static std::uint32_t exponent_carry(float x) noexcept {
    return (std::bit_cast<std::uint32_t>(x) & 0x7f800000u) + 0x00800000u;
  }

  void check_worker(std::size_t worker, const char* what) const {
    if (worker >= workers_)
      throw error(errc::invalid_argument, who() + "::" + what + ": worker " + std::to_string(worker) +
                                              " is out of range (the shard has " + std::to_string(workers_) +
                                              " workers)");
  }

  // Caller holds the lock: the rows of a training pull the rule lets through.
  std::uint64_t fill_locked(std::size_t worker, std::span<const std::uint64_t> keys, std::span<float> out) {
    const std::size_t dim = table_.dim();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      std::span<float> row = out.subspan(i * dim, dim);
      if constexpr (sync) {
        table_.read(keys[i], row);
      } else if (auto r = table_.find_or_admit(keys[i], updates_)) {
        std::copy(r.row.weights().begin(), r.row.weights().end(), row.begin());
      } else {
        table_.initial_row(keys[i], row);
      }
    }
    if constexpr (sync) return step_;
    if constexpr (ssp) return clocks_[worker];
    return updates_;
  }

  // Caller holds the lock.
  bool ready(std::uint64_t step) const {
    if constexpr (sync) return step_ >= step;
    if constexpr (ssp) return step <= rule_.staleness || slowest() >= step - rule_.staleness;
    return true;
  }
  std::uint64_t slowest() const {
    std::uint64_t m = std::numeric_limits<std::uint64_t>::max();
    for (std::size_t w = 0; w < workers_; ++w)
      if (!finished_[w]) m = std::min(m, clocks_[w]);
    return m;
  }
  std::string reason(std::size_t worker, std::uint64_t step) const {
    std::string waiting;
    for (std::size_t w = 0; w < workers_; ++w) {
      const bool behind = sync ? !pushed_[w] : clocks_[w] + rule_staleness() < step;
      if (!finished_[w] && behind) waiting += (waiting.empty() ? "worker:" : ", worker:") + std::to_string(w);
    }
    return who() + ": worker " + std::to_string(worker) + " waited past its deadline for " +
           (sync ? "step " : "clock ") + std::to_string(step) + " (at " + std::to_string(sync ? step_ : slowest()) +
           "); waiting for " + (waiting.empty() ? "nobody" : waiting);
  }
  std::uint64_t rule_staleness() const {
    if constexpr (ssp) return rule_.staleness;
    return 0;
  }

  // Caller holds the lock. Sums the rows of a sync push into the step, by key.
  void add_to_step(std::span<const std::uint64_t> keys, std::span<const float> grads) {
    const std::size_t dim = table_.dim();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      auto [it, fresh] = step_rows_.try_emplace(keys[i], static_cast<std::uint32_t>(step_keys_.size()));
      if (fresh) {
        step_keys_.push_back(keys[i]);
        step_sums_.insert(step_sums_.end(), grads.begin() + i * dim, grads.begin() + (i + 1) * dim);
      } else {
        float* sum = step_sums_.data() + std::size_t{it->second} * dim;
        for (std::size_t c = 0; c < dim; ++c) sum[c] += grads[i * dim + c];
      }
    }
  }

  bool step_complete() const {
    for (std::size_t w = 0; w < workers_; ++w)
      if (!finished_[w] && !pushed_[w]) return false;
    return true;
  }

  // Caller holds the lock: the step's mean applied to its keys in ascending order, admission
  // asked once a key; the next step open. @returns the keys dropped (not admitted).
  std::size_t apply_step() {
    std::vector<std::uint32_t> order(step_keys_.size());
    std::iota(order.begin(), order.end(), std::uint32_t{0});
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return step_keys_[a] < step_keys_[b]; });
    const std::size_t dim = table_.dim();
    const float scale = 1.f / static_cast<float>(count_);
    std::size_t dropped = 0;
    ++updates_;
    optimizer_.with_row_rule(scale, optim::row_step{updates_}, [&](const auto& rule) {
      for (std::uint32_t k : order) {
        auto r = table_.find_or_admit(step_keys_[k], step_);
        if (!r) {
          ++dropped;
          continue;
        }
        rule(r.row.weights().data(), r.row.state().data(), step_sums_.data() + std::size_t{k} * dim, dim);
        table_.mark_updated(r.row, step_);
      }
    });
    dropped_keys_ += dropped;
    step_rows_.clear();
    step_keys_.clear();
    step_sums_.clear();
    std::fill(pushed_.begin(), pushed_.end(), false);
    count_ = 0;
    ++step_;
    cv_.notify_all();
    return dropped;
  }

  // Caller holds the lock: an async or SSP push applied at once to the keys with a row, its
  // duplicate keys summed first. A push without duplicates (a deduplicated batch, as workers
  // send) is applied from its own buffers: only its keys are indexed, nothing is copied.
  // @returns the keys dropped.
  std::size_t apply_now(std::span<const std::uint64_t> keys, std::span<const float> grads) {
    if (!distinct(keys)) {
      step_rows_.clear();
      step_keys_.clear();
      step_sums_.clear();
      add_to_step(keys, grads);
      keys = step_keys_;
      grads = step_sums_;
    }
    const std::size_t dim = table_.dim();
    ++updates_;
    std::size_t found = 0;
    optimizer_.with_row_rule(1.f, optim::row_step{updates_}, [&](const auto& rule) {
      found = table_.update_batch(keys, updates_, [&](std::size_t i, const auto& row) {
        rule(row.weights().data(), row.state().data(), grads.data() + i * dim, dim);
      });
    });
    const std::size_t dropped = keys.size() - found;
    dropped_keys_ += dropped;
    return dropped;
  }

  // Caller holds the lock. @returns whether @p keys holds no key twice. An open-addressing set
  // of at least twice the keys' slots, a slot taken when its stamp is this push's: nothing to
  // clear between pushes (a map's clear() walks every bucket, and with its inserts was a fifth
  // of an async push of dim 16).
  bool distinct(std::span<const std::uint64_t> keys) {
    const std::size_t want = std::bit_ceil(std::max<std::size_t>(16, 2 * keys.size()));
    if (seen_.size() < want) {
      seen_.assign(want, seen_slot{});
      stamp_ = 0;
    }
    if (++stamp_ == 0) {  // the stamps wrapped: forget them all
      std::fill(seen_.begin(), seen_.end(), seen_slot{});
      stamp_ = 1;
    }
    const std::size_t mask = seen_.size() - 1;
    for (const std::uint64_t key : keys) {
      std::size_t at = embedding::detail::key_hasher{}(key)&mask;
      for (; seen_[at].stamp == stamp_; at = (at + 1) & mask)
        if (seen_[at].key == key) return false;
      seen_[at] = {key, stamp_};
    }
    return true;
  }

  Table table_;
  O optimizer_;
  U rule_;
  std::size_t workers_;
  std::vector<bool> finished_;
  std::vector<bool> pushed_;           // sync: who pushed for the open step
  std::vector<std::uint64_t> clocks_;  // SSP: the pushes of each worker
  std::uint64_t step_ = 0;             // sync: the steps applied
  std::uint64_t updates_ = 0;          // the updates applied to the table
  std::uint64_t dropped_keys_ = 0;
  std::uint64_t dropped_pushes_ = 0;
  std::size_t count_ = 0;  // sync: the pushes of the open step
  // The open step's gradient (sync) or one push's with duplicate keys (async, SSP), summed by
  // key: the keys in first-pushed order, their rows of sums, and where each key's row is.
  tsl::robin_map<std::uint64_t, std::uint32_t, embedding::detail::key_hasher> step_rows_;
  // Async, SSP: the keys of the push being applied, while looking for a duplicate (distinct()).
  struct seen_slot {
    std::uint64_t key = 0;
    std::uint32_t stamp = 0;
  };
  std::vector<seen_slot> seen_;
  std::uint32_t stamp_ = 0;
  std::vector<std::uint64_t> step_keys_;
  std::vector<float> step_sums_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
};

}  // namespace dsgd::update
