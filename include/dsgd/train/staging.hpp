// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// train::staging<D>: the host memory a worker's pulls land in and its pushes are sent from. On a
/// host device (device::cpu) there is none: the client reads and writes the user's tensors in
/// place. On any other device there is one buffer, allocated once: a values area the pull lands
/// in (then copied to the device once) and a gradients area the push copies the device gradients
/// into (once), so that a push and the pull behind it can be in flight together.
#pragma once

#include <dsgd/device/concepts.hpp>
#include <dsgd/tensor/tensor.hpp>

#include <thrust/copy.h>

#include <cstddef>
#include <span>
#include <vector>

namespace dsgd::train {

/// The host memory of a worker's exchanges with the ps tasks, for tensors on device @p D (see the
/// file comment). A @p skip predicate names the variables that are not exchanged whole (those
/// read and written by rows): they get an empty span and no room in the buffer.
template <Device D, bool Host = D::is_host>
class staging;

/// A host device: no staging; spans of the tensors themselves.
template <Device D>
class staging<D, true> {
 public:
  /// Lays out room for @p tensors: nothing to do on the host.
  template <class Skip>
  void reserve(const std::vector<tensor<D>>& /*tensors*/, Skip /*skip*/) {}

  /// @returns where a pull into @p variables writes: their own memory.
  template <class Skip>
  std::span<const std::span<float>> values(std::vector<tensor<D>>& variables, Skip skip) {
    values_.resize(variables.size());
    for (std::size_t v = 0; v < variables.size(); ++v)
      values_[v] = skip(v) ? std::span<float>() : std::span<float>(variables[v].data(), variables[v].size());
    return values_;
  }
  /// The values of variable @p v have arrived: they are in place already.
  void land(std::vector<tensor<D>>& /*variables*/, std::size_t /*v*/) {}

  /// @returns where a push of @p gradients reads from: their own memory.
  template <class Skip>
  std::span<const std::span<const float>> gradients(const std::vector<tensor<D>>& gradients, Skip skip) {
    gradients_.resize(gradients.size());
    for (std::size_t v = 0; v < gradients.size(); ++v)
      gradients_[v] =
          skip(v) ? std::span<const float>() : std::span<const float>(gradients[v].data(), gradients[v].size());
    return gradients_;
  }
  /// The gradient of variable @p v is final: the push reads it in place.
  void stage(const std::vector<tensor<D>>& /*gradients*/, std::size_t /*v*/) {}

  /// @returns every variable's values, those read by rows too (to initialise the ps tasks).
  std::span<const std::span<const float>> snapshot(const std::vector<tensor<D>>& variables) {
    return gradients(variables, [](std::size_t) { return false; });
  }

  /// @returns the buffer: none on the host.
  const float* data() const noexcept { return nullptr; }
  /// @returns how many times a buffer was allocated: never on the host.
  std::size_t allocations() const noexcept { return 0; }

 private:
  std::vector<std::span<float>> values_;
  std::vector<std::span<const float>> gradients_;
};

/// Any other device: one host buffer, laid out on first use and kept while the tensors keep
/// their sizes.
template <Device D>
class staging<D, false> {
 public:
  /// Lays out room for @p tensors (none for a skipped one), allocating only when their sizes
  /// differ from the layout held.
  template <class Skip>
  void reserve(const std::vector<tensor<D>>& tensors, Skip skip) {
    if (fits(tensors, skip)) return;
    sizes_.assign(tensors.size(), 0);
    offsets_.assign(tensors.size(), 0);
    std::size_t total = 0;
    for (std::size_t v = 0; v < tensors.size(); ++v) {
      offsets_[v] = total;
      sizes_[v] = skip(v) ? 0 : tensors[v].size();
      total += sizes_[v];
    }
    values_area_ = total;
    buffer_ = std::vector<float>(2 * total);  // values, then gradients
    ++allocations_;
  }

  /// @returns where a pull into @p variables writes: the values area; land() then copies a
  /// variable's values to the device. Nothing is copied off the device.
  template <class Skip>
  std::span<const std::span<float>> values(std::vector<tensor<D>>& variables, Skip skip) {
    reserve(variables, skip);
    values_.resize(variables.size());
    for (std::size_t v = 0; v < variables.size(); ++v) values_[v] = skip(v) ? std::span<float>() : slice(0, v);
    return values_;
  }
  /// The values of variable @p v have arrived: copies them to the device.
  void land(std::vector<tensor<D>>& variables, std::size_t v) {
    if (!values_[v].empty()) variables[v].assign(values_[v]);
  }

  /// @returns where a push of @p gradients reads from: the gradients area, which stage() fills.
  template <class Skip>
  std::span<const std::span<const float>> gradients(const std::vector<tensor<D>>& gradients, Skip skip) {
    reserve(gradients, skip);
    gradients_.resize(gradients.size());
    for (std::size_t v = 0; v < gradients.size(); ++v)
      gradients_[v] = skip(v) ? std::span<const float>() : slice(values_area_, v);
    return gradients_;
  }
  /// The gradient of variable @p v is final: copies it off the device into its room.
  void stage(const std::vector<tensor<D>>& gradients, std::size_t v) {
    if (gradients_[v].empty()) return;
    const auto& from = gradients[v].storage();
    thrust::copy(from.begin(), from.end(), buffer_.data() + values_area_ + offsets_[v]);
  }

  /// @returns every variable's values, those read by rows too (to initialise the ps tasks): those
  /// with room copied into the values area, the others into copies of their own.
  std::span<const std::span<const float>> snapshot(const std::vector<tensor<D>>& variables) {
    extra_.clear();
    extra_.reserve(variables.size());
    snapshot_.resize(variables.size());
    for (std::size_t v = 0; v < variables.size(); ++v) {
      const auto& from = variables[v].storage();
      if (v < sizes_.size() && sizes_[v] == variables[v].size() && sizes_[v] != 0) {
        thrust::copy(from.begin(), from.end(), buffer_.data() + offsets_[v]);
        snapshot_[v] = slice(0, v);
      } else {
        snapshot_[v] = extra_.emplace_back(variables[v].to_host());
      }
    }
    return snapshot_;
  }

  /// @returns the buffer (stable while the tensors keep their sizes), or nullptr before use.
  const float* data() const noexcept { return buffer_.empty() ? nullptr : buffer_.data(); }
  /// @returns how many times the buffer was allocated (once per layout).
  std::size_t allocations() const noexcept { return allocations_; }

 private:
  template <class Skip>
  bool fits(const std::vector<tensor<D>>& tensors, Skip skip) const {
    if (allocations_ == 0 || tensors.size() != sizes_.size()) return false;
    for (std::size_t v = 0; v < tensors.size(); ++v)
      if (!skip(v) && sizes_[v] != tensors[v].size()) return false;
    return true;
  }
  std::span<float> slice(std::size_t area, std::size_t v) { return {buffer_.data() + area + offsets_[v], sizes_[v]}; }

  std::vector<float> buffer_;  // values_area_ floats of values, then as many of gradients
  std::size_t values_area_ = 0;
  std::vector<std::size_t> sizes_, offsets_;  // per variable, in either area
  std::vector<std::span<float>> values_;
  std::vector<std::span<const float>> gradients_, snapshot_;
  std::vector<std::vector<float>> extra_;  // snapshot(): variables without room
  std::size_t allocations_ = 0;
};

}  // namespace dsgd::train
