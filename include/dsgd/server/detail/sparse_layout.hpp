// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Sparse rows on the ps side: whether a shard can take sparse_pull / sparse_push, how many keys
/// a request's size makes (against the per-request cap), and its keys (rows of the whole
/// variable, u64 little-endian) as rows of the shard, each checked against the rows it holds.
// IWYU pragma: private, include <dsgd/server/shard_table.hpp>
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/protocol/messages.hpp>
#include <dsgd/transport/frame.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::server::detail {

/// @returns a u64 as it came off the wire (little-endian), on any host.
inline std::uint64_t from_le(const std::uint64_t& v) noexcept {
  return transport::detail::load_le<std::uint64_t>(reinterpret_cast<const std::byte*>(&v));
}

/// @returns a u64 as it goes on the wire (little-endian), on any host.
inline std::uint64_t to_le(std::uint64_t v) noexcept {
  std::uint64_t out;
  transport::detail::store_le(reinterpret_cast<std::byte*>(&out), v);
  return out;
}

/// Checks that the shard of @p l, holding @p shard_floats values, can serve sparse request
/// @p what: rank 2 or more, whole rows.
/// @throws dsgd::error naming the request, the variable and @p where (the ps task)
inline void check_sparse_shard(protocol::message what, const protocol::shard_layout& l, std::size_t shard_floats,
                               std::string_view where) {
  const std::string prefix = std::string(to_string(what)) + " of " + l.describe() + " on " + std::string(where);
  if (l.extents.size() < 2)
    throw error(errc::invalid_argument, prefix +
                                            ": sparse rows need a variable of rank 2 or more (dimension 0 "
                                            "indexes the rows), this one has rank " +
                                            std::to_string(l.extents.size()));
  if (l.row_elements() == 0 || l.rows * l.row_elements() != shard_floats)
    throw error(errc::shape_mismatch, prefix + ": the shard holds " + std::to_string(shard_floats) + " floats, not " +
                                          std::to_string(l.rows) + " rows of " + std::to_string(l.row_elements()));
}

/// The layout of the shard sparse request @p what (header @p h) names, checked as far as the
/// header allows: from a registered peer (@p registered), of a shard ps task @p where holds
/// (@p l: its layout, nullptr if none) and has initialised (@p shard_floats: its size, if so),
/// and as check_sparse_shard(). @throws dsgd::error naming the request, the shard and @p where
inline const protocol::shard_layout& sparse_request_shard(protocol::message what, const transport::frame_header& h,
                                                          bool registered, const protocol::shard_layout* l,
                                                          std::optional<std::size_t> shard_floats,
                                                          std::string_view where) {
  if (!registered) throw error(errc::invalid_argument, std::string(to_string(what)) + " before register_worker");
  if (!l || !shard_floats)
    throw error(errc::not_found, std::string(to_string(what)) + " of variable " + std::to_string(h.variable) +
                                     " shard " + std::to_string(h.shard) + ", which " + std::string(where) +
                                     (!l ? " does not hold" : " holds but was not initialised"));
  check_sparse_shard(what, *l, *shard_floats, where);
  return *l;
}

/// @returns the number of keys of sparse request @p what whose whole payload is @p total_bytes
///          (sparse_pull: 8-byte keys; sparse_push: keys, then their rows).
/// @throws dsgd::error errc::shape_mismatch for a payload that is not whole records,
///         errc::invalid_argument for more keys than @p max_rows (max_rows_per_request)
inline std::uint64_t sparse_request_keys(protocol::message what, const protocol::shard_layout& l,
                                         std::uint64_t total_bytes, std::size_t max_rows, std::string_view where) {
  const bool pull = what == protocol::message::sparse_pull;
  const std::uint64_t dim = l.row_elements();
  const std::uint64_t record = pull ? sizeof(std::uint64_t) : sizeof(std::uint64_t) + dim * sizeof(float);
  const std::string prefix = std::string(to_string(what)) + " of " + l.describe() + " on " + std::string(where);
  if (total_bytes % record != 0)
    throw error(errc::shape_mismatch,
                prefix + ": " + std::to_string(total_bytes) + " payload bytes are not a whole number of " +
                    (pull ? std::string("8-byte keys")
                          : "keys with their rows (8 + " + std::to_string(dim) + " x 4 bytes each)"));
  const std::uint64_t n = total_bytes / record;
  if (n > max_rows)
    throw error(errc::invalid_argument, prefix + ": " + std::to_string(n) + " keys exceed the cap of " +
                                            std::to_string(max_rows) + " per request (max_rows_per_request)");
  return n;
}

/// @returns @p keys (rows of the whole variable, little-endian) as rows of the shard of @p l.
/// @throws dsgd::error(errc::invalid_argument) naming the first key out of the shard's rows,
///         its position, the variable, @p where and the rows the shard holds
inline std::vector<std::uint64_t> local_rows(protocol::message what, const protocol::shard_layout& l,
                                             std::span<const std::uint64_t> keys, std::string_view where) {
  std::vector<std::uint64_t> rows(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::uint64_t k = from_le(keys[i]);
    if (k < l.first_row || k - l.first_row >= l.rows)
      throw error(errc::invalid_argument, std::string(to_string(what)) + ": row " + std::to_string(k) + " (key " +
                                              std::to_string(i) + " of " + std::to_string(keys.size()) +
                                              ") out of range for " + l.describe() + " on " + std::string(where) +
                                              " (holds rows " + std::to_string(l.first_row) + "-" +
                                              std::to_string(l.first_row + l.rows - 1) + ")");
    rows[i] = k - l.first_row;
  }
  return rows;
}

}  // namespace dsgd::server::detail
