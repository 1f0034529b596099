// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The Device concept: where tensors live and where kernels run.
#pragma once

#include <concepts>
#include <cstddef>
#include <string>

namespace dsgd {

/// A Device names a memory space and an execution policy over it.
///
/// A model `D` provides
///  - `D::vector<T>`: an owning, contiguous container in the device's memory
///    (`thrust::host_vector` on the host, `thrust::device_vector` on a GPU);
///  - `d.policy()`: the Thrust execution policy that runs kernels on `d`;
///  - `d.synchronize()`: blocks until all work issued through `d.policy()` is complete;
///  - `d.name()`: a device string that parses back to `d` (see device/parse.hpp);
///  - `D::is_host`: whether raw pointers into `D::vector` are dereferenceable on the host.
///
/// If you get an error on a line that requires this concept, the type you passed as a device
/// lacks one of these members; docs/policies.md shows how to write a device policy.
template <class D>
concept Device = std::copy_constructible<D> && requires(const D& d) {
  typename D::template vector<float>;
  { D::is_host } -> std::convertible_to<bool>;
  d.policy();
  d.synchronize();
  { d.name() } -> std::convertible_to<std::string>;
};

}  // namespace dsgd
