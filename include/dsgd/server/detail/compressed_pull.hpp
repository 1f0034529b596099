// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The ps's side of compressed pulls (values ps -> worker as fp16 or bf16, chosen per variable
/// by a compress::selection): the check of what a worker asks for at registration, and the
/// replies, encoded once per version of a shard's values (N workers pulling the same step
/// cost one encode). The worker's side is client/detail/compressed_pull.hpp.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/compress/selection.hpp>
#include <dsgd/error.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/server/detail/shard_replies.hpp>
#include <dsgd/transport/frame.hpp>
#include <dsgd/update/concepts.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dsgd::server::detail {

/// Checks that worker @p r pulls each of its shards as ps task @p self (@p mine) serves them;
/// an empty list (a worker that set no pull codecs) means "none" for every shard.
/// @throws dsgd::error(errc::invalid_argument) "pull compression mismatch", naming the first
///         variable that differs and both choices
inline void check_pull_compression(const compress::selection& mine, const protocol::register_request& r,
                                   const std::string& self) {
  for (std::size_t i = 0; i < r.layouts.size(); ++i) {
    const auto ours = mine.of(r.layouts[i].name).describe();
    const auto theirs = i < r.pull_compression.size() ? r.pull_compression[i] : std::string("none");
    if (ours != theirs)
      throw error(errc::invalid_argument,
                  "pull compression mismatch: " + r.task + " pulls " + r.layouts[i].describe() + " as " + theirs +
                      " but " + self + " serves it as " + ours +
                      " (workers and ps tasks need the same trainer_options::pull_compression)");
  }
}

/// Encodes @p n floats at @p values as @p c (fp16 or bf16) into @p out (n 16-bit values).
inline void encode_values(const compress::codec& c, const float* values, std::size_t n, std::uint16_t* out) {
  // No residual: a pull sends the values themselves, rounded once; the ps keeps them exact.
  c.encode(std::span(values, n), {}, std::as_writable_bytes(std::span(out, n)));
}

/// A ps task's compressed pull replies, per shard: the encoding of the version of the values
/// last pulled, reused by every pull of that version (the sync step's N pulls cost one
/// encode), that version kept pinned meanwhile. Thread-safe: each shard's entry has its own
/// lock.
class pull_encodings {
 public:
  pull_encodings() = default;
  // Movable with the table that owns it, before it serves (the entries move, the lock stays).
  pull_encodings(pull_encodings&& o) noexcept : entries_(std::move(o.entries_)) {}
  pull_encodings& operator=(pull_encodings&& o) noexcept {
    entries_ = std::move(o.entries_);
    return *this;
  }

  /// The reply to the compressed_pull @p request of @p shard (its layout in @p layouts) by
  /// @p replica, encoded as @p pulls gives its variable, from ps task @p self; nullopt while
  /// the rule makes @p replica wait.
  /// @throws dsgd::error(errc::invalid_argument) when the shard's agreed pull codec is none
  ///         (the worker registered for plain pulls of it), errc::not_found without a layout
  template <class Shard>
  std::optional<outgoing_reply> reply(Shard& shard, const std::map<std::uint64_t, protocol::shard_layout>& layouts,
                                      const transport::frame_header& request, std::size_t replica,
                                      const compress::selection& pulls, const std::string& self) {
    const std::uint64_t key = (std::uint64_t{request.variable} << 32) | request.shard;
    auto l = layouts.find(key);
    if (l == layouts.end())
      throw error(errc::not_found, "compressed_pull of variable " + std::to_string(request.variable) + " shard " +
                                       std::to_string(request.shard) + ", which " + self + " does not hold");
    const auto& c = pulls.of(l->second.name);
    const auto as = compress::values_as(c);
    if (!as || *as == compress::value_encoding::none)
      throw error(errc::invalid_argument, "compressed_pull of " + l->second.describe() + " shard " +
                                              std::to_string(request.shard) + " from " + self +
                                              ", whose pulls of it are plain (none)");
    auto header = reply_header(request, protocol::message::compressed_pull_reply);
    const std::uint64_t step = request.step;
    if constexpr (update::pins_values<Shard>) {
      auto pinned = shard.try_pin(replica, step);
      if (!pinned) return std::nullopt;
      header.step = pinned->step;
      auto& e = entry(key);
      std::lock_guard lock(e.mutex);
      // The entry keeps the version it encoded pinned, so that version stays unchanged (the
      // shard's next change makes itself a copy, as under any pin): the same pointer then
      // means the same values. The price, where pulls are compressed: that copy, once a change.
      if (e.source != pinned->values || !e.encoded || e.as != *as) {
        e.encoded = std::make_shared<std::vector<std::uint16_t>>(pinned->values->size());
        encode_values(c, pinned->values->data(), pinned->values->size(), e.encoded->data());
        e.source = std::move(pinned->values);
        e.as = *as;
      }
      auto bytes = std::as_bytes(std::span(*e.encoded));
      return outgoing_reply{header, bytes, e.encoded};
    } else {
      // A rule that only copies its values out: nothing tells two versions apart, so each
      // pull encodes its own snapshot.
      std::vector<float> snapshot(shard.size());
      auto at = shard.try_pull(replica, step, snapshot.data());
      if (!at) return std::nullopt;
      header.step = *at;
      auto encoded = std::make_shared<std::vector<std::uint16_t>>(snapshot.size());
      encode_values(c, snapshot.data(), snapshot.size(), encoded->data());
      auto bytes = std::as_bytes(std::span(*encoded));
      return outgoing_reply{header, bytes, std::move(encoded)};
    }
  }

 private:
  struct cached {
    std::mutex mutex;
    std::shared_ptr<const void> source;  // the version encoded, pinned
    compress::value_encoding as = compress::value_encoding::none;
    std::shared_ptr<std::vector<std::uint16_t>> encoded;  // kept alive by replies being written
  };
  cached& entry(std::uint64_t key) {
    std::lock_guard lock(mutex_);
    auto& e = entries_[key];
    if (!e) e = std::make_unique<cached>();
    return *e;
  }

  std::mutex mutex_;  // guards entries_
  std::map<std::uint64_t, std::unique_ptr<cached>> entries_;
};

}  // namespace dsgd::server::detail
