// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The bytes of a TensorBoard event file, written by hand: TFRecord framing with masked
/// CRC-32C, and the few protobuf fields of Event and Summary that scalars and histograms need.
// IWYU pragma: private, include <dsgd/train/summary_writer.hpp>
#pragma once

#include <dsgd/detail/byte_io.hpp>
#include <dsgd/detail/crc32c.hpp>

#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::train::detail {

using namespace dsgd::detail;  // put_le, as_bytes

/// TFRecord's masked CRC: a CRC stored next to the data it covers is rotated and offset, so a
/// CRC of bytes that themselves contain CRCs stays well distributed.
constexpr std::uint32_t mask_crc(std::uint32_t crc) noexcept { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

/// Appends one TFRecord: uint64 length, masked CRC of the length, data, masked CRC of the data.
inline void append_tfrecord(std::string& out, std::string_view data) {
  std::string len;
  put_le<std::uint64_t>(len, data.size());
  out += len;
  put_le<std::uint32_t>(out, mask_crc(dsgd::detail::crc32c(as_bytes(len))));
  out += data;
  put_le<std::uint32_t>(out, mask_crc(dsgd::detail::crc32c(as_bytes(data))));
}

// Protobuf wire types.
inline constexpr std::uint32_t wire_varint = 0;
inline constexpr std::uint32_t wire_fixed64 = 1;
inline constexpr std::uint32_t wire_length_delimited = 2;
inline constexpr std::uint32_t wire_fixed32 = 5;

inline void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
inline void put_key(std::string& out, std::uint32_t field, std::uint32_t wire) {
  put_varint(out, (std::uint64_t{field} << 3) | wire);
}
inline void put_double_field(std::string& out, std::uint32_t field, double v) {
  put_key(out, field, wire_fixed64);
  put_le<std::uint64_t>(out, std::bit_cast<std::uint64_t>(v));
}
inline void put_float_field(std::string& out, std::uint32_t field, float v) {
  put_key(out, field, wire_fixed32);
  put_le<std::uint32_t>(out, std::bit_cast<std::uint32_t>(v));
}
inline void put_int64_field(std::string& out, std::uint32_t field, std::int64_t v) {
  put_key(out, field, wire_varint);
  put_varint(out, static_cast<std::uint64_t>(v));  // int64 negatives are 10-byte varints
}
inline void put_bytes_field(std::string& out, std::uint32_t field, std::string_view v) {
  put_key(out, field, wire_length_delimited);
  put_varint(out, v.size());
  out += v;
}
/// A packed `repeated double` field: the key, the byte length, then each value as fixed64.
inline void put_packed_doubles(std::string& out, std::uint32_t field, std::span<const double> v) {
  put_key(out, field, wire_length_delimited);
  put_varint(out, v.size() * sizeof(double));
  for (double d : v) put_le<std::uint64_t>(out, std::bit_cast<std::uint64_t>(d));
}

// Field numbers from tensorflow/core/util/event.proto and framework/summary.proto.
inline constexpr std::uint32_t event_wall_time = 1;
inline constexpr std::uint32_t event_step = 2;
inline constexpr std::uint32_t event_file_version = 3;
inline constexpr std::uint32_t event_summary = 5;
inline constexpr std::uint32_t summary_value = 1;
inline constexpr std::uint32_t value_tag = 1;
inline constexpr std::uint32_t value_simple_value = 2;
inline constexpr std::uint32_t value_histo = 5;
inline constexpr std::uint32_t histo_min = 1;
inline constexpr std::uint32_t histo_max = 2;
inline constexpr std::uint32_t histo_num = 3;
inline constexpr std::uint32_t histo_sum = 4;
inline constexpr std::uint32_t histo_sum_squares = 5;
inline constexpr std::uint32_t histo_bucket_limit = 6;
inline constexpr std::uint32_t histo_bucket = 7;

/// The figures of a HistogramProto: bucket i counts the values in (limit[i-1], limit[i]], the
/// first from min (TensorBoard reads the last limit as max).
struct histogram_figures {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit, bucket;
};

/// @returns an encoded Event { wall_time, file_version }: the first record of every file.
inline std::string encode_file_version_event(double wall_time) {
  std::string e;
  put_double_field(e, event_wall_time, wall_time);
  put_bytes_field(e, event_file_version, "brain.Event:2");
  return e;
}

/// @returns an encoded Summary.Value { tag, simple_value }.
inline std::string encode_scalar_value(std::string_view tag, float value) {
  std::string v;
  put_bytes_field(v, value_tag, tag);
  put_float_field(v, value_simple_value, value);
  return v;
}

/// @returns an encoded Summary.Value { tag, histo }.
inline std::string encode_histogram_value(std::string_view tag, const histogram_figures& h) {
  std::string histo;
  put_double_field(histo, histo_min, h.min);
  put_double_field(histo, histo_max, h.max);
  put_double_field(histo, histo_num, h.num);
  put_double_field(histo, histo_sum, h.sum);
  put_double_field(histo, histo_sum_squares, h.sum_squares);
  put_packed_doubles(histo, histo_bucket_limit, h.bucket_limit);
  put_packed_doubles(histo, histo_bucket, h.bucket);
  std::string v;
  put_bytes_field(v, value_tag, tag);
  put_bytes_field(v, value_histo, histo);
  return v;
}

/// @returns an encoded Event { wall_time, step, summary } around already encoded Values.
inline std::string encode_summary_event(double wall_time, std::int64_t step, std::string_view encoded_values) {
  std::string e;
  put_double_field(e, event_wall_time, wall_time);
  put_int64_field(e, event_step, step);
  put_bytes_field(e, event_summary, encoded_values);
  return e;
}

}  // namespace dsgd::train::detail
