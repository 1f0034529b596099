// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The worker's side of compression (compress/): per shard of its plan, the codec its
/// variable's pushes use, the error-feedback residual and the buffer its payload is encoded
/// into; the bytes its pushes have sent; and the request of a pull, plain or compressed.
// IWYU pragma: private, include <dsgd/client/ps_client.hpp>
#pragma once

#include <dsgd/client/detail/channel.hpp>
#include <dsgd/client/detail/residual_file.hpp>
#include <dsgd/client/detail/routing.hpp>
#include <dsgd/compress/selection.hpp>
#include <dsgd/placement/plan.hpp>
#include <dsgd/protocol/messages.hpp>

#include <boost/asio/buffer.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace dsgd::client::detail {

/// @returns for each of @p layouts the codec @p s gives its variable, as register_request says it.
inline std::vector<std::string> describe_codecs(const compress::selection& s,
                                                const std::vector<protocol::shard_layout>& layouts) {
  std::vector<std::string> out;
  for (const auto& l : layouts) out.push_back(s.of(l.name).describe());
  return out;
}

/// @returns the request pulling shard @p index of plan shard @p s at @p step into @p dest
/// (its variable's floats): a plain pull, or a compressed_pull as @p pulls gives the variable.
inline request pull_request(const placement::plan& plan, const placement::shard& s, std::uint32_t index,
                            std::uint64_t step, std::span<float> dest, const compress::selection& pulls) {
  const auto& c = pulls.of(plan.variables()[s.variable].name);
  const auto into = dest.subspan(s.offset, s.elements);
  // validate_pull() has refused any codec but none, fp16 and bf16 for pulls.
  const auto as = compress::values_as(c).value_or(compress::value_encoding::none);
  const bool plain = as == compress::value_encoding::none || into.empty();
  request r{s.ps_task,
            header(plain ? protocol::message::pull : protocol::message::compressed_pull, s.variable, index, step),
            {},
            span_buffer(into),
            {}};
  r.reply_encoding = plain ? compress::value_encoding::none : as;
  return r;
}

/// The register_request body of task @p me (replica @p replica) for ps task @p ps of @p plan: its
/// shards' layouts with the push codec @p pushes and the pull codec @p pulls give each, and the
/// rule's settings @p rule; sizes
/// @p counts for that ps's answer (one count per shard).
inline std::string registration_body(const std::string& me, std::size_t replica, bool chief,
                                     const placement::plan& plan, std::size_t ps, const compress::selection& pushes,
                                     const compress::selection& pulls, const std::string& rule,
                                     std::vector<std::uint64_t>& counts) {
  auto mine = layouts(plan, ps);
  counts.resize(mine.size());
  auto codecs = describe_codecs(pushes, mine);
  auto pull_codecs = describe_codecs(pulls, mine);
  const auto shards = static_cast<std::uint32_t>(mine.size());
  return protocol::encode_control(
      protocol::register_request{me, static_cast<std::uint32_t>(replica), chief, plan.fingerprint(), plan.describe(),
                                 shards, std::move(mine), std::move(codecs), std::move(pull_codecs), rule});
}

/// A worker's encoders, one per shard of its plan. The residual of a shard (top_k, two_bit)
/// is kept from push to push, as the worker's state; the payload buffer is allocated once, at
/// the codec's cap. A shard's payload stays valid until that shard is encoded again (the next
/// push, which starts after this one is answered). Not thread-safe, like the client.
class push_encoder {
 public:
  /// Sets up for @p plan under @p s; a plan of another size starts afresh (zero residuals).
  void track(const placement::plan& plan, const compress::selection& s) {
    if (slots_.size() == plan.shards().size()) return;
    slots_.clear();
    for (const auto& sh : plan.shards()) slots_.push_back({s.of(plan.variables()[sh.variable].name), {}, {}});
  }

  /// @returns the request pushing @p grad, shard @p index of variable @p variable (plan shard
  /// @p at, on ps task @p ps), computed at @p step: a plain push of the floats in place, or a
  /// compressed_push of their encoding.
  request push(std::size_t at, std::size_t ps, std::size_t variable, std::uint32_t index, std::uint64_t step,
               std::span<const float> grad) {
    auto& slot = slots_.at(at);
    if (grad.empty() || slot.codec.is_none()) {
      bytes_ += grad.size_bytes();
      return {ps, header(protocol::message::push, variable, index, step), span_buffer(grad), {}, {}};
    }
    if (slot.codec.uses_residual() && slot.residual.size() != grad.size()) slot.residual.assign(grad.size(), 0.f);
    slot.payload.resize((slot.codec.max_bytes(grad.size()) + 3) / 4);
    const std::size_t n = slot.codec.encode(grad, slot.residual, std::as_writable_bytes(std::span(slot.payload)));
    bytes_ += n;
    return {ps,
            header(protocol::message::compressed_push, variable, index, step),
            boost::asio::buffer(slot.payload.data(), n),
            {},
            {}};
  }

  /// @returns every plan shard's codec name and residual, as a checkpoint saves them.
  std::vector<saved_residual> save() const {
    std::vector<saved_residual> out;
    for (const auto& sl : slots_) out.push_back({sl.codec.describe(), sl.residual});
    return out;
  }

  /// Takes the residuals @p saved (save() of a worker with the same plan and selection, read
  /// from @p what) in place of this encoder's. @returns false, changing nothing, when they were
  /// saved under another placement (another shard count or shard size: the job was restored
  /// onto another number of ps tasks), since a residual belongs to its shard.
  /// @throws dsgd::error(errc::checkpoint_corrupt) naming @p what, the shard and both codecs
  ///         when a shard was pushed with another codec
  bool restore(const std::vector<saved_residual>& saved, const placement::plan& plan, const std::string& what) {
    if (saved.size() != slots_.size()) return false;
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (!saved[i].values.empty() && saved[i].values.size() != plan.shards()[i].elements) return false;
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const auto& sh = plan.shards()[i];
      const auto ours = slots_[i].codec.describe();
      if (saved[i].codec != ours)
        throw error(errc::checkpoint_corrupt, what + ": " + plan.variables()[sh.variable].name + " shard at " +
                                                  std::to_string(sh.offset) + " was pushed as " + saved[i].codec +
                                                  ", this worker pushes " + ours);
    }
    for (std::size_t i = 0; i < slots_.size(); ++i) slots_[i].residual = saved[i].values;
    return true;
  }

  /// Writes save() as the residual file @p path (residual_file.hpp).
  void save_file(const std::filesystem::path& path) const { write_residuals(path, save()); }
  /// restore() from the residual file @p path; @returns false, changing nothing, without it or
  /// when it was saved under another placement.
  bool restore_file(const placement::plan& plan, const std::filesystem::path& path) {
    if (!std::filesystem::exists(path)) return false;
    std::size_t floats = 0;
    for (const auto& sh : plan.shards()) floats += sh.elements;
    return restore(read_residuals(path, floats), plan, path.filename().string());
  }

  /// @returns whether some shard's codec keeps a residual (top_k, two_bit): only then is there
  /// worker state to checkpoint.
  bool keeps_residuals() const noexcept {
    return std::any_of(slots_.begin(), slots_.end(), [](const slot& s) { return s.codec.uses_residual(); });
  }
  /// @returns the residual of plan shard @p at (empty before its first push, or without one).
  std::span<const float> residual(std::size_t at) const { return slots_.at(at).residual; }
  /// @returns the payload bytes of every push so far (frame headers not counted).
  std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  struct slot {
    compress::codec codec;
    std::vector<float> residual;         // error feedback: gradient mass not sent yet
    std::vector<std::uint32_t> payload;  // the encoded push (4-byte aligned)
  };
  std::vector<slot> slots_;
  std::uint64_t bytes_ = 0;
};

}  // namespace dsgd::client::detail
