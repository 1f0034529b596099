// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The ps's side of compression (compress/): the codecs agreed at registration, the cap on a
/// compressed push's length, and its decode straight into the rule's accumulator.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/compress/selection.hpp>
#include <dsgd/error.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/update/concepts.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dsgd::server::detail {

/// @returns "dense0/kernel [784, 256] shard 1 (push to ps:0)": how a decoder's errors name a shard.
inline std::string pushed_shard(const protocol::shard_layout& l, const std::string& self) {
  return l.describe() + " shard " + std::to_string(l.shard) + " (push to " + self + ")";
}

/// Checks that worker @p r encodes each of its shards as ps task @p self (@p mine) decodes
/// them; a worker of a version without compression sends none, meaning "none" for every shard.
/// @throws dsgd::error(errc::invalid_argument) "compression mismatch", naming the first
///         variable that differs and both choices
inline void check_compression(const compress::selection& mine, const protocol::register_request& r,
                              const std::string& self) {
  for (std::size_t i = 0; i < r.layouts.size(); ++i) {
    const auto ours = mine.of(r.layouts[i].name).describe();
    const auto theirs = i < r.compression.size() ? r.compression[i] : std::string("none");
    if (ours != theirs)
      throw error(errc::invalid_argument, "compression mismatch: " + r.task + " pushes " + r.layouts[i].describe() +
                                              " as " + theirs + " but " + self + " decodes it as " + ours +
                                              " (workers and ps tasks need the same trainer_options::compression)");
  }
}

/// Sizes @p buffer for a compressed push of @p total bytes to a shard of @p elements whose
/// agreed codec is @p c. @returns false, allocating nothing, when no payload of @p c can be
/// that long (or @p c is none, whose pushes are plain): the frame is then bad_frame.
inline bool size_compressed(std::vector<std::uint32_t>& buffer, const compress::codec& c, std::size_t elements,
                            std::uint64_t total) {
  if (c.is_none() || total > c.max_bytes(elements)) return false;
  buffer.resize(static_cast<std::size_t>((total + 3) / 4));
  return true;
}

/// Checks @p payload against @p c for @p shard's size (throwing, with nothing changed, for a
/// malformed one), then pushes it: decoded straight into the rule's accumulator where the shard
/// takes that (update::accumulates_decoded, in host memory), else into @p scratch (the peer's
/// receive buffer of a plain push) and pushed whole.
/// @throws dsgd::error(errc::bad_frame) naming @p what, and what push() throws
template <bool Host, class Shard>
update::push_outcome push_compressed(Shard& shard, const compress::codec& c, std::span<const std::byte> payload,
                                     std::vector<float>& scratch, std::size_t worker, std::uint64_t step,
                                     const std::string& what) {
  const std::size_t n = shard.size();
  c.check(payload, n, what);
  if constexpr (Host && update::accumulates_decoded<Shard>) {
    return shard.push_decoded(worker, step, [&](float* acc) { c.decode_add(payload, acc, n); });
  } else {
    scratch.assign(n, 0.f);
    c.decode_add(payload, scratch.data(), n);
    return shard.push(worker, step, scratch.data());
  }
}

}  // namespace dsgd::server::detail
