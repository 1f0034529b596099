// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// What every update rule's shard holds: the values, the optimizer and its slots, a lock; and
/// the row kernels of sparse pulls and pushes (embedding tables), with update::sparse_apply.
// IWYU pragma: private, include <dsgd/update/sync_average.hpp>
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/error.hpp>
#include <dsgd/optim/concepts.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/update/chunked_apply.hpp>
#include <dsgd/update/concepts.hpp>

#include <thrust/copy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace dsgd::update {

namespace detail {

// Element i of a block of `count` rows of `dim` floats is column i % dim of row rows[i / dim].
struct gather_rows_kernel {
  float* out;
  const float* values;
  const std::uint64_t* rows;
  std::size_t dim;
  DSGD_HOST_DEVICE void operator()(std::size_t i) const { out[i] = values[rows[i / dim] * dim + i % dim]; }
};

// Rows are unique, so no two elements write the same place.
struct scatter_add_rows_kernel {
  float* acc;
  const float* g;
  const std::uint64_t* rows;
  std::size_t dim;
  DSGD_HOST_DEVICE void operator()(std::size_t i) const { acc[rows[i / dim] * dim + i % dim] += g[i]; }
};

struct sparse_sgd_kernel {
  float* w;
  const float* g;
  const std::uint64_t* rows;
  std::size_t dim;
  float learning_rate;
  float grad_scale;
  // The same rounding as optim::detail::sgd_kernel, so sparse and dense pushes agree bit for bit.
  DSGD_HOST_DEVICE void operator()(std::size_t i) const {
    w[rows[i / dim] * dim + i % dim] -= learning_rate * (grad_scale * g[i]);
  }
};

template <bool Nesterov>
struct sparse_momentum_kernel {
  float* w;
  float* v;
  const float* g;
  const std::uint64_t* rows;
  std::size_t dim;
  float learning_rate;
  float momentum;
  float grad_scale;
  // optim::detail::momentum_kernel on the elements of the given rows only.
  DSGD_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t at = rows[i / dim] * dim + i % dim;
    const float gi = grad_scale * g[i];
    const float vi = momentum * v[at] + gi;
    v[at] = vi;
    if constexpr (Nesterov) {
      w[at] -= learning_rate * (gi + momentum * vi);
    } else {
      w[at] -= learning_rate * vi;
    }
  }
};

}  // namespace detail

/// How optimizer @p O updates only some rows of a variable (TensorFlow's "sparse apply"): the
/// optimizer's rule on the elements of those rows and on their slots, every other row and slot
/// left as it is. Async and bounded-staleness shards need it for sparse pushes; sync_average
/// does not (it applies the dense mean). Specialise it for another optimizer with
/// `available = true` and the `apply` below; without one, a sparse push under async or SSP is
/// an error that says so.
template <class O>
struct sparse_apply {
  static constexpr bool available = false;  ///< no sparse apply for O
};

/// Plain SGD on rows: `w[r] <- w[r] - lr * scale * g_r` for every given row r.
template <>
struct sparse_apply<optim::sgd> {
  static constexpr bool available = true;  ///< optim::sgd has a sparse apply
  /// Updates rows @p rows[0..count) (unique, local to the shard) of the @p dim-wide rows at
  /// @p w from the rows @p g (count x dim); every pointer is in @p device's memory.
  template <Device D>
  static void apply(const optim::sgd& o, const D& device, typename optim::sgd::template state<D>&, float* w,
                    const std::uint64_t* rows, std::size_t count, std::size_t dim, const float* g,
                    float grad_scale) {
    thrust::for_each_n(device.policy(), thrust::counting_iterator<std::size_t>(0), count * dim,
                       detail::sparse_sgd_kernel{w, g, rows, dim, o.learning_rate, grad_scale});
  }
};

/// Momentum on rows: the velocity and the values of the given rows change; other rows keep
/// both (TensorFlow's SparseApplyMomentum).
template <>
struct sparse_apply<optim::momentum> {
  static constexpr bool available = true;  ///< optim::momentum has a sparse apply
  /// As sparse_apply<optim::sgd>::apply, with the velocity slot of the same rows.
  template <Device D>
  static void apply(const optim::momentum& o, const D& device, typename optim::momentum::template state<D>& s,
                    float* w, const std::uint64_t* rows, std::size_t count, std::size_t dim, const float* g,
                    float grad_scale) {
    float* v = thrust::raw_pointer_cast(s.velocity.data());
    const auto first = thrust::counting_iterator<std::size_t>(0);
    if (o.nesterov) {
      thrust::for_each_n(device.policy(), first, count * dim,
                         detail::sparse_momentum_kernel<true>{w, v, g, rows, dim, o.learning_rate, o.momentum,
                                                              grad_scale});
    } else {
      thrust::for_each_n(device.policy(), first, count * dim,
                         detail::sparse_momentum_kernel<false>{w, v, g, rows, dim, o.learning_rate, o.momentum,
                                                               grad_scale});
    }
  }
};

}  // namespace dsgd::update

namespace dsgd::update::detail {

/// Sparse rows with duplicates summed: unique rows in ascending order and, for each, the sum
/// (in the order pushed) of the gradient rows given for it; both in the device's memory.
template <Device D>
struct coalesced_rows {
  typename D::template vector<std::uint64_t> rows;
  typename D::template vector<float> grads;
  std::size_t count = 0;
};

/// Sums the gradient rows of duplicate @p rows (host memory, @p rows.size() x @p dim floats at
/// @p grads): TensorFlow's deduplication of IndexedSlices before a sparse apply.
template <Device D>
coalesced_rows<D> coalesce_rows(std::span<const std::uint64_t> rows, std::size_t dim, const float* grads) {
  std::vector<std::size_t> order(rows.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rows[a] < rows[b]; });
  std::vector<std::uint64_t> unique;
  std::vector<float> sums;
  unique.reserve(rows.size());
  sums.reserve(rows.size() * dim);
  for (std::size_t k = 0; k < order.size(); ++k) {
    const float* g = grads + order[k] * dim;
    if (k > 0 && rows[order[k]] == unique.back()) {
      float* acc = sums.data() + (unique.size() - 1) * dim;
      for (std::size_t c = 0; c < dim; ++c) acc[c] += g[c];
    } else {
      unique.push_back(rows[order[k]]);
      sums.insert(sums.end(), g, g + dim);
    }
  }
  coalesced_rows<D> out;
  out.count = unique.size();
  if (out.count == 0) return out;  // Thrust's copy of an empty range binds a null reference (UBSan)
  out.rows.assign(unique.begin(), unique.end());
  out.grads.assign(sums.begin(), sums.end());
  return out;
}

/// The storage and the pull protocol shared by every rule's shard. @p Derived supplies, called
/// with the lock held, `ready_locked(worker, step)` (may this worker read at this step now?)
/// and `reason_locked(worker, step)` (what it is waiting for, for the deadline's message).
template <class Derived, Device D, class O>
  requires Optimizer<O, D>
class shard_storage {
 public:
  /// The values of a shard as device vector; shared so that a pin keeps one version alive.
  using buffer_type = typename D::template vector<float>;

  /// One version of the shard's values, unchanged for as long as the pin lives: a push applied
  /// meanwhile writes to a fresh copy (copy on write), never to these values. A ps sends pull
  /// replies straight from a pin, with no snapshot copy.
  struct pinned_values {
    std::shared_ptr<const buffer_type> values;  ///< in the device's memory
    std::uint64_t step = 0;                     ///< the shard's step of this version
  };

  shard_storage(D device, std::span<const float> initial, O optimizer, std::size_t workers)
      : device_(std::move(device)),
        values_(std::make_shared<buffer_type>(initial.begin(), initial.end())),
        optimizer_(std::move(optimizer)),
        slots_(device_, initial.size()),
        workers_(workers),
        finished_(workers, false) {
    if (workers == 0) throw error(errc::invalid_argument, "update rule: a shard needs at least one worker");
  }

  /// @returns the number of elements the shard holds.
  std::size_t size() const noexcept { return values_->size(); }
  std::size_t workers() const noexcept { return workers_; }

  /// Waits until the rule lets @p worker read at @p step, copies a consistent snapshot of the
  /// shard into @p out (raw pointer into device memory) and returns the shard's step.
  /// @throws dsgd::error errc::timed_out past @p deadline, naming what it waited for
  std::uint64_t pull(std::size_t worker, std::uint64_t step, float* out,
                     clock_type::time_point deadline) {
    std::unique_lock lock(mutex_);
    check_worker(worker, "pull");
    if (!cv_.wait_until(lock, deadline, [&] { return self().ready_locked(worker, step); }))
      throw error(errc::timed_out, self().reason_locked(worker, step));
    copy_out(out);
    return step_;
  }

  /// pull() without waiting: std::nullopt (and nothing copied) when @p worker may not read yet.
  std::optional<std::uint64_t> try_pull(std::size_t worker, std::uint64_t step, float* out) {
    std::lock_guard lock(mutex_);
    check_worker(worker, "pull");
    if (!self().ready_locked(worker, step)) return std::nullopt;
    copy_out(out);
    return step_;
  }

  /// pull() without waiting and without a copy: the current values, pinned, or std::nullopt
  /// when @p worker may not read yet. Cheap while no push lands during the pin's life; a push
  /// that does copies the shard once, however many pins hold the old version.
  std::optional<pinned_values> try_pin(std::size_t worker, std::uint64_t step) {
    std::lock_guard lock(mutex_);
    check_worker(worker, "pull");
    if (!self().ready_locked(worker, step)) return std::nullopt;
    return pinned_values{values_, step_};
  }

  /// Sparse pull(): waits as pull() does, then copies rows @p rows (local to the shard, each
  /// @p dim floats wide, in the given order, duplicates allowed; host memory) into @p out
  /// (host memory, rows.size() x dim floats). @returns the shard's step.
  /// @throws dsgd::error errc::invalid_argument for a row past the shard, errc::shape_mismatch
  ///         for a @p dim that does not divide it, errc::timed_out past @p deadline
  std::uint64_t pull_rows(std::size_t worker, std::uint64_t step, std::span<const std::uint64_t> rows,
                          std::size_t dim, float* out, clock_type::time_point deadline) {
    check_rows(rows, dim, "pull_rows");
    std::unique_lock lock(mutex_);
    check_worker(worker, "pull_rows");
    if (!cv_.wait_until(lock, deadline, [&] { return self().ready_locked(worker, step); }))
      throw error(errc::timed_out, self().reason_locked(worker, step));
    copy_rows_out(rows, dim, out);
    return step_;
  }

  /// pull_rows() without waiting: std::nullopt (and nothing copied) when @p worker may not
  /// read yet.
  std::optional<std::uint64_t> try_pull_rows(std::size_t worker, std::uint64_t step,
                                             std::span<const std::uint64_t> rows, std::size_t dim, float* out) {
    check_rows(rows, dim, "pull_rows");
    std::lock_guard lock(mutex_);
    check_worker(worker, "pull_rows");
    if (!self().ready_locked(worker, step)) return std::nullopt;
    copy_rows_out(rows, dim, out);
    return step_;
  }

  /// @returns what a pull by @p worker at @p step is waiting for ("" when it need not wait).
  std::string wait_reason(std::size_t worker, std::uint64_t step) const {
    std::lock_guard lock(mutex_);
    return self().ready_locked(worker, step) ? std::string() : self().reason_locked(worker, step);
  }

  /// @returns the shard's step (sync: steps applied; async and SSP: gradients applied).
  std::uint64_t step() const {
    std::lock_guard lock(mutex_);
    return step_;
  }
  /// @returns how many pushes were dropped as stale or duplicate.
  std::uint64_t dropped() const {
    std::lock_guard lock(mutex_);
    return dropped_;
  }
  /// @returns how many pushes were applied chunk by chunk as they arrived (chunked_apply).
  std::uint64_t streamed() const {
    std::lock_guard lock(mutex_);
    return streamed_;
  }

  /// Overwrites the values and the step (a restore from a checkpoint); the optimizer's slots
  /// and the rule's bookkeeping of the step in progress start afresh.
  void assign(std::span<const float> values, std::uint64_t step) {
    saved_state s;
    s.step = step;
    s.values.assign(values.begin(), values.end());
    restore(s);
  }

  /// What a checkpoint holds of a shard, in host memory: its values and step, and the
  /// optimizer's slots (one float per element) and counters by name (Optimizer's `visit`).
  struct saved_state {
    std::uint64_t step = 0;                                          ///< the shard's step
    std::vector<float> values;                                       ///< the shard's values
    std::vector<std::pair<std::string, std::vector<float>>> slots;   ///< e.g. "velocity"
    std::vector<std::pair<std::string, std::uint64_t>> counters;     ///< e.g. "t" of adam
  };

  /// @returns a consistent copy of the shard's values, step, slots and counters.
  saved_state save() {
    std::lock_guard lock(mutex_);
    saved_state out;
    out.step = step_;
    out.values.resize(values_->size());
    copy_out(out.values.data());
    if constexpr (checkpointable_state<typename O::template state<D>>) {
      slots_.visit([&](const char* name, auto& slot) {
        if constexpr (std::is_same_v<std::decay_t<decltype(slot)>, std::uint64_t>) {
          out.counters.emplace_back(name, slot);
        } else {
          out.slots.emplace_back(name, std::vector<float>(slot.size()));
          thrust::copy(slot.begin(), slot.end(), out.slots.back().second.begin());
        }
      });
    }
    return out;
  }

  /// Overwrites the shard with @p s (a restore from a checkpoint): values and step, the slots
  /// and counters @p s names (any it lacks start afresh), and the rule's bookkeeping of the
  /// step in progress starts afresh (gradients accumulated towards it are discarded).
  /// @throws dsgd::error errc::shape_mismatch naming the values or slot of the wrong size
  void restore(const saved_state& s) {
    std::lock_guard lock(mutex_);
    const auto n = values_->size();
    if (s.values.size() != n)
      throw error(errc::shape_mismatch, "shard restore: " + std::to_string(s.values.size()) +
                                            " values for a shard of " + std::to_string(n));
    typename O::template state<D> slots(device_, n);
    if constexpr (checkpointable_state<typename O::template state<D>>) {
      slots.visit([&](const char* name, auto& slot) {
        if constexpr (std::is_same_v<std::decay_t<decltype(slot)>, std::uint64_t>) {
          for (const auto& [k, v] : s.counters)
            if (k == name) slot = v;
        } else {
          for (const auto& [k, v] : s.slots) {
            if (k != name) continue;
            if (v.size() != n)
              throw error(errc::shape_mismatch, std::string("shard restore: slot ") + name + " holds " +
                                                    std::to_string(v.size()) + " values for a shard of " +
                                                    std::to_string(n));
            thrust::copy(v.begin(), v.end(), slot.begin());
          }
        }
      });
    }
    if (values_.use_count() > 1) values_ = std::make_shared<buffer_type>(n);
    thrust::copy(s.values.begin(), s.values.end(), values_->begin());
    slots_ = std::move(slots);
    ++version_;  // a push being applied in chunks started from the old values: it is applied whole
    step_ = s.step;
    static_cast<Derived&>(*this).reset_locked();
    cv_.notify_all();
  }

 protected:
  // Callers hold mutex_. The values to update in place: a private copy when a pin still holds
  // the current ones. Pins are made under mutex_, so a count of 1 cannot grow meanwhile; a pin
  // released concurrently at worst costs a copy that was not needed.
  float* writable_values() {
    if (values_.use_count() > 1) values_ = std::make_shared<buffer_type>(*values_);
    ++version_;  // every caller is about to change the values, the slots or both
    return thrust::raw_pointer_cast(values_->data());
  }
  // Callers hold mutex_.
  void apply(const float* grad, float scale) {
    optimizer_.apply(device_, slots_, writable_values(), grad, values_->size(), scale);
    device_.synchronize();
  }

  // --- chunked apply -------------------------------------------------------------------------
  // A push that arrives in chunks is applied as they come, out of place: the new values and
  // slots go to next_values_ and next_slots_ while values_ and slots_ stay what pulls, pins and
  // saves read. Its last chunk publishes the new version with a swap, under the lock, so no
  // reader ever sees a push half applied. Whatever changes the values meanwhile (another push,
  // a restore) bumps version_, which ends the stream: that push is then applied whole, from the
  // gradient the ps kept. One stream per shard at a time; a push whose stream ended, was refused,
  // or never started loses nothing but the overlap.

  /// Applies elements [first, first + count) of a push from @p worker that is still arriving
  /// (in chunks, in order, from element 0; @p grad is the whole gradient buffer, filled up to
  /// first + count; device memory), out of place: pulls see none of it until the rule's
  /// push_streamed() publishes the whole. Rules that apply every push on arrival (async,
  /// bounded_staleness) make this public.
  /// @returns false when this push will be applied whole instead: the optimizer has no
  ///          chunked_apply, another push is being streamed, or the shard changed meanwhile
  bool push_chunk(std::size_t worker, std::size_t first, std::size_t count, const float* grad) {
    std::lock_guard lock(mutex_);
    check_worker(worker, "push_chunk");
    return stream_chunk_locked(worker, first, count, grad);
  }

  // Callers hold mutex_. push_chunk().
  bool stream_chunk_locked(std::size_t worker, std::size_t first, std::size_t count, const float* grad) {
    if constexpr (!chunked_apply<O>::available) {
      return false;
    } else {
      const std::size_t n = values_->size();
      if (first == 0) {
        if (stream_.live && stream_.worker != worker && stream_.version == version_) return false;  // taken
        stream_ = {worker, version_, 0, true};
        if (!next_values_ || next_values_.use_count() > 1) next_values_ = std::make_shared<buffer_type>(n);
        if (!next_slots_) next_slots_.emplace(device_, n);
      } else if (!stream_live_for(worker) || stream_.done != first) {
        if (stream_.worker == worker) stream_.live = false;
        return false;
      }
      if (first > n || count > n - first) {
        stream_.live = false;
        return false;
      }
      chunked_apply<O>::apply(optimizer_, device_, slots_, *next_slots_, thrust::raw_pointer_cast(values_->data()),
                              thrust::raw_pointer_cast(next_values_->data()), grad, first, count, 1.f);
      device_.synchronize();
      stream_.done = first + count;
      return true;
    }
  }

  // Callers hold mutex_. Applies @p worker's complete push @p grad. When @p streamed (its
  // chunks went through push_chunk) and its stream is still live, publishes the stream with the
  // rest; otherwise applies @p grad whole, and ends any stream the worker left behind (a
  // connection lost mid-push) so that it is never published with another push.
  void apply_push_locked(std::size_t worker, const float* grad, bool streamed) {
    if constexpr (chunked_apply<O>::available) {
      if (streamed && stream_live_for(worker)) {
        const std::size_t n = values_->size();
        if (stream_.done < n)
          chunked_apply<O>::apply(optimizer_, device_, slots_, *next_slots_,
                                  thrust::raw_pointer_cast(values_->data()),
                                  thrust::raw_pointer_cast(next_values_->data()), grad, stream_.done,
                                  n - stream_.done, 1.f);
        device_.synchronize();
        std::swap(values_, next_values_);  // the old version is the next stream's buffer, unless pinned
        std::swap(slots_, *next_slots_);
        ++version_;
        stream_.live = false;
        ++streamed_;
        return;
      }
    }
    if (stream_.worker == worker) stream_.live = false;
    apply(grad, 1.f);
  }
  bool stream_live_for(std::size_t worker) const {
    return stream_.live && stream_.worker == worker && stream_.version == version_;
  }

  // Throws for a row width that does not divide the shard or a row past its end.
  void check_rows(std::span<const std::uint64_t> rows, std::size_t dim, const char* what) const {
    if (dim == 0 || values_->size() % dim != 0)
      throw error(errc::shape_mismatch, std::string(what) + ": rows of " + std::to_string(dim) +
                                            " floats do not tile a shard of " + std::to_string(values_->size()));
    const std::uint64_t limit = values_->size() / dim;
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (rows[i] >= limit)
        throw error(errc::invalid_argument, std::string(what) + ": row " + std::to_string(rows[i]) + " (key " +
                                                std::to_string(i) + ") is out of range for a shard of " +
                                                std::to_string(limit) + " rows");
  }
  // Callers hold mutex_. The optimizer on the given rows only (unique, from coalesce_rows).
  void apply_rows(const coalesced_rows<D>& c, std::size_t dim, float scale) {
    if constexpr (sparse_apply<O>::available) {
      sparse_apply<O>::apply(optimizer_, device_, slots_, writable_values(),
                             thrust::raw_pointer_cast(c.rows.data()), c.count, dim,
                             thrust::raw_pointer_cast(c.grads.data()), scale);
      device_.synchronize();
    } else {
      throw error(errc::invalid_argument,
                  "sparse push: this optimizer has no sparse apply (update::sparse_apply is defined for optim::sgd "
                  "and optim::momentum); push the dense gradient, or use sync_average, which applies the dense mean");
    }
  }
  // Callers hold mutex_. acc[row] += grad row, for the unique rows of @p c.
  void scatter_add_rows(float* acc, const coalesced_rows<D>& c, std::size_t dim) {
    thrust::for_each_n(device_.policy(), thrust::counting_iterator<std::size_t>(0), c.count * dim,
                       scatter_add_rows_kernel{acc, thrust::raw_pointer_cast(c.grads.data()),
                                               thrust::raw_pointer_cast(c.rows.data()), dim});
    device_.synchronize();
  }
  // Callers hold mutex_.
  void copy_rows_out(std::span<const std::uint64_t> rows, std::size_t dim, float* out) const {
    if constexpr (D::is_host) {
      thrust::for_each_n(device_.policy(), thrust::counting_iterator<std::size_t>(0), rows.size() * dim,
                         gather_rows_kernel{out, thrust::raw_pointer_cast(values_->data()), rows.data(), dim});
    } else {
      typename D::template vector<std::uint64_t> r(rows.begin(), rows.end());
      typename D::template vector<float> o(rows.size() * dim);
      thrust::for_each_n(device_.policy(), thrust::counting_iterator<std::size_t>(0), rows.size() * dim,
                         gather_rows_kernel{thrust::raw_pointer_cast(o.data()),
                                            thrust::raw_pointer_cast(values_->data()),
                                            thrust::raw_pointer_cast(r.data()), dim});
      thrust::copy(o.begin(), o.end(), out);
    }
    device_.synchronize();
  }
  void copy_out(float* out) const {
    thrust::copy(device_.policy(), values_->begin(), values_->end(), out);
    device_.synchronize();
  }
  void check_worker(std::size_t worker, const char* what) const {
    if (worker >= workers_)
      throw error(errc::invalid_argument, std::string(what) + ": worker " + std::to_string(worker) +
                                              " is out of range (the shard has " +
                                              std::to_string(workers_) + " workers)");
  }
  std::size_t active_workers() const noexcept {
    std::size_t n = 0;
    for (bool f : finished_) n += !f;
    return n;
  }
  const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
  // Callers hold mutex_. A rule with bookkeeping of the step in progress hides this to clear it
  // when the shard is restored.
  void reset_locked() {}

  D device_;
  std::shared_ptr<buffer_type> values_;  // replaced, never written, while a pin holds it
  O optimizer_;
  typename O::template state<D> slots_;
  std::size_t workers_;
  std::vector<bool> finished_;
  std::uint64_t step_ = 0;
  std::uint64_t dropped_ = 0;
  mutable std::mutex mutex_;
  std::uint64_t version_ = 0;  // bumped by every change of values_ or slots_
  struct stream_state {
    std::size_t worker = 0;
    std::uint64_t version = 0;  // version_ the stream reads from
    std::size_t done = 0;       // elements [0, done) of the next version are written
    bool live = false;
  };
  stream_state stream_;
  std::shared_ptr<buffer_type> next_values_;                 // the version a stream writes
  std::optional<typename O::template state<D>> next_slots_;  // and its slots
  std::uint64_t streamed_ = 0;
  std::condition_variable cv_;
};

}  // namespace dsgd::update::detail
