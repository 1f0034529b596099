// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// server::detail::shard_store: the shards one ps task holds. The placement the first
/// registration brought (every shard's layout, how many this task holds), the shards the update
/// rule made of them, the pushes of each replica every shard received, and their checkpoint:
/// what a ps task would have to keep if it answered no request at all.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/checkpoint/saver.hpp>
#include <dsgd/error.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/detail/shard_checkpoint.hpp>
#include <dsgd/server/detail/sparse_layout.hpp>
#include <dsgd/server/ps_options.hpp>
#include <dsgd/transport/frame.hpp>
#include <dsgd/update/concepts.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dsgd::server::detail {

/// The shards of ps task @p self under rule @p U with optimizer @p O on device @p D, keyed by
/// (variable, shard).
template <UpdateRule U, class O, Device D>
class shard_store {
 public:
  using shard_type = typename U::template shard<D, O>;

  /// The shards of ps task @p self, serving @p replicas, made by @p rule with @p optimizer on
  /// @p device.
  shard_store(std::string self, std::size_t replicas, U rule, O optimizer, D device)
      : self_(std::move(self)),
        replicas_(replicas),
        rule_(std::move(rule)),
        optimizer_(std::move(optimizer)),
        device_(std::move(device)) {}

  /// @returns the key of shard @p s of variable @p v.
  static std::uint64_t key(std::uint32_t v, std::uint32_t s) { return (std::uint64_t{v} << 32) | s; }
  /// @returns the key of the shard header @p h names.
  static std::uint64_t key(const transport::frame_header& h) { return key(h.variable, h.shard); }

  // --- the placement ----------------------------------------------------------------------

  /// Takes the placement of the first registration @p r (its layouts, how many shards this
  /// task holds); checks every later one against it. @returns true for the first.
  /// @throws dsgd::error(errc::placement_mismatch) naming both placements
  bool agree(const protocol::register_request& r) {
    if (placed_) {
      if (r.fingerprint != fingerprint_ || r.placement != placement_)
        throw error(errc::placement_mismatch, "placement of " + r.task + " differs from the one " + self_ +
                                                  " holds (were variables created " +
                                                  "in another order or with other shapes?)\n  " + self_ + ": " +
                                                  placement_ + "\n  " + r.task + ": " + r.placement);
      return false;
    }
    placed_ = true;
    placement_ = r.placement;
    fingerprint_ = r.fingerprint;
    expected_ = r.shards;
    for (const auto& l : r.layouts) layouts_[key(l.variable, l.shard)] = l;
    return true;
  }
  /// @returns whether a registration said how many shards this task holds.
  bool placed() const noexcept { return placed_; }
  /// @returns true once every shard of the placement exists (a placement may leave it none).
  bool ready() const { return placed_ && shards_.size() >= expected_; }
  /// @returns "3 of 4" (created of expected; "?" before a registration).
  std::string progress() const {
    return std::to_string(shards_.size()) + " of " + (placed_ ? std::to_string(expected_) : std::string("?"));
  }
  /// @returns the layout of the shard @p h names, or nullptr outside the placement.
  const protocol::shard_layout* layout(const transport::frame_header& h) const {
    auto it = layouts_.find(key(h));
    return it == layouts_.end() ? nullptr : &it->second;
  }
  /// @returns every shard's layout, by key.
  const std::map<std::uint64_t, protocol::shard_layout>& layouts() const noexcept { return layouts_; }

  // --- the shards -------------------------------------------------------------------------

  /// @returns the shard (variable, shard), or nullptr.
  shard_type* find(std::uint32_t variable, std::uint32_t shard) const {
    auto it = shards_.find(key(variable, shard));
    return it == shards_.end() ? nullptr : it->second.get();
  }
  /// @returns the shard @p h names, or nullptr.
  shard_type* find(const transport::frame_header& h) const { return find(h.variable, h.shard); }
  /// @returns the shard a pull @p h asks for.
  /// @throws dsgd::error(errc::not_found) naming it when this task does not hold it
  shard_type& pulled(const transport::frame_header& h) const {
    if (auto* s = find(h)) return *s;
    throw error(errc::not_found, "pull of variable " + std::to_string(h.variable) + " shard " +
                                     std::to_string(h.shard) + ", which " + self_ + " does not hold");
  }
  /// @returns how many shards exist.
  std::size_t size() const noexcept { return shards_.size(); }
  /// @returns the step of a shard (the global step under sync), 0 before any.
  std::uint64_t global_step() const { return shards_.empty() ? 0 : shards_.begin()->second->step(); }
  /// Calls @p f(shard) for every shard.
  template <class F>
  void for_each(F f) {
    for (auto& [k, shard] : shards_) f(*shard);
  }

  /// Creates the shard @p h names from @p values (its step h.step: 0, or the checkpoint it was
  /// restored from) unless it exists. @returns the new shard, or nullptr when it existed.
  shard_type* create(const transport::frame_header& h, std::span<const float> values) {
    if (shards_.contains(key(h))) return nullptr;
    auto shard = rule_.template make_shard<D, O>(device_, values, optimizer_of(key(h)), replicas_);
    if (h.step != 0) shard->assign(values, h.step);
    return shards_.emplace(key(h), std::move(shard)).first->second.get();
  }

  // --- pushes received --------------------------------------------------------------------

  /// @returns the pushes of @p replica shard @p k received (every outcome counts: the push
  /// was taken).
  std::uint64_t& pushes_received(std::uint64_t k, std::size_t replica) {
    auto& per_replica = received_[k];
    per_replica.resize(replicas_);
    return per_replica[replica];
  }
  /// @returns per layout of @p layouts the pushes of @p replica received (u64 LE): the reply
  /// to a registration.
  std::shared_ptr<std::vector<std::uint64_t>> counts(const std::vector<protocol::shard_layout>& layouts,
                                                     std::size_t replica) {
    auto out = std::make_shared<std::vector<std::uint64_t>>();
    for (const auto& l : layouts) out->push_back(to_le(pushes_received(key(l.variable, l.shard), replica)));
    return out;
  }

  // --- checkpoints ------------------------------------------------------------------------

  /// Writes this task's (@p ps_index of @p ps_tasks) data file of checkpoint @p step into
  /// @p dir: every shard's values, slots, counters and pushes received per replica, read
  /// together (the counts are those the values hold).
  void save(const std::filesystem::path& dir, std::uint64_t step, std::size_t ps_index, std::size_t ps_tasks) {
    std::vector<std::pair<protocol::shard_layout, typename shard_type::saved_state>> held;
    std::vector<std::vector<std::uint64_t>> pushes;
    for (auto& [k, shard] : shards_) {
      held.emplace_back(layouts_.at(k), shard->save());
      pushes_received(k, 0);  // sized for every replica
      pushes.push_back(received_.at(k));
    }
    write_shard_checkpoint(dir, step, ps_index, ps_tasks, held, pushes);
  }

  /// What restore() did.
  struct restored {
    std::size_t shards = 0;  ///< read from the checkpoint
    bool recreated = false;  ///< over existing shards (a fresh task had none)
    std::string missing;     ///< slots and counters the checkpoint's version lacks
  };
  /// Overwrites (or creates, calling @p created(shard) for each new one) every shard of the
  /// placement from @p reader's checkpoint, and sets the push counts to the checkpoint's.
  template <class Created>
  restored restore(const checkpoint::checkpoint_reader& reader, Created created) {
    const auto probe = [&](const protocol::shard_layout& l) {
      return optim::make_state(optim::for_variable(optimizer_, l.name), device_, 0);
    };
    auto [states, pushes, missing] = read_shards<typename shard_type::saved_state>(reader, layouts_, probe, replicas_);
    restored out{states.size(), !shards_.empty(), missing};
    for (auto& [k, state] : states) {
      auto it = shards_.find(k);
      if (it == shards_.end()) {
        it = shards_.emplace(k, rule_.template make_shard<D, O>(device_, state.values, optimizer_of(k), replicas_))
                 .first;
        created(*it->second);
      }
      it->second->restore(state);
    }
    received_ = std::move(pushes);
    return out;
  }

 private:
  // The optimizer of shard @p k's variable (optim::for_variable); the ps's own outside the placement.
  O optimizer_of(std::uint64_t k) const {
    auto it = layouts_.find(k);
    return it == layouts_.end() ? optimizer_ : optim::for_variable(optimizer_, it->second.name);
  }

  std::string self_;  // "ps:0"
  std::size_t replicas_;
  U rule_;
  O optimizer_;
  D device_;
  std::map<std::uint64_t, std::unique_ptr<shard_type>> shards_;
  std::map<std::uint64_t, protocol::shard_layout> layouts_;
  std::map<std::uint64_t, std::vector<std::uint64_t>> received_;  // shard -> pushes per replica
  std::string placement_;
  std::uint64_t fingerprint_ = 0;
  std::size_t expected_ = 0;
  bool placed_ = false;  // a registration has set placement_, fingerprint_ and expected_
};

}  // namespace dsgd::server::detail
