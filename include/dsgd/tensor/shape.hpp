// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// shape: the extents of a dense, row-major tensor.
#pragma once

#include <dsgd/error.hpp>

#include <cstddef>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace dsgd {

/// The extents of a dense row-major tensor; a shape with no extents is a scalar.
class shape {
 public:
  shape() = default;
  shape(std::initializer_list<std::size_t> extents) : extents_(extents) {}
  explicit shape(std::vector<std::size_t> extents) : extents_(std::move(extents)) {}

  /// @returns the number of dimensions.
  std::size_t rank() const noexcept { return extents_.size(); }
  /// @returns the extent of dimension @p i; throws dsgd::error if @p i is out of range.
  std::size_t operator[](std::size_t i) const {
    if (i >= extents_.size())
      throw error(errc::invalid_argument, "shape " + to_string() + " has no dimension " + std::to_string(i));
    return extents_[i];
  }
  /// @returns the number of elements (1 for a scalar).
  std::size_t elements() const noexcept {
    std::size_t n = 1;
    for (auto e : extents_) n *= e;
    return n;
  }
  const std::vector<std::size_t>& extents() const noexcept { return extents_; }

  /// @returns the shape as "[2, 3]".
  std::string to_string() const {
    std::string s = "[";
    for (std::size_t i = 0; i < extents_.size(); ++i) {
      if (i) s += ", ";
      s += std::to_string(extents_[i]);
    }
    return s + "]";
  }

  friend bool operator==(const shape&, const shape&) = default;

  /// Writes to_string().
  friend std::ostream& operator<<(std::ostream& os, const shape& s) { return os << s.to_string(); }

 private:
  std::vector<std::size_t> extents_;
};

}  // namespace dsgd
