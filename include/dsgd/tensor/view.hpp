// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// variable_view: one variable of a user's model as views of memory the user owns (its name,
/// shape, values and gradients), and views(): a model's buffers as a set of them. train::worker
/// and dsgd::trainer take such a set wherever they take tensors, and pull into and push from the
/// user's memory directly: nothing is copied on the host. The adapters of <dsgd/adapt/...> make
/// them of Eigen and libtorch storage (docs/models.md).
#pragma once

#include <dsgd/device/concepts.hpp>
#include <dsgd/error.hpp>
#include <dsgd/tensor/shape.hpp>
#include <dsgd/tensor/tensor.hpp>

#include <concepts>
#include <cstddef>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace dsgd {

/// One variable of a model as views of host memory its owner keeps alive and in place: its
/// name, its shape (row-major), its values (pulls write them) and its gradients (pushes read
/// them; empty for a set that is only pulled). Both are contiguous floats, as many as the shape
/// has elements.
///
/// @code
/// std::vector<float> w(784 * 10), dw(784 * 10);
/// auto v = dsgd::view("softmax/w", {784, 10}, w, dw);
/// @endcode
struct variable_view {
  std::string name;                  ///< the variable's name (placement, checkpoints, errors)
  dsgd::shape shape;                 ///< its extents; shape.elements() == values.size()
  std::span<float> values;           ///< where pulled values land
  std::span<const float> gradients;  ///< what a push sends; empty when only pulled
};

/// A model's variables as views, in creation order: what the worker and trainer calls take (a
/// `std::vector<variable_view>` converts to it).
using variable_views = std::span<const variable_view>;

/// Whether @p B is a tensor whose elements are not in host memory (no view can be made of it).
template <class B>
inline constexpr bool is_device_tensor_v = false;
template <Device D, class T>
inline constexpr bool is_device_tensor_v<tensor<D, T>> = !D::is_host;

/// Host storage a view can be made of: contiguous floats through std::data() and std::size()
/// (std::vector<float>, std::span<float>, std::array, a host dsgd::tensor); a tensor off the
/// host is not one (its data() is device memory).
template <class B>
concept float_buffer = !is_device_tensor_v<std::remove_cvref_t<B>> && requires(B & b) {
  { std::data(b) } -> std::convertible_to<const float*>;
  { std::size(b) } -> std::convertible_to<std::size_t>;
};

/// @returns the shape a buffer has unless told otherwise: a tensor's own, else one dimension.
template <float_buffer B>
dsgd::shape shape_of(const B& b) {
  if constexpr (requires {
                  { b.shape() } -> std::convertible_to<const dsgd::shape&>;
                })
    return b.shape();
  else return dsgd::shape{static_cast<std::size_t>(std::size(b))};
}

namespace detail {
// "variable 'w' (1)": how every error names a view.
inline std::string view_name(const variable_view& v, std::size_t index) {
  return "variable '" + v.name + "' (" + std::to_string(index) + ")";
}
}  // namespace detail

/// Checks view @p v, number @p index of its set, for @p where (the call named in the error):
/// its values are a buffer (not null or empty) of as many floats as its shape has elements, its
/// gradients empty or as many, and present when @p need_gradients.
/// @throws dsgd::error errc::invalid_argument for a null or empty buffer, errc::shape_mismatch
///         for sizes that disagree; the message names the call, the variable and both sizes
inline void check_view(const variable_view& v, std::size_t index, std::string_view where, bool need_gradients = false) {
  // The message is built only on failure: the worker checks its views on every exchange.
  const auto n = v.shape.elements();
  const auto fail = [&](errc code, const std::string& what) {
    throw error(code, std::string(where) + ": " + detail::view_name(v, index) + what);
  };
  if (v.values.data() == nullptr || v.values.empty())
    fail(errc::invalid_argument, " has no values buffer (null or empty); expected " + std::to_string(n) +
                                     " floats for shape " + v.shape.to_string());
  if (v.values.size() != n)
    fail(errc::shape_mismatch, " has " + std::to_string(v.values.size()) + " values; shape " + v.shape.to_string() +
                                   " has " + std::to_string(n) + " elements");
  if (v.gradients.empty() && !need_gradients) return;
  if (v.gradients.data() == nullptr || v.gradients.empty())
    fail(errc::invalid_argument,
         " has no gradients buffer (null or empty); expected " + std::to_string(n) + " floats, as many as its values");
  if (v.gradients.size() != v.values.size())
    fail(errc::shape_mismatch, " has " + std::to_string(v.gradients.size()) + " gradients for " +
                                   std::to_string(v.values.size()) + " values");
}

/// @returns a view named @p name of shape @p s over @p values and @p gradients (none when empty).
/// @throws dsgd::error as check_view()
inline variable_view view(std::string name, dsgd::shape s, std::span<float> values,
                          std::span<const float> gradients = {}) {
  variable_view v{std::move(name), std::move(s), values, gradients};
  check_view(v, 0, "dsgd::view");
  return v;
}

/// @returns a view of one dimension named @p name over @p values and @p gradients.
inline variable_view view(std::string name, std::span<float> values, std::span<const float> gradients = {}) {
  return view(std::move(name), dsgd::shape{values.size()}, values, gradients);
}

/// @returns a view named @p name of buffer @p values (with its shape_of()), and of @p gradients.
template <float_buffer V, float_buffer G>
requires(!std::is_const_v<std::remove_pointer_t<decltype(std::data(std::declval<V&>()))>>) variable_view
    view(std::string name, V& values, const G& gradients) {
  return view(std::move(name), shape_of(values), std::span<float>(std::data(values), std::size(values)),
              std::span<const float>(std::data(gradients), std::size(gradients)));
}

/// @returns views of a model's buffers: variable i has values @p values[i], gradients
/// @p gradients[i] (none if @p gradients is empty), name @p names[i] ("var<i>" when @p names has
/// none) and shape @p shapes[i] (shape_of(values[i]) when @p shapes has none). The views point
/// into the buffers, which must stay where they are (a std::vector that reallocates moves them).
/// @throws dsgd::error errc::shape_mismatch when @p gradients or @p shapes has another count, or
///         a view fails check_view()
template <float_buffer V, float_buffer G>
std::vector<variable_view> views(std::vector<V>& values, const std::vector<G>& gradients,
                                 const std::vector<std::string>& names = {},
                                 const std::vector<dsgd::shape>& shapes = {}) {
  const auto count = [&](std::size_t n, const char* what) {
    if (n != 0 && n != values.size())
      throw error(errc::shape_mismatch, "dsgd::views: " + std::to_string(n) + " " + what + " for " +
                                            std::to_string(values.size()) + " values buffers");
  };
  count(gradients.size(), "gradients buffers");
  count(shapes.size(), "shapes");
  std::vector<variable_view> out;
  out.reserve(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    auto& b = values[i];
    variable_view v{i < names.size() ? names[i] : "var" + std::to_string(i),
                    i < shapes.size() ? shapes[i] : shape_of(b),
                    std::span<float>(std::data(b), std::size(b)),
                    {}};
    if (!gradients.empty()) v.gradients = std::span<const float>(std::data(gradients[i]), std::size(gradients[i]));
    check_view(v, i, "dsgd::views");
    out.push_back(std::move(v));
  }
  return out;
}

/// views() of buffers that are only pulled (no gradients).
template <float_buffer V>
std::vector<variable_view> views(std::vector<V>& values, const std::vector<std::string>& names = {},
                                 const std::vector<dsgd::shape>& shapes = {}) {
  return views(values, std::vector<V>{}, names, shapes);
}

}  // namespace dsgd
