// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// A Boost.Serialization binary input archive that never allocates for bytes it was not sent
/// and never reads a byte into a bool that is not 0 or 1.
///
/// binary_iarchive sizes a string or a collection from the length on the wire before reading
/// its contents, so a few bytes claiming a length of 2^31 make it allocate 2 GiB. This archive
/// refuses any string length or element count larger than the bytes left in the payload (every
/// element takes at least one byte), before anything is allocated: decoding costs memory in
/// proportion to what the peer actually sent.
// IWYU pragma: private, include <dsgd/protocol/messages.hpp>
#pragma once

#include <dsgd/error.hpp>

#include <boost/archive/binary_iarchive_impl.hpp>
#include <boost/archive/detail/register_archive.hpp>
#include <boost/archive/impl/archive_serializer_map.ipp>
#include <boost/archive/impl/basic_binary_iarchive.ipp>
#include <boost/archive/impl/basic_binary_iprimitive.ipp>
#include <boost/serialization/array_optimization.hpp>
#include <boost/serialization/collection_size_type.hpp>

#include <cstddef>
#include <istream>
#include <string>

namespace dsgd::protocol::detail {

/// binary_iarchive (without header) over @p size bytes of @p in, with every length checked
/// against the bytes left; a longer one throws dsgd::error(errc::bad_frame).
class bounded_iarchive : public boost::archive::binary_iarchive_impl<bounded_iarchive, std::istream::char_type,
                                                                     std::istream::traits_type> {
  using base =
      boost::archive::binary_iarchive_impl<bounded_iarchive, std::istream::char_type, std::istream::traits_type>;
  friend class boost::archive::detail::interface_iarchive<bounded_iarchive>;
  friend class boost::archive::basic_binary_iarchive<bounded_iarchive>;
  friend class boost::archive::basic_binary_iprimitive<bounded_iarchive, std::istream::char_type,
                                                       std::istream::traits_type>;
  friend class boost::archive::load_access;

 public:
  /// Reads from @p in, which holds @p size bytes from its current position.
  bounded_iarchive(std::istream& in, std::size_t size)
      : base(in, boost::archive::no_header),
        in_(in),
        end_(static_cast<std::streamoff>(in.tellg()) + static_cast<std::streamoff>(size)) {}

 protected:
  using base::load;
  using base::load_override;

  // A string's length, checked before base's load would resize the string to it.
  void load(std::string& s) {
    std::size_t length = 0;
    base::load(length);
    check(length);
    s.resize(length);
    if (length != 0) load_binary(s.data(), length);
  }

  // A bool from its byte, which must be 0 or 1: Boost's own load would read any other byte
  // into the bool, an invalid value (undefined behaviour).
  void load(bool& b) {
    unsigned char byte = 0;
    load_binary(&byte, 1);
    if (byte > 1) throw error(errc::bad_frame, "a bool holds " + std::to_string(byte) + ", not 0 or 1");
    b = byte == 1;
  }

  // A collection's element count, checked before the collection is reserved or resized.
  // Every element of a control message's collections encodes to at least 8 bytes (a u64
  // extent; a shard_layout's fields), so a count is bounded by an eighth of the bytes left:
  // reserving it then costs at most sizeof(element) / 8 bytes per payload byte.
  void load_override(boost::serialization::collection_size_type& count) {
    base::load_override(count);
    const auto left = bytes_left();
    if (static_cast<std::size_t>(count) > left / min_element_bytes)
      throw error(errc::bad_frame, "a count of " + std::to_string(static_cast<std::size_t>(count)) +
                                       " elements exceeds what the " + std::to_string(left) + " bytes left can hold (" +
                                       std::to_string(min_element_bytes) + " bytes at least each)");
  }

 private:
  static constexpr std::size_t min_element_bytes = 8;

  std::size_t bytes_left() {
    const auto at = static_cast<std::streamoff>(in_.tellg());
    return at < 0 || at > end_ ? 0 : static_cast<std::size_t>(end_ - at);
  }

  void check(std::size_t claimed) {
    const std::size_t left = bytes_left();
    if (claimed > left)
      throw error(errc::bad_frame,
                  "a length of " + std::to_string(claimed) + " exceeds the " + std::to_string(left) + " bytes left");
  }

  std::istream& in_;
  std::streamoff end_;
};

}  // namespace dsgd::protocol::detail

// As binary_iarchive: arrays of primitives (std::vector<std::uint64_t>) in one block, which is
// how binary_oarchive writes them.
BOOST_SERIALIZATION_REGISTER_ARCHIVE(dsgd::protocol::detail::bounded_iarchive)
BOOST_SERIALIZATION_USE_ARRAY_OPTIMIZATION(dsgd::protocol::detail::bounded_iarchive)
