// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Where a worker's exchanges read and write (train::worker, train::overlap), for either kind
/// of variable set: tensors through the staging (on a host device, their own memory), views
/// their own host memory whatever the device, with nothing to stage or land.
#pragma once

#include <dsgd/device/concepts.hpp>
#include <dsgd/tensor/tensor.hpp>
#include <dsgd/tensor/view.hpp>
#include <dsgd/train/detail/views.hpp>
#include <dsgd/train/staging.hpp>

#include <cstddef>
#include <span>
#include <vector>

namespace dsgd::train::detail {

/// The buffers of a worker's exchanges; every call names the variable set it is for.
template <Device D>
class exchange_buffers {
 public:
  /// The spans a pull writes.
  using value_spans_type = std::span<const std::span<float>>;
  /// The spans a push reads.
  using gradient_spans_type = std::span<const std::span<const float>>;

  /// The host staging of tensor exchanges (none on a host device).
  const staging<D>& staged() const noexcept { return staging_; }

  /// Allocates the one staging buffer of @p tensors (the variables @p skip names take no room).
  template <class Skip>
  void reserve(const std::vector<tensor<D>>& tensors, Skip skip) {
    staging_.reserve(tensors, skip);
  }

  /// Where a pull of @p variables lands (an empty span for a variable @p skip names).
  template <class Skip>
  value_spans_type values(std::vector<tensor<D>>& variables, Skip skip) {
    return staging_.values(variables, skip);
  }
  template <class Skip>
  value_spans_type values(variable_views variables, Skip skip) {
    return value_spans(variables, view_values_, skip);
  }

  /// What a push of @p gradients reads (an empty span for a variable @p skip names).
  template <class Skip>
  gradient_spans_type gradients(const std::vector<tensor<D>>& gradients, Skip skip) {
    return staging_.gradients(gradients, skip);
  }
  template <class Skip>
  gradient_spans_type gradients(variable_views variables, Skip skip) {
    return gradient_spans(variables, view_gradients_, skip);
  }

  /// Off the host, copies the pulled values of variable @p v to the device.
  void land(std::vector<tensor<D>>& variables, std::size_t v) { staging_.land(variables, v); }
  void land(variable_views, std::size_t) {}
  /// Off the host, copies the gradient of variable @p v into the staging buffer.
  void stage(const std::vector<tensor<D>>& gradients, std::size_t v) { staging_.stage(gradients, v); }
  void stage(variable_views, std::size_t) {}

  /// The values the chief creates the variables with, read once.
  gradient_spans_type initial(const std::vector<tensor<D>>& variables) { return staging_.snapshot(variables); }
  gradient_spans_type initial(variable_views variables) {
    view_gradients_.resize(variables.size());
    for (std::size_t v = 0; v < variables.size(); ++v) view_gradients_[v] = variables[v].values;
    return view_gradients_;
  }

 private:
  staging<D> staging_;
  std::vector<std::span<float>> view_values_;  // the spans of an exchange of views
  std::vector<std::span<const float>> view_gradients_;
};

}  // namespace dsgd::train::detail
