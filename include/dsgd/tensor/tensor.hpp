// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// tensor<D, T>: a dense row-major array that lives on device D.
#pragma once

#include <dsgd/device/concepts.hpp>
#include <dsgd/error.hpp>
#include <dsgd/tensor/shape.hpp>

#include <thrust/copy.h>
#include <thrust/host_vector.h>

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace dsgd {

/// An initialiser fills a host span of T (see tensor/init.hpp).
template <class I, class T>
concept initialiser_for = requires(I& init, std::span<T> out) {
  init(out);
};

/// A dense, row-major tensor of @p T in the memory of device @p D.
///
/// @tparam D where the elements live and kernels on them run (device::cpu, device::cuda)
/// @tparam T the element type
///
/// @code
/// dsgd::device::cpu cpu;
/// dsgd::tensor w(cpu, {2, 2}, dsgd::init::constant{2.f});
/// @endcode
template <Device D, class T = float>
class tensor {
 public:
  using device_type = D;
  using value_type = T;
  using vector_type = typename D::template vector<T>;

  /// An empty tensor on a default-constructed device.
  tensor() = default;

  /// A tensor of @p s on @p device, elements zero-initialised.
  tensor(D device, dsgd::shape s) : device_(std::move(device)), shape_(std::move(s)), data_(shape_.elements(), T{}) {}

  /// A tensor of @p s on @p device, elements produced by initialiser @p init on the host and
  /// copied to the device (so a seeded initialiser gives the same values on every device).
  template <initialiser_for<T> Init>
  tensor(D device, dsgd::shape s, Init init) : device_(std::move(device)), shape_(std::move(s)) {
    std::vector<T> host(shape_.elements());
    init(std::span<T>(host));
    data_ = vector_type(host.begin(), host.end());
  }

  const D& device() const noexcept { return device_; }
  const dsgd::shape& shape() const noexcept { return shape_; }
  std::size_t size() const noexcept { return data_.size(); }
  std::size_t bytes() const noexcept { return data_.size() * sizeof(T); }

  /// @returns a raw pointer into device memory (dereferenceable on the host iff D::is_host).
  T* data() noexcept { return thrust::raw_pointer_cast(data_.data()); }
  const T* data() const noexcept { return thrust::raw_pointer_cast(data_.data()); }

  vector_type& storage() noexcept { return data_; }
  const vector_type& storage() const noexcept { return data_; }

  /// @returns a copy of the elements in host memory.
  std::vector<T> to_host() const {
    std::vector<T> out(data_.size());
    thrust::copy(data_.begin(), data_.end(), out.begin());
    return out;
  }

  /// Overwrites the elements from host memory; throws dsgd::error on a size mismatch.
  void assign(std::span<const T> host) {
    if (host.size() != data_.size())
      throw error(errc::shape_mismatch, "tensor::assign: " + std::to_string(host.size()) +
                                            " values for a tensor of shape " + shape_.to_string());
    thrust::copy(host.begin(), host.end(), data_.begin());
  }

  /// @returns this tensor's elements copied onto device @p other.
  template <Device D2>
  tensor<D2, T> to(D2 other) const {
    tensor<D2, T> out(std::move(other), shape_);
    if constexpr (D::is_host || D2::is_host) {
      thrust::copy(data_.begin(), data_.end(), out.storage().begin());
    } else {
      // Device to device through the host keeps this header free of nvcc-only code; the cuda
      // device offers a direct peer copy (device/cuda.cuh).
      auto host = to_host();
      thrust::copy(host.begin(), host.end(), out.storage().begin());
    }
    return out;
  }

 private:
  [[no_unique_address]] D device_{};
  dsgd::shape shape_;
  vector_type data_;
};

// Deduction guides: `dsgd::tensor w(cpu, {2, 2}, init::constant{2.f})` is a tensor of float.
template <Device D>
tensor(D, dsgd::shape) -> tensor<D, float>;
template <Device D, class Init>
tensor(D, dsgd::shape, Init) -> tensor<D, float>;

}  // namespace dsgd
