// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Elementwise tensor arithmetic (w + b, w * b, w / b) as Thrust kernels on the tensor's device.
#pragma once

#include <dsgd/config.hpp>
#include <dsgd/error.hpp>
#include <dsgd/tensor/tensor.hpp>

#include <thrust/transform.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace dsgd {

namespace detail {

struct plus_fn {
  template <class T>
  DSGD_HOST_DEVICE T operator()(T a, T b) const {
    return a + b;
  }
};
struct minus_fn {
  template <class T>
  DSGD_HOST_DEVICE T operator()(T a, T b) const {
    return a - b;
  }
};
struct multiplies_fn {
  template <class T>
  DSGD_HOST_DEVICE T operator()(T a, T b) const {
    return a * b;
  }
};
struct divides_fn {
  template <class T>
  DSGD_HOST_DEVICE T operator()(T a, T b) const {
    return a / b;
  }
};

template <class Op, Device D, class T>
tensor<D, T> elementwise(const tensor<D, T>& a, const tensor<D, T>& b, const char* what) {
  if (a.shape() != b.shape())
    throw error(errc::shape_mismatch,
                std::string(what) + ": shapes " + a.shape().to_string() + " and " + b.shape().to_string() + " differ");
  tensor<D, T> out(a.device(), a.shape());
  thrust::transform(a.device().policy(), a.data(), a.data() + a.size(), b.data(), out.data(), Op{});
  a.device().synchronize();
  return out;
}

}  // namespace detail

/// @returns a + b elementwise, computed on a's device; throws dsgd::error on a shape mismatch.
template <Device D, class T>
tensor<D, T> operator+(const tensor<D, T>& a, const tensor<D, T>& b) {
  return detail::elementwise<detail::plus_fn>(a, b, "operator+");
}
/// @returns a - b elementwise.
template <Device D, class T>
tensor<D, T> operator-(const tensor<D, T>& a, const tensor<D, T>& b) {
  return detail::elementwise<detail::minus_fn>(a, b, "operator-");
}
/// @returns a * b elementwise (not a matrix product).
template <Device D, class T>
tensor<D, T> operator*(const tensor<D, T>& a, const tensor<D, T>& b) {
  return detail::elementwise<detail::multiplies_fn>(a, b, "operator*");
}
/// @returns a / b elementwise.
template <Device D, class T>
tensor<D, T> operator/(const tensor<D, T>& a, const tensor<D, T>& b) {
  return detail::elementwise<detail::divides_fn>(a, b, "operator/");
}

/// @returns the tensor formatted as NumPy prints it: "[[7. 7.]\n [7. 7.]]" for a 2x2 of 7.
template <Device D, class T>
std::string to_string(const tensor<D, T>& t) {
  auto values = t.to_host();
  const auto& ext = t.shape().extents();
  std::string out;
  std::size_t index = 0;
  // The shortest decimal that reads back as the same T, as NumPy prints (0.4f is "0.4").
  auto number = [](T v) {
    char buf[40];
    if (v == static_cast<T>(static_cast<long long>(v))) {
      std::snprintf(buf, sizeof buf, "%.0f.", static_cast<double>(v));
      return std::string(buf);
    }
    for (int digits = 1; digits <= 17; ++digits) {
      std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(v));
      if (static_cast<T>(std::strtod(buf, nullptr)) == v) break;
    }
    return std::string(buf);
  };
  // Recursive descent over dimensions; NumPy indents nested rows by their depth.
  auto print = [&](auto& self, std::size_t dim) -> void {
    if (dim == ext.size()) {
      out += number(values[index++]);
      return;
    }
    out += '[';
    for (std::size_t i = 0; i < ext[dim]; ++i) {
      if (i) {
        if (dim + 1 == ext.size()) {
          out += ' ';
        } else {
          out += std::string(ext.size() - dim - 1, '\n') + std::string(dim + 1, ' ');
        }
      }
      self(self, dim + 1);
    }
    out += ']';
  };
  print(print, 0);
  return out;
}

}  // namespace dsgd
