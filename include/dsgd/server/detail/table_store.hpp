// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// server::detail::table_store: the embedding tables a ps task serves, by table id, each its
/// part of a dynamic table (update::table_shard) under the table's own rule, made from the
/// embedding::table_spec a worker sent with create_table.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/embedding/any_row_optimizer.hpp>
#include <dsgd/embedding/any_table.hpp>
#include <dsgd/embedding/table_spec.hpp>
#include <dsgd/error.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/sync_average.hpp>
#include <dsgd/update/table_shard.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
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

  /// Calls @p f(id, const served_table&) for every table.
  template <class F>
  void for_each(F&& f) const {
    for (std::uint32_t id = 0; id < tables_.size(); ++id)
      if (tables_[id]) f(id, std::as_const(*tables_[id]));
  }

 private:
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
};

}  // namespace dsgd::server::detail
