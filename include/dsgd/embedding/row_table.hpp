// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// embedding::row_table: one ps shard's part of a dynamic embedding table, 64-bit key -> row,
/// with admission (embedding/admission.hpp), eviction and a memory cap (embedding/eviction.hpp),
/// and a record of the keys changed and evicted since a mark for incremental checkpoints.
///
/// Layout. A row is `dim` weights followed by `state_floats` optimizer-state floats (the table
/// does not know which optimizer: its caller says how many floats and their initial values).
/// Rows live in fixed-width slots of an arena of blocks (each block one contiguous allocation
/// of 2^k slots, about 256 KiB); a tsl::robin_map (open addressing, Robin Hood probing,
/// backward-shift deletion: no probe-chain tombstones pile up under churn) maps a key to its
/// slot. A slot holds 24 bytes of metadata (the key, the last step touched, the use count and
/// the epoch of its last change) and then the row's floats, so a lookup reaches both in one
/// place. Evicted and erased rows return their slot to a free list, so under a
/// cap the arena never grows past it.
///
/// @code
/// namespace emb = dsgd::embedding;
/// emb::row_table table({.name = "user_id", .dim = 16, .state_floats = 1, .initial_state = {0.1f},
///                       .max_rows = 1'000'000},
///                      emb::initializer::truncated_normal{.stddev = 0.25f, .seed = 7},
///                      emb::admission::by_count({.count = 2}), emb::eviction::by_age{.max_age = 1000});
/// // pull for training at global step t: the key's row, or its initial row if not admitted
/// if (auto r = table.find_or_admit(key, t)) send(r.row.weights());
/// else table.initial_row(key, buffer), send(buffer);
/// // push: apply to the row if it (still) exists, then say so
/// if (auto row = table.find(key)) { apply(row->weights(), row->state(), grad); table.mark_updated(*row, t); }
/// // or a whole push at once, looking ahead (faster on a table larger than the caches)
/// table.update_batch(keys, t, [&](std::size_t i, const emb::row_view& row) { apply(row, grads[i]); });
/// @endcode
///
/// Thread-safety: none inside. A shard table is used under its ps's lock: const members
/// (find() const, read(), initial_row(), contains(), for_each*, size(), bytes_used(), stats())
/// may run concurrently with each other, every other member needs exclusive access.
#pragma once

#include <dsgd/detail/validate.hpp>
#include <dsgd/embedding/admission.hpp>
#include <dsgd/embedding/detail/counter_hash.hpp>
#include <dsgd/embedding/detail/counting_allocator.hpp>
#include <dsgd/embedding/eviction.hpp>
#include <dsgd/embedding/initializer.hpp>
#include <dsgd/error.hpp>

#include <tsl/robin_map.h>
#include <tsl/robin_set.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace dsgd::embedding {

template <RowInitializer I, AdmissionPolicy A, EvictionPolicy E>
class row_table;

/// A row of a row_table: its key, its weights and its optimizer state, in place. @p T is float
/// (row_view) or const float (const_row_view). A view stays valid until its row is erased or
/// evicted (which a find_or_admit() or assign() at the cap may do, and evict_expired() does) or
/// the table is destroyed; moving the table keeps it valid.
template <class T>
class basic_row_view {
 public:
  basic_row_view() = default;
  /// A const view of a mutable one.
  template <class U>
  requires std::is_same_v<T, const U> basic_row_view(const basic_row_view<U>& v)
  noexcept  // NOLINT(google-explicit-constructor)
      : key_{v.key()}, slot_{v.slot()}, data_{v.weights().data()}, dim_{v.weights().size()}, state_{v.state().size()} {}

  std::uint64_t key() const noexcept { return key_; }
  std::span<T> weights() const noexcept { return {data_, dim_}; }
  std::span<T> state() const noexcept { return {data_ + dim_, state_}; }
  /// @returns the index of the row's slot in the arena (stable while the row lives).
  std::uint32_t slot() const noexcept { return slot_; }

 private:
  template <RowInitializer, AdmissionPolicy, EvictionPolicy>
  friend class row_table;
  basic_row_view(std::uint64_t key, std::uint32_t slot, T* data, std::size_t dim, std::size_t state) noexcept
      : key_{key}, slot_{slot}, data_{data}, dim_{dim}, state_{state} {}

  std::uint64_t key_ = 0;
  std::uint32_t slot_ = 0;
  T* data_ = nullptr;
  std::size_t dim_ = 0;
  std::size_t state_ = 0;
};

using row_view = basic_row_view<float>;
using const_row_view = basic_row_view<const float>;

/// What a training lookup did.
enum class lookup_status {
  found,    ///< the key had a row
  created,  ///< the key was admitted and got a fresh row (initializer + initial state)
  rejected  ///< the key has no row and was not admitted: it reads its initial row
};

/// The result of row_table::find_or_admit: a status and, unless rejected, the row.
struct lookup_result {
  lookup_status status = lookup_status::rejected;
  row_view row;
  explicit operator bool() const noexcept { return status != lookup_status::rejected; }
};

/// Counters of a table since it was made (for the ps's summaries).
struct table_stats {
  std::uint64_t admitted = 0;  ///< rows created by training lookups (admission said yes)
  std::uint64_t rejected = 0;  ///< training lookups of a key without a row that admission refused
  std::uint64_t evicted = 0;   ///< rows evicted to make room at the cap or by evict_expired()
  std::uint64_t erased = 0;    ///< rows removed by erase()
};

/// How a row_table is laid out and bounded.
struct table_options {
  std::string name = "embedding";         ///< the table's name in errors
  std::size_t dim = 0;                    ///< weights per row (> 0)
  std::size_t state_floats = 0;           ///< optimizer-state floats per row after the weights
  std::vector<float> initial_state = {};  ///< a new row's state: empty (zeros) or state_floats values
  /// The cap in rows (0: none). A new row at the cap evicts per the policy or throws.
  std::size_t max_rows = 0;
  /// The cap in bytes of the rows' memory (0: none): arena, metadata, hash map, free list and
  /// eviction scratch, turned into a row cap at construction (the smaller of the two caps holds).
  /// Admission state and tombstones are bounded on their own and not in it (bytes_used() has
  /// everything).
  std::size_t max_bytes = 0;
  /// At the cap, the share of the cap evicted at once (at least one row): evicting a batch costs
  /// one scan of the table for many new rows. 1 / max_rows evicts exactly one row at a time.
  double evict_fraction = 1.0 / 64;
  float max_load_factor = 0.8f;  ///< of the hash map, in [0.2, 0.95]
  bool track_changes = true;     ///< keep tombstones of evicted and erased keys until mark()
  /// The tombstones kept until mark() (0: max_rows / 8, at least 1024, or 65536 without a cap):
  /// past it they are dropped and the change record is incomplete until the next mark()
  /// (changes_complete()), so that a table nobody checkpoints keeps its memory bounded.
  std::size_t max_tombstones = 0;
  int ps_task = -1;  ///< the ps task holding the shard, named in errors (-1: none)

  /// @throws dsgd::error (errc::invalid_argument) naming the first bad field.
  void validate() const {
    constexpr std::string_view path = "embedding::table_options";
    dsgd::detail::require_positive(dim, path, "dim");
    if (!initial_state.empty() && initial_state.size() != state_floats)
      dsgd::detail::bad_option(path, "initial_state",
                               "must be empty or hold state_floats (" + std::to_string(state_floats) +
                                   ") values, not " + std::to_string(initial_state.size()));
    if (max_rows > std::numeric_limits<std::uint32_t>::max())
      dsgd::detail::bad_option(path, "max_rows", "must fit in 32 bits");
    if (!(evict_fraction > 0 && evict_fraction <= 1))
      dsgd::detail::bad_option(path, "evict_fraction", "must be in (0, 1]");
    if (!(max_load_factor >= 0.2f && max_load_factor <= 0.95f))
      dsgd::detail::bad_option(path, "max_load_factor", "must be in [0.2, 0.95]");
    for (float x : initial_state)
      if (!std::isfinite(x)) dsgd::detail::bad_option(path, "initial_state", "must be finite");
  }
};

/// One ps shard's table of dynamic embedding rows.
///
/// @tparam I how a new row's weights start (RowInitializer): a pure function of (seed, key), so
///         a missing key reads the same initial row on every ps and in every oracle.
/// @tparam A who gets a row (AdmissionPolicy).
/// @tparam E who goes when the table is at its cap, and who a sweep removes (EvictionPolicy).
///
/// Costs: find_or_admit(), find(), read(), mark_updated(), erase() are one hash probe plus
/// O(dim + state_floats); a new row at the cap first evicts max(1, evict_fraction * cap) rows in
/// one scan of the slots (O(slots + batch log batch)), so O(1 / evict_fraction) amortised per
/// new row; evict_expired(), for_each*() and mark() scan the slots.
template <RowInitializer I = initializer::zeros, AdmissionPolicy A = admission::always,
          EvictionPolicy E = eviction::none>
class row_table {
 public:
  using initializer_type = I;
  using admission_type = A;
  using eviction_type = E;

  /// @throws dsgd::error (errc::invalid_argument) when the options (or the admission policy's
  ///         own validate(), if it has one) are bad, or max_bytes cannot hold one row.
  explicit row_table(table_options options, I init = {}, A admit = {}, E evict = {})
      : options_{std::move(options)},
        init_{std::move(init)},
        admit_{std::move(admit)},
        evict_{std::move(evict)},
        bytes_{std::make_unique<std::size_t>(0)},
        map_{0, detail::key_hasher{}, std::equal_to<>{}, alloc<std::pair<std::uint64_t, std::uint32_t>>()},
        tombstones_{0, detail::key_hasher{}, std::equal_to<>{}, alloc<std::uint64_t>()},
        blocks_{alloc<block>()},
        free_{alloc<std::uint32_t>()},
        scratch_{alloc<candidate>()} {
    options_.validate();
    if constexpr (requires { admit_.validate(); }) admit_.validate();
    width_ = options_.dim + options_.state_floats;
    slot_words_ = (sizeof(meta) + width_ * sizeof(float) + sizeof(std::uint64_t) - 1) / sizeof(std::uint64_t);
    if (options_.initial_state.empty()) options_.initial_state.assign(options_.state_floats, 0.f);
    const std::size_t per_block =
        std::bit_floor(std::max<std::size_t>(1, (256u << 10) / (slot_words_ * sizeof(std::uint64_t))));
    block_shift_ = static_cast<unsigned>(std::countr_zero(std::clamp<std::size_t>(per_block, 16, 1u << 16)));
    map_.max_load_factor(options_.max_load_factor);
    max_rows_ = options_.max_rows ? options_.max_rows : std::numeric_limits<std::uint32_t>::max();
    if (options_.max_bytes) {
      const std::size_t by_bytes = rows_within(options_.max_bytes);
      if (by_bytes == 0)
        dsgd::detail::bad_option("embedding::table_options", "max_bytes",
                                 "is too small for one row of " + std::to_string(width_ * sizeof(float)) + " bytes");
      max_rows_ = std::min(max_rows_, by_bytes);
    }
    if (capped()) {
      // The map holds the cap from the start: it never rehashes (no transient 2x), and the
      // table's memory is flat once the cap is reached.
      map_.reserve(max_rows_);
      scratch_.reserve(evict_batch());
    }
  }

  /// Moves the table: views of its rows stay valid. (No move assignment: the containers'
  /// allocators count into the table's own counter, which assignment would have to re-point.)
  row_table(row_table&&) noexcept = default;
  row_table& operator=(row_table&&) = delete;

  /// The lookup of a training pull at global step @p step: the row of @p key if it has one
  /// (its use count and last step updated), else, if admission says yes, a new row (weights from
  /// the initializer, state from table_options::initial_state), else `rejected` (no row: the
  /// caller serves initial_row(), and drops the key's gradient).
  /// Rows touched at step @p step or later are never evicted to make room (a step's rows stay).
  /// @throws dsgd::error (errc::invalid_argument) when a new row is admitted at the cap and the
  ///         policy does not evict, or every row was touched at this step; the table is unchanged
  ///         (only an admission policy's count for the key may be spent).
  lookup_result find_or_admit(std::uint64_t key, std::uint64_t step) {
    if (auto it = map_.find(key); it != map_.end()) {
      const std::uint32_t slot = it->second;
      meta& m = meta_of(slot);
      m.last_step = std::max(m.last_step, step);
      if (m.uses != std::numeric_limits<std::uint32_t>::max()) ++m.uses;
      m.epoch = epoch_;
      return {lookup_status::found, view(slot)};
    }
    if (!admit_.admit(key, step)) {
      ++stats_.rejected;
      return {};
    }
    const std::uint32_t slot = new_row(key, step);
    std::span<float> w = weights_of(slot);
    init_(key, w);
    std::copy(options_.initial_state.begin(), options_.initial_state.end(), w.data() + options_.dim);
    meta_of(slot) = {key, step, 1, epoch_};
    ++stats_.admitted;
    return {lookup_status::created, view(slot)};
  }

  /// @returns the row of @p key, or nothing; changes nothing (a push to a row uses this, then
  ///          mark_updated()).
  std::optional<row_view> find(std::uint64_t key) noexcept {
    auto it = map_.find(key);
    if (it == map_.end()) return std::nullopt;
    return view(it->second);
  }
  std::optional<const_row_view> find(std::uint64_t key) const noexcept {
    auto it = map_.find(key);
    if (it == map_.end()) return std::nullopt;
    return const_row_view(view(it->second));
  }
  bool contains(std::uint64_t key) const noexcept { return map_.contains(key); }

  /// The lookup of an evaluation: copies the row of @p key into @p out, or, when the key has no
  /// row, its initial row. Never admits, creates or touches a row, counts nothing.
  /// @returns whether the key had a row.
  /// @throws dsgd::error (errc::shape_mismatch) when out.size() != dim.
  bool read(std::uint64_t key, std::span<float> out) const {
    check_width(out.size(), options_.dim, key, "read: the output row", "dim");
    auto it = map_.find(key);
    if (it == map_.end()) {
      init_(key, out);
      return false;
    }
    const float* w = data_of(it->second);
    std::copy(w, w + options_.dim, out.begin());
    return true;
  }

  /// Writes the initial weights of @p key (those a new row would get) into @p out.
  /// @throws dsgd::error (errc::shape_mismatch) when out.size() != dim.
  void initial_row(std::uint64_t key, std::span<float> out) const {
    check_width(out.size(), options_.dim, key, "initial_row: the output row", "dim");
    init_(key, out);
  }

  /// Records that the row @p row was updated in place at global step @p step (its last step,
  /// and its change for the next incremental checkpoint).
  /// @throws dsgd::error (errc::invalid_argument) when the view is stale (its row was evicted or
  ///         erased) or the row now holds a NaN or an infinity: the message names the table, the
  ///         key and the column; the row keeps the value (check gradients before applying them).
  void mark_updated(const row_view& row, std::uint64_t step) {
    const std::uint32_t slot = row.slot();
    if (slot >= next_slot_) [[unlikely]]
      stale(row);
    meta& m = meta_of(slot);
    if (m.epoch == 0 || m.key != row.key()) [[unlikely]]
      stale(row);
    if (!all_finite(row.data_, width_)) [[unlikely]]
      non_finite(row, step);
    m.last_step = std::max(m.last_step, step);
    m.epoch = epoch_;
  }

  /// The push of a batch: for every i whose key @p keys[i] has a row, calls @p f(i, row_view) to
  /// update the row in place, then marks it updated at global step @p step as mark_updated()
  /// does (a key without a row, not admitted or evicted since its pull, is skipped: its gradient
  /// is dropped), in the order of @p keys. It looks 32 keys up before updating their rows and
  /// prefetches the slots, so the memory latencies of many rows overlap: per row 1.5 to 1.7 times
  /// as fast as find() + mark_updated() on a table larger than the L2 cache (docs/embeddings.md).
  /// @p f must not change the table.
  /// @returns how many keys had a row.
  /// @throws dsgd::error as mark_updated(), after the rows before the bad one were marked.
  template <class F>
  std::size_t update_batch(std::span<const std::uint64_t> keys, std::uint64_t step, F&& f) {
    // In chunks: first every key of the chunk is looked up and its slot prefetched (a short
    // loop, so the processor overlaps many lookups' cache misses), then the rows are updated.
    constexpr std::size_t chunk = 32;
    constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
    std::array<std::uint32_t, chunk> slots{};
    std::size_t found = 0;
    for (std::size_t first = 0; first < keys.size(); first += chunk) {
      const std::size_t n = std::min(chunk, keys.size() - first);
      for (std::size_t i = 0; i < n; ++i) {
        const auto it = map_.find(keys[first + i]);
        slots[i] = it == map_.end() ? none : it->second;
        if (slots[i] != none) prefetch_slot(slots[i]);
      }
      for (std::size_t i = 0; i < n; ++i) {
        if (slots[i] == none) continue;
        const row_view row = view(slots[i]);
        f(first + i, row);
        mark_updated(row, step);
        ++found;
      }
    }
    return found;
  }

  /// Sets the row of @p key to @p weights and @p state (empty: table_options::initial_state)
  /// with stats @p stats, creating it if needed without asking admission: a restore, or a
  /// caller's explicit write. At the cap it makes room as find_or_admit() does.
  /// @throws dsgd::error (errc::shape_mismatch) when a span has the wrong size, (errc::
  ///         invalid_argument) when a value is NaN or infinite or the table is full; nothing is
  ///         written then.
  row_view assign(std::uint64_t key, std::span<const float> weights, std::span<const float> state = {},
                  row_stats stats = {}) {
    check_width(weights.size(), options_.dim, key, "assign: the weights", "dim");
    if (!state.empty()) check_width(state.size(), options_.state_floats, key, "assign: the state", "state_floats");
    if (const std::size_t bad = first_non_finite(weights.data(), weights.size()); bad != weights.size())
      throw error(errc::invalid_argument, where(key) + ": assign: weight " + std::to_string(bad) + " is not finite");
    if (const std::size_t bad = first_non_finite(state.data(), state.size()); bad != state.size())
      throw error(errc::invalid_argument,
                  where(key) + ": assign: state float " + std::to_string(bad) + " is not finite");
    std::uint32_t slot = 0;
    if (auto it = map_.find(key); it != map_.end()) {
      slot = it->second;
    } else {
      slot = new_row(key, stats.last_step);
    }
    float* d = data_of(slot);
    std::copy(weights.begin(), weights.end(), d);
    if (state.empty()) std::copy(options_.initial_state.begin(), options_.initial_state.end(), d + options_.dim);
    else std::copy(state.begin(), state.end(), d + options_.dim);
    meta_of(slot) = {key, stats.last_step, std::max<std::uint32_t>(stats.uses, 1), epoch_};
    return view(slot);
  }

  /// Removes the row of @p key, leaving a tombstone. @returns whether it had one.
  bool erase(std::uint64_t key) {
    auto it = map_.find(key);
    if (it == map_.end()) return false;
    release(it->second);
    ++stats_.erased;
    return true;
  }

  /// Evicts every row the policy says has expired at global step @p step (eviction::by_age:
  /// not touched in the last max_age steps), leaving tombstones. One scan of the slots.
  /// @returns how many rows it evicted.
  std::size_t evict_expired(std::uint64_t step) {
    std::size_t evicted = 0;
    for_each_slot([&](std::uint32_t slot, const meta& m) {
      if (evict_.expired(row_stats{m.last_step, m.uses}, step)) {
        release(slot);
        ++evicted;
      }
    });
    stats_.evicted += evicted;
    return evicted;
  }

  /// Calls @p f(const_row_view, row_stats) for every row, in an unspecified order. @p f must
  /// not change the table.
  template <class F>
  void for_each(F&& f) const {
    for_each_slot([&](std::uint32_t slot, const meta& m) {
      f(const_row_view(view(slot)), row_stats{m.last_step, m.uses});
    });
  }

  /// Calls @p f(const_row_view, row_stats) for every row created, assigned, looked up for
  /// training or updated since the last mark() (or since the table was made): with the
  /// tombstones, what an incremental checkpoint holds.
  template <class F>
  void for_each_changed(F&& f) const {
    for_each_slot([&](std::uint32_t slot, const meta& m) {
      if (m.epoch == epoch_) f(const_row_view(view(slot)), row_stats{m.last_step, m.uses});
    });
  }

  /// Calls @p f(key) for every key evicted or erased since the last mark() that has no row now
  /// (a key evicted and admitted again is a changed row, not a tombstone). Empty unless
  /// table_options::track_changes.
  template <class F>
  void for_each_tombstone(F&& f) const {
    for (std::uint64_t key : tombstones_) f(key);
  }
  std::size_t tombstone_count() const noexcept { return tombstones_.size(); }
  /// @returns whether the change record since the last mark() is whole: false once more keys
  /// were evicted or erased than table_options::max_tombstones keeps (an incremental checkpoint
  /// cannot be made from it then: take a full one).
  bool changes_complete() const noexcept { return changes_complete_; }

  /// Starts a new change record: forgets the tombstones and which rows changed. O(1) plus the
  /// tombstones' clear.
  void mark() {
    ++epoch_;
    tombstones_.clear();
    changes_complete_ = true;
  }

  std::size_t size() const noexcept { return map_.size(); }
  bool empty() const noexcept { return map_.empty(); }
  /// @returns the row cap (from max_rows and max_bytes; 2^32 - 1 when uncapped).
  std::size_t max_rows() const noexcept { return max_rows_; }
  std::size_t dim() const noexcept { return options_.dim; }
  std::size_t state_floats() const noexcept { return options_.state_floats; }
  /// @returns 8 + 4 (dim + state_floats): a row's key and floats, what a table would need at best.
  std::size_t raw_row_bytes() const noexcept { return sizeof(std::uint64_t) + width_ * sizeof(float); }
  const std::string& name() const noexcept { return options_.name; }
  const table_stats& stats() const noexcept { return stats_; }

  /// @returns the bytes the table holds: every heap allocation of its arena, metadata, hash
  /// map, free list, eviction scratch and tombstones (counted by their allocator as they are
  /// made and freed), its admission policy's state, and the table object itself.
  std::size_t bytes_used() const noexcept { return *bytes_ + admit_.bytes_used() + sizeof(*this); }

  const I& initializer() const noexcept { return init_; }
  const A& admission() const noexcept { return admit_; }
  const E& eviction() const noexcept { return evict_; }

 private:
  struct meta {
    std::uint64_t key = 0;
    std::uint64_t last_step = 0;
    std::uint32_t uses = 0;
    std::uint32_t epoch = 0;  // 0: a free slot
  };
  // One block of the arena: 2^block_shift_ slots (fewer for the last one under a cap), each a
  // meta followed by the row's floats, in one allocation of 8-byte words.
  class block {
   public:
    block(std::size_t slots, std::size_t slot_words, std::size_t floats, detail::counting_allocator<std::uint64_t> a)
        : alloc_{a}, words_{slots * slot_words}, data_{alloc_.allocate(words_)} {
      for (std::size_t i = 0; i < slots; ++i) {
        std::byte* slot = bytes() + i * slot_words * sizeof(std::uint64_t);
        ::new (static_cast<void*>(slot)) meta{};
        for (std::size_t j = 0; j < floats; ++j)
          ::new (static_cast<void*>(slot + sizeof(meta) + j * sizeof(float))) float(0.f);
      }
    }
    block(block&& other) noexcept
        : alloc_{other.alloc_}, words_{std::exchange(other.words_, 0)}, data_{std::exchange(other.data_, nullptr)} {}
    block& operator=(block&&) = delete;
    ~block() {
      if (data_) alloc_.deallocate(data_, words_);
    }
    std::byte* bytes() const noexcept { return reinterpret_cast<std::byte*>(data_); }

   private:
    detail::counting_allocator<std::uint64_t> alloc_;
    std::size_t words_;
    std::uint64_t* data_;
  };
  struct candidate {
    eviction_rank rank;
    std::uint64_t key;
    std::uint32_t slot;
    friend bool operator<(const candidate& a, const candidate& b) noexcept {
      return a.rank != b.rank ? a.rank < b.rank : a.key < b.key;
    }
  };

  template <class T>
  detail::counting_allocator<T> alloc() const noexcept {
    return detail::counting_allocator<T>(bytes_.get());
  }

  bool capped() const noexcept { return max_rows_ != std::numeric_limits<std::uint32_t>::max(); }
  std::size_t evict_batch() const noexcept {
    return std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(options_.evict_fraction * double(max_rows_))));
  }

  // The most rows whose memory fits in @p budget: arena and metadata per row, the free list at
  // its worst (twice the rows it could hold, as a vector grows), the map's buckets as tsl
  // reserves them (a power of two at least rows / max_load_factor) and the eviction scratch.
  std::size_t rows_within(std::size_t budget) const {
    const std::size_t bucket = bucket_bytes();
    const std::size_t per_row = slot_words_ * sizeof(std::uint64_t) + 2 * sizeof(std::uint32_t);
    const auto cost = [&](std::size_t n) {
      const double want = std::ceil(double(n) / double(options_.max_load_factor));
      const std::size_t buckets = std::bit_ceil(std::max<std::size_t>(2, static_cast<std::size_t>(want)));
      const std::size_t blocks = (n >> block_shift_) + 1;
      const std::size_t batch =
          std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(options_.evict_fraction * double(n))));
      return n * per_row + buckets * bucket + 2 * blocks * sizeof(block) + batch * sizeof(candidate);
    };
    std::size_t lo = 0, hi = std::min<std::size_t>(budget / per_row + 1, std::numeric_limits<std::uint32_t>::max());
    while (lo < hi) {  // the largest n with cost(n) <= budget
      const std::size_t mid = lo + (hi - lo + 1) / 2;
      if (cost(mid) <= budget) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  // The bytes of one bucket of the map, measured: what its allocator gets per bucket.
  std::size_t bucket_bytes() const {
    std::size_t bytes = 0;
    map_type probe(0, detail::key_hasher{}, std::equal_to<>{},
                   detail::counting_allocator<std::pair<std::uint64_t, std::uint32_t>>(&bytes));
    probe.rehash(64);
    return (bytes + probe.bucket_count() - 1) / probe.bucket_count();
  }

  std::byte* slot_bytes(std::uint32_t slot) const noexcept {
    return blocks_[slot >> block_shift_].bytes() +
           std::size_t(slot & ((1u << block_shift_) - 1)) * slot_words_ * sizeof(std::uint64_t);
  }
  meta& meta_of(std::uint32_t slot) noexcept { return *std::launder(reinterpret_cast<meta*>(slot_bytes(slot))); }
  const meta& meta_of(std::uint32_t slot) const noexcept {
    return *std::launder(reinterpret_cast<const meta*>(slot_bytes(slot)));
  }
  float* data_of(std::uint32_t slot) noexcept {
    return std::launder(reinterpret_cast<float*>(slot_bytes(slot) + sizeof(meta)));
  }
  const float* data_of(std::uint32_t slot) const noexcept {
    return std::launder(reinterpret_cast<const float*>(slot_bytes(slot) + sizeof(meta)));
  }
  std::span<float> weights_of(std::uint32_t slot) noexcept { return {data_of(slot), options_.dim}; }
  row_view view(std::uint32_t slot) noexcept {
    return {meta_of(slot).key, slot, data_of(slot), options_.dim, options_.state_floats};
  }
  const_row_view view(std::uint32_t slot) const noexcept {
    return {meta_of(slot).key, slot, data_of(slot), options_.dim, options_.state_floats};
  }

  // Asks for the cache lines of a slot before they are needed (where the compiler can).
  void prefetch_slot(std::uint32_t slot) const noexcept {
#if defined(__GNUC__) || defined(__clang__)
    const std::byte* p = slot_bytes(slot);
    for (std::size_t offset = 0; offset < slot_words_ * sizeof(std::uint64_t); offset += 64)
      __builtin_prefetch(p + offset, 1);
#else
    (void)slot;
#endif
  }

  template <class F>
  void for_each_slot(F&& f) const {
    for (std::uint32_t slot = 0; slot < next_slot_; ++slot)
      if (const meta& m = meta_of(slot); m.epoch != 0) f(slot, m);
  }

  // A slot for a new row of @p key (made room for at the cap), entered in the map; its
  // contents are the caller's to fill.
  std::uint32_t new_row(std::uint64_t key, std::uint64_t step) {
    if (map_.size() >= max_rows_) make_room(key, step);
    std::uint32_t slot = 0;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = next_slot_;
      const std::size_t b = slot >> block_shift_;
      if (b == blocks_.size()) {
        const std::size_t first = b << block_shift_;
        const std::size_t n = std::min<std::size_t>(std::size_t{1} << block_shift_, max_rows_ - first);
        blocks_.emplace_back(n, slot_words_, width_, alloc<std::uint64_t>());
      }
      ++next_slot_;
    }
    map_.emplace(key, slot);
    if (!tombstones_.empty()) tombstones_.erase(key);
    return slot;
  }

  // Whether the policy evicts: E::evicts, and a run-time policy's own answer where it has one
  // (embedding::any_eviction holding eviction::none: evicts_rows()).
  bool evicts() const noexcept {
    if constexpr (!E::evicts) {
      return false;
    } else if constexpr (requires { evict_.evicts_rows(); }) {
      return evict_.evicts_rows();
    } else {
      return true;
    }
  }

  // Evicts the evict_batch() rows the policy ranks lowest among those not touched at @p step
  // or later, or throws if the policy never evicts or every row is that recent.
  void make_room(std::uint64_t key, std::uint64_t step) {
    if (!evicts()) {
      throw error(errc::invalid_argument, where(key) + ": the table is full (" + std::to_string(max_rows_) +
                                              " rows, its cap) and its eviction policy is none: raise max_rows or "
                                              "max_bytes, or choose an eviction policy");
    }
    if constexpr (E::evicts) {
      const std::size_t batch = evict_batch();
      scratch_.clear();
      // A max-heap of the batch lowest-ranked rows seen so far (std::push_heap keeps the
      // greatest at the front).
      for_each_slot([&](std::uint32_t slot, const meta& m) {
        if (m.last_step >= step) return;
        const candidate c{evict_.rank(row_stats{m.last_step, m.uses}), m.key, slot};
        if (scratch_.size() < batch) {
          scratch_.push_back(c);
          std::push_heap(scratch_.begin(), scratch_.end());
        } else if (c < scratch_.front()) {
          std::pop_heap(scratch_.begin(), scratch_.end());
          scratch_.back() = c;
          std::push_heap(scratch_.begin(), scratch_.end());
        }
      });
      if (scratch_.empty())
        throw error(errc::invalid_argument, where(key) + ": the table is full (" + std::to_string(max_rows_) +
                                                " rows, its cap) and every row was "
                                                "touched at step " +
                                                std::to_string(step) +
                                                " or later, so none may be evicted: the cap is "
                                                "smaller than a step's rows");
      for (const candidate& c : scratch_) release(c.slot);
      stats_.evicted += scratch_.size();
      scratch_.clear();
    }
  }

  // Frees the slot of a row (evicted or erased) and leaves its tombstone.
  void release(std::uint32_t slot) {
    meta& m = meta_of(slot);
    map_.erase(m.key);
    if (options_.track_changes && changes_complete_) {
      if (tombstones_.size() < tombstone_cap()) {
        tombstones_.insert(m.key);
      } else {  // past the bound: the record is incomplete until the next mark()
        tombstones_.clear();
        changes_complete_ = false;
      }
    }
    m.epoch = 0;
    free_.push_back(slot);
  }

  [[noreturn]] void stale(const row_view& row) const {
    throw error(errc::invalid_argument,
                where(row.key()) + ": a view of a row that was evicted or erased since it was looked up");
  }

  [[noreturn]] void non_finite(const row_view& row, std::uint64_t step) const {
    throw error(errc::invalid_argument, where(row.key()) + ": an update at step " + std::to_string(step) +
                                            " left a non-finite value in " +
                                            column_name(first_non_finite(row.data_, width_)));
  }

  void check_width(std::size_t got, std::size_t want, std::uint64_t key, const char* what, const char* field) const {
    if (got != want)
      throw error(errc::shape_mismatch, where(key) + ": " + what + " has " + std::to_string(got) +
                                            " floats, the table's " + field + " is " + std::to_string(want));
  }

  // @returns whether the @p n floats at @p p are all finite. A float is NaN or infinite when its
  // exponent is all ones, and then adding 1 to the exponent carries into the sign bit; an
  // integer OR over 4 lanes (16-byte loads, as the update's stores were: a wider load of a row
  // just written would wait for store forwarding to fail), which works under -ffast-math too.
  static bool all_finite(const float* p, std::size_t n) noexcept {
    std::uint32_t acc[4] = {};
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
      std::uint32_t bits[4];
      std::memcpy(bits, p + i, sizeof bits);
      for (int k = 0; k < 4; ++k) acc[k] |= (bits[k] & 0x7f800000u) + 0x00800000u;
    }
    for (; i < n; ++i) {
      std::uint32_t bits;
      std::memcpy(&bits, p + i, sizeof bits);
      acc[0] |= (bits & 0x7f800000u) + 0x00800000u;
    }
    return ((acc[0] | acc[1] | acc[2] | acc[3]) & 0x80000000u) == 0;
  }

  // @returns the index of the first NaN or infinity among the @p n floats at @p p, or n.
  static std::size_t first_non_finite(const float* p, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isfinite(p[i])) return i;
    return n;
  }

  std::string column_name(std::size_t column) const {
    return column < options_.dim ? "weight " + std::to_string(column)
                                 : "state float " + std::to_string(column - options_.dim);
  }

  std::string where(std::uint64_t key) const {
    std::string s = "embedding table '" + options_.name + "'";
    if (options_.ps_task >= 0) s += " on ps task " + std::to_string(options_.ps_task);
    return s + ", key " + std::to_string(key);
  }

  using map_type = tsl::robin_map<std::uint64_t, std::uint32_t, detail::key_hasher, std::equal_to<>,
                                  detail::counting_allocator<std::pair<std::uint64_t, std::uint32_t>>>;
  using set_type =
      tsl::robin_set<std::uint64_t, detail::key_hasher, std::equal_to<>, detail::counting_allocator<std::uint64_t>>;

  table_options options_;
  [[no_unique_address]] I init_;
  A admit_;
  [[no_unique_address]] E evict_;
  std::unique_ptr<std::size_t> bytes_;  // what the containers' allocators count (stable across moves)
  map_type map_;
  set_type tombstones_;
  bool changes_complete_ = true;  // no tombstone dropped since the last mark()
  std::size_t tombstone_cap() const noexcept {
    if (options_.max_tombstones != 0) return options_.max_tombstones;
    return capped() ? std::max<std::size_t>(max_rows_ / 8, 1024) : std::size_t{1} << 16;
  }
  std::vector<block, detail::counting_allocator<block>> blocks_;
  std::vector<std::uint32_t, detail::counting_allocator<std::uint32_t>> free_;
  std::vector<candidate, detail::counting_allocator<candidate>> scratch_;
  std::size_t width_ = 0;       // floats per row
  std::size_t slot_words_ = 0;  // 8-byte words per slot: the meta, then the floats
  unsigned block_shift_ = 0;
  std::size_t max_rows_ = 0;
  std::uint32_t next_slot_ = 0;
  std::uint32_t epoch_ = 1;
  table_stats stats_;
};

}  // namespace dsgd::embedding
