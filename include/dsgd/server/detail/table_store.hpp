// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// server::detail::table_store: the embedding tables a ps task serves, by table id, each its
/// part of a dynamic table (update::table_shard) under the table's own rule, made from the
/// embedding::table_spec a worker sent with create_table.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/checkpoint/table_file.hpp>
#include <dsgd/embedding/any_row_optimizer.hpp>
#include <dsgd/embedding/any_table.hpp>
#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/error.hpp>
#include <dsgd/placement/hash_keys.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/sync_average.hpp>
#include <dsgd/update/table_shard.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dsgd::server::detail {

/// One table as a ps task serves it: its spec and its part of the rows, under the rule the spec
/// names (chosen per table at run time; the shard itself is compiled for each rule).
class served_table {
 public:
  explicit served_table(embedding::table_spec spec) : spec_(std::move(spec)) {}
  virtual ~served_table() = default;
  served_table(const served_table&) = delete;
  served_table& operator=(const served_table&) = delete;

  const embedding::table_spec& spec() const noexcept { return spec_; }
  std::size_t dim() const noexcept { return spec_.dim; }

  /// update::table_shard::try_pull, wait_reason, read, push, finish (the table's rule).
  virtual std::optional<std::uint64_t> try_pull(std::size_t worker, std::uint64_t step,
                                                std::span<const std::uint64_t> keys, std::span<float> out) = 0;
  virtual std::string wait_reason(std::size_t worker, std::uint64_t step) const = 0;
  virtual void read(std::span<const std::uint64_t> keys, std::span<float> out) const = 0;
  virtual update::table_push_result push(std::size_t worker, std::uint64_t step, std::span<const std::uint64_t> keys,
                                         std::span<const float> grads) = 0;
  virtual void finish(std::size_t worker) = 0;
  /// @returns the sync step, or the updates applied under async and SSP.
  virtual std::uint64_t step() const = 0;
  /// @returns the table's counters and the gradient rows dropped (keys without a row).
  virtual embedding::table_stats stats() const = 0;
  virtual std::uint64_t dropped_keys() const = 0;
  /// @returns the rows this ps task holds and the bytes they take (row_table::bytes_used).
  virtual std::size_t rows() const = 0;
  virtual std::size_t bytes_used() const = 0;

  /// A checkpoint of table @p id, at one moment under the table's lock: every row (@p full), or
  /// the rows changed since the last snapshot (row_table::for_each_changed) and those of
  /// @p extra (keys, ascending, written by earlier snapshots that no checkpoint committed since),
  /// with the keys among them and row_table's tombstones that have no row now as tombstones;
  /// then the table's change record starts afresh (row_table::mark()).
  virtual checkpoint::table_part snapshot(std::uint32_t id, bool full, std::span<const std::uint64_t> extra) = 0;
  /// A restore onto this (new) table: its rows become @p m's (ascending keys, as assign() makes
  /// them, with their stats), its counters @p c, and its change record starts afresh.
  virtual void restore(const checkpoint::merged_table& m, const checkpoint::table_counters& c) = 0;

 private:
  embedding::table_spec spec_;
};

/// served_table under update rule @p U.
template <UpdateRule U>
class served_table_under final : public served_table {
  using shard_type = update::table_shard<U, embedding::any_row_optimizer, embedding::any_table>;

 public:
  served_table_under(embedding::table_spec spec, U rule, std::size_t workers, int ps_task)
      : served_table(spec),
        shard_(embedding::make_table(spec, ps_task), embedding::make_row_optimizer(spec.optimizer), workers, rule) {}

  std::optional<std::uint64_t> try_pull(std::size_t worker, std::uint64_t step, std::span<const std::uint64_t> keys,
                                        std::span<float> out) override {
    return shard_.try_pull(worker, step, keys, out);
  }
  std::string wait_reason(std::size_t worker, std::uint64_t step) const override {
    return shard_.wait_reason(worker, step);
  }
  void read(std::span<const std::uint64_t> keys, std::span<float> out) const override { shard_.read(keys, out); }
  update::table_push_result push(std::size_t worker, std::uint64_t step, std::span<const std::uint64_t> keys,
                                 std::span<const float> grads) override {
    return shard_.push(worker, step, keys, grads);
  }
  void finish(std::size_t worker) override { shard_.finish(worker); }
  std::uint64_t step() const override { return shard_.step(); }
  embedding::table_stats stats() const override { return shard_.stats(); }
  std::uint64_t dropped_keys() const override { return shard_.dropped_keys(); }
  std::size_t rows() const override {
    return shard_.with_table([](const embedding::any_table& t) { return t.size(); });
  }
  std::size_t bytes_used() const override {
    return shard_.with_table([](const embedding::any_table& t) { return t.bytes_used(); });
  }

  checkpoint::table_part snapshot(std::uint32_t id, bool full, std::span<const std::uint64_t> extra) override {
    checkpoint::table_part part;
    part.id = id;
    part.spec = spec();
    shard_.with_table_mut([&](embedding::any_table& t, const update::table_shard_counters& c) {
      part.dim = t.dim();
      part.state_floats = t.state_floats();
      part.counters = {c.step, c.updates, c.dropped_keys, c.dropped_pushes, c.clocks};
      std::vector<std::uint64_t> keys;
      std::vector<embedding::row_stats> stats;
      std::vector<float> values;
      auto take = [&](const embedding::const_row_view& r, embedding::row_stats st) {
        keys.push_back(r.key());
        stats.push_back(st);
        values.insert(values.end(), r.weights().begin(), r.weights().end());
        values.insert(values.end(), r.state().begin(), r.state().end());
      };
      if (full) {
        t.for_each(take);
      } else {
        if (!t.changes_complete())
          throw error(errc::invalid_argument,
                      "table '" + spec().name + "': more keys were evicted since its last checkpoint than its " +
                          "change record keeps (embedding::table_options::max_tombstones): this checkpoint must "
                          "be a full one");
        t.for_each_changed(take);
        // The rows of the keys earlier uncommitted snapshots wrote, unless changed again.
        if (!extra.empty()) {
          std::vector<std::uint64_t> changed(keys);
          std::sort(changed.begin(), changed.end());
          t.for_each([&](const embedding::const_row_view& r, embedding::row_stats st) {
            if (std::binary_search(extra.begin(), extra.end(), r.key()) &&
                !std::binary_search(changed.begin(), changed.end(), r.key()))
              take(r, st);
          });
        }
        t.for_each_tombstone([&](std::uint64_t k) { part.tombstones.push_back(k); });
        for (auto k : extra)
          if (!t.contains(k)) part.tombstones.push_back(k);
        std::sort(part.tombstones.begin(), part.tombstones.end());
        part.tombstones.erase(std::unique(part.tombstones.begin(), part.tombstones.end()), part.tombstones.end());
      }
      t.mark();
      // Rows in ascending key order.
      std::vector<std::size_t> order(keys.size());
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
      const std::size_t w = part.dim + part.state_floats;
      part.keys.reserve(order.size());
      part.stats.reserve(order.size());
      part.values.reserve(order.size() * w);
      for (auto i : order) {
        part.keys.push_back(keys[i]);
        part.stats.push_back(stats[i]);
        part.values.insert(part.values.end(), values.begin() + i * w, values.begin() + (i + 1) * w);
      }
    });
    return part;
  }

  void restore(const checkpoint::merged_table& m, const checkpoint::table_counters& c) override {
    shard_.restore(
        [&](embedding::any_table& t) {
          const std::size_t dim = m.dim;
          for (std::size_t i = 0; i < m.rows(); ++i) {
            const auto row = m.row(i);
            t.assign(m.keys[i], row.first(dim), row.subspan(dim), m.stats[i]);
          }
          t.mark();
        },
        update::table_shard_counters{c.step, c.updates, c.dropped_keys, c.dropped_pushes, c.clocks});
  }

 private:
  shard_type shard_;
};

/// The tables of one ps task, by the id their workers gave them (their index in creation order).
class table_store {
 public:
  /// Table ids a ps task accepts: below this (a bad id is an error, not an allocation).
  static constexpr std::uint32_t max_tables = 1024;

  /// Makes table @p id from @p spec for @p workers workers, on ps task @p ps_task (@p self,
  /// "ps:0", in errors); the same spec again is nothing new.
  /// @returns the table, and whether it was made now.
  /// @throws dsgd::error (errc::invalid_argument) for an id past max_tables, a bad spec, or a
  ///         spec other than the one the table was made with (naming both)
  std::pair<served_table*, bool> create(std::uint32_t id, const embedding::table_spec& spec, std::size_t workers,
                                        int ps_task, const std::string& self) {
    if (id >= max_tables)
      throw error(errc::invalid_argument, self + ": create_table: table id " + std::to_string(id) + " of '" +
                                              spec.name + "' is past the " + std::to_string(max_tables) +
                                              " tables a ps task holds");
    spec.validate();
    if (id < tables_.size() && tables_[id]) {
      if (tables_[id]->spec() == spec) return {tables_[id].get(), false};
      throw error(errc::invalid_argument, self + ": create_table: table " + std::to_string(id) + " is " +
                                              tables_[id]->spec().describe() + "; a worker asked for " +
                                              spec.describe());
    }
    if (id >= tables_.size()) tables_.resize(id + 1);
    tables_[id] = make(spec, workers, ps_task);
    return {tables_[id].get(), true};
  }

  /// @returns table @p id, or nullptr.
  served_table* find(std::uint32_t id) noexcept { return id < tables_.size() ? tables_[id].get() : nullptr; }
  const served_table* find(std::uint32_t id) const noexcept {
    return id < tables_.size() ? tables_[id].get() : nullptr;
  }
  /// @returns table @p id. @throws dsgd::error (errc::invalid_argument) naming @p what and
  ///          @p self when there is none
  served_table& at(std::uint32_t id, const std::string& self, const char* what) {
    if (auto* t = find(id)) return *t;
    throw error(errc::invalid_argument, self + ": " + what + ": no table " + std::to_string(id) +
                                            " (create_table first; this ps task holds " + std::to_string(count()) +
                                            ")");
  }

  /// @p worker has no more data: no table waits for it.
  void finish(std::size_t worker) {
    for (auto& t : tables_)
      if (t) t->finish(worker);
  }

  /// @returns how many tables there are.
  std::size_t count() const noexcept {
    std::size_t n = 0;
    for (const auto& t : tables_) n += t != nullptr;
    return n;
  }

  /// Calls @p f(id, served_table&) for every table.
  template <class F>
  void for_each_mut(F&& f) {
    for (std::uint32_t id = 0; id < tables_.size(); ++id)
      if (tables_[id]) f(id, *tables_[id]);
  }

  /// Calls @p f(id, const served_table&) for every table.
  template <class F>
  void for_each(F&& f) const {
    for (std::uint32_t id = 0; id < tables_.size(); ++id)
      if (tables_[id]) f(id, std::as_const(*tables_[id]));
  }

  // --- checkpoints ------------------------------------------------------------------------

  /// Writes this task's (@p ps_task of @p ps_tasks, @p self in errors) table file of checkpoint
  /// @p step into @p dir (nothing when it holds no table): every row of every table, or, with
  /// @p delta_of, the rows changed since checkpoint *delta_of and the keys removed since, as
  /// checkpoint/table_file.hpp lays them out.
  ///
  /// A delta is relative to what this task wrote at *delta_of, which must be a checkpoint it
  /// wrote (or restored) since its last full one. Each snapshot forgets the changes it wrote
  /// (row_table::mark()), and the keys it wrote are kept until a later delta names a later
  /// checkpoint: so a delta whose commit failed (a ps lost, a disk full) loses nothing, as the
  /// next delta of the same base writes its keys again with theirs.
  /// @throws dsgd::error (errc::invalid_argument) for a delta of a checkpoint this task cannot
  ///         build on (save a full one), an I/O error naming the file
  void save(const std::filesystem::path& dir, std::uint64_t step, std::size_t ps_task, std::size_t ps_tasks,
            std::optional<std::uint64_t> delta_of, const std::string& self) {
    auto base = writes_.end();
    if (delta_of) {
      if (*delta_of >= step)
        throw error(errc::invalid_argument, self + ": checkpoint " + std::to_string(step) +
                                                " cannot be a delta of checkpoint " + std::to_string(*delta_of) +
                                                ", which is not before it");
      base = std::find_if(writes_.begin(), writes_.end(), [&](const write& w) { return w.step == *delta_of; });
      if (base == writes_.end())
        throw error(errc::invalid_argument,
                    self + ": cannot write checkpoint " + std::to_string(step) + " as a delta of checkpoint " +
                        std::to_string(*delta_of) + ": this ps task's tables were not saved or restored there " +
                        "since its last full checkpoint or restore (" + written() + "); save a full checkpoint");
    }
    checkpoint::table_file file;
    file.info = {delta_of ? checkpoint::table_file_kind::delta : checkpoint::table_file_kind::full,
                 ps_task,
                 ps_tasks,
                 step,
                 delta_of.value_or(0),
                 0};
    write w{step, {}};
    for (std::uint32_t id = 0; id < tables_.size(); ++id) {
      if (!tables_[id]) continue;
      std::vector<std::uint64_t> extra;
      if (delta_of) {
        for (auto it = std::next(base); it != writes_.end(); ++it)
          if (auto k = it->keys.find(id); k != it->keys.end())
            extra.insert(extra.end(), k->second.begin(), k->second.end());
        std::sort(extra.begin(), extra.end());
        extra.erase(std::unique(extra.begin(), extra.end()), extra.end());
      }
      auto part = tables_[id]->snapshot(id, !delta_of, extra);
      if (delta_of) {
        auto& keys = w.keys[id];
        keys.reserve(part.keys.size() + part.tombstones.size());
        std::merge(part.keys.begin(), part.keys.end(), part.tombstones.begin(), part.tombstones.end(),
                   std::back_inserter(keys));
      }
      file.tables.push_back(std::move(part));
    }
    file.info.tables = file.tables.size();
    // The snapshots forgot their changes: recorded before the file is written, so that a write
    // that fails is made good by the next delta.
    if (delta_of) writes_.erase(writes_.begin(), base);
    else writes_.clear();
    std::erase_if(writes_, [&](const write& x) { return x.step == step; });
    writes_.push_back(std::move(w));
    if (file.tables.empty()) return;
    try {
      checkpoint::write_table_file(dir, file);
    } catch (const dsgd::error&) {
      throw;
    } catch (const std::exception& e) {
      throw error(errc::not_found, self + " cannot write the tables of checkpoint " + std::to_string(step) + " in " +
                                       dir.string() + ": " + e.what());
    }
  }

  /// Reads the tables of checkpoint @p step in @p dir (its chain from its full base:
  /// checkpoint::read_tables), keeping the keys placement::hash_keys routes to ps task
  /// @p ps_task of @p ps_tasks. Changes nothing: install() them once the whole restore has read
  /// what it needs.
  /// @throws dsgd::error (errc::checkpoint_corrupt) naming a damaged file, table or key
  static std::vector<checkpoint::merged_table> read(const std::filesystem::path& dir, std::uint64_t step,
                                                    std::size_t ps_task, std::size_t ps_tasks) {
    auto tables = checkpoint::read_tables(
        dir, step, [&](std::uint64_t key) { return placement::hash_keys::task_of(key, ps_tasks) == ps_task; });
    for (const auto& m : tables)
      if (m.id >= max_tables)
        throw error(errc::checkpoint_corrupt, "checkpoint " + std::to_string(step) + ": " +
                                                  checkpoint::table_name(m.id, m.spec.name) + " is past the " +
                                                  std::to_string(max_tables) + " tables a ps task holds");
    return tables;
  }

  /// Replaces every table with those of checkpoint @p step as read(): each made afresh from its
  /// saved spec for @p workers workers (so a later create_table with that spec is nothing new),
  /// its rows and counters the checkpoint's (ps task @p ps_task of @p ps_tasks continues from
  /// merged_table::counters_for()). A table the checkpoint lacks is gone. The next delta may be
  /// one of @p step.
  /// @returns how many rows this task holds now.
  std::size_t install(std::vector<checkpoint::merged_table> tables, std::uint64_t step, std::size_t workers,
                      std::size_t ps_task, std::size_t ps_tasks) {
    std::vector<std::unique_ptr<served_table>> made;
    std::size_t rows = 0;
    for (const auto& m : tables) {
      if (m.id >= made.size()) made.resize(m.id + 1);
      made[m.id] = make(m.spec, workers, static_cast<int>(ps_task));
      made[m.id]->restore(m, m.counters_for(ps_task, ps_tasks));
      rows += m.rows();
    }
    tables_ = std::move(made);
    writes_.clear();
    writes_.push_back({step, {}});
    return rows;
  }

 private:
  // A table file this task wrote (or the checkpoint it restored): its step and, for a delta,
  // the keys of each table it wrote (rows and tombstones, ascending).
  struct write {
    std::uint64_t step = 0;
    std::map<std::uint32_t, std::vector<std::uint64_t>> keys;
  };
  std::string written() const {
    if (writes_.empty()) return "it has written none";
    std::string s = "it can build on";
    for (const auto& w : writes_) s += " " + std::to_string(w.step);
    return s;
  }

  static std::unique_ptr<served_table> make(const embedding::table_spec& spec, std::size_t workers, int ps_task) {
    using kind = embedding::table_rule::kind;
    switch (spec.rule.rule) {
      case kind::sync:
        return std::make_unique<served_table_under<update::sync_average>>(spec, update::sync_average{}, workers,
                                                                          ps_task);
      case kind::bounded_staleness:
        return std::make_unique<served_table_under<update::bounded_staleness>>(
            spec, update::bounded_staleness{.staleness = spec.rule.staleness}, workers, ps_task);
      case kind::async:
        break;
    }
    return std::make_unique<served_table_under<update::async>>(spec, update::async{}, workers, ps_task);
  }

  std::vector<std::unique_ptr<served_table>> tables_;
  // Since the last full save or restore, oldest first: what a delta may build on.
  std::vector<write> writes_;
};

}  // namespace dsgd::server::detail
