// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Views (tensor/view.hpp) of Eigen storage: a dense float Matrix, Vector or Array, a Map of
/// the user's memory, or any other Eigen object with contiguous storage, so that a model whose
/// forward and backward passes are Eigen expressions trains through dsgd in place. Needs Eigen 3
/// (target dsgd::eigen; not in dsgd.hpp). See docs/models.md.
///
/// @code
/// Eigen::MatrixXf w(784, 10), dw(784, 10);
/// Eigen::VectorXf b(10), db(10);
/// std::vector<dsgd::variable_view> vars{dsgd::adapt::eigen::view("softmax/w", w, dw),
///                                       dsgd::adapt::eigen::view("softmax/b", b, db)};
/// trainer.create_variables(vars);
/// // each step: dw = x.transpose() * dlogits; ...; trainer.push_pull(vars);
/// @endcode
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/tensor/shape.hpp>
#include <dsgd/tensor/view.hpp>

#include <Eigen/Core>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace dsgd::adapt::eigen {

/// Whether a view can be made of an Eigen object of type @p E: float elements in storage of its
/// own or mapped (Eigen's DirectAccessBit: not an expression such as `a + b`), with an inner
/// stride of 1 or one known only at run time (a Map with InnerStride<2> is refused here).
template <class E>
inline constexpr bool is_viewable_v = [] {
  using T = std::remove_cvref_t<E>;
  if constexpr (!std::is_base_of_v<Eigen::EigenBase<T>, T>) {
    return false;
  } else {
    return std::is_same_v<typename T::Scalar, float> && (T::Flags & Eigen::DirectAccessBit) != 0 &&
           (T::InnerStrideAtCompileTime == 1 || T::InnerStrideAtCompileTime == Eigen::Dynamic);
  }
}();

/// Whether pulls can write into an Eigen object of type @p E: viewable and writable (not a
/// Map of const data, not a const object).
template <class E>
inline constexpr bool is_writable_v = is_viewable_v<E> && !std::is_const_v<std::remove_reference_t<E>> &&
                                      (std::remove_cvref_t<E>::Flags & Eigen::LvalueBit) != 0;

/// @returns the row-major shape of @p e's memory: {rows, cols} for row-major storage, {cols,
/// rows} for column-major (Eigen's default: a column-major matrix is, element for element, its
/// transpose stored row-major), {size} for a vector.
template <class E>
dsgd::shape shape_of(const Eigen::DenseBase<E>& e) {
  const auto rows = static_cast<std::size_t>(e.rows()), cols = static_cast<std::size_t>(e.cols());
  if (E::IsVectorAtCompileTime) return dsgd::shape{rows * cols};
  return E::IsRowMajor ? dsgd::shape{rows, cols} : dsgd::shape{cols, rows};
}

namespace detail {
// Checks at run time what is known only then: contiguous storage (inner stride 1, outer stride
// the inner size), for the error of variable @p name.
template <class E>
void check_contiguous(const Eigen::DenseBase<E>& e, std::string_view name, std::string_view what) {
  const auto& d = e.derived();
  // One element is contiguous whatever its strides; a vector needs only its inner stride.
  bool contiguous = d.size() <= 1 || d.innerStride() == 1;
  if (!E::IsVectorAtCompileTime && d.outerSize() > 1) contiguous = contiguous && d.outerStride() == d.innerSize();
  if (d.size() == 0)
    throw error(errc::invalid_argument, "dsgd::adapt::eigen::view: the " + std::string(what) + " of '" +
                                            std::string(name) + "' are empty (0 x 0); a variable needs elements");
  if (!contiguous) {
    // A vector has no outer stride to speak of; a matrix needs both.
    const auto found = E::IsVectorAtCompileTime
                           ? "inner stride " + std::to_string(d.innerStride()) + "; expected 1"
                           : "inner stride " + std::to_string(d.innerStride()) + ", outer stride " +
                                 std::to_string(d.outerStride()) + "; expected inner stride 1 and outer stride " +
                                 std::to_string(d.innerSize());
    throw error(errc::invalid_argument, "dsgd::adapt::eigen::view: the " + std::string(what) + " of '" +
                                            std::string(name) + "' (" + std::to_string(d.rows()) + " x " +
                                            std::to_string(d.cols()) + ") are not contiguous: " + found +
                                            " (view the whole matrix, or copy the block into one)");
  }
}
template <class E>
void check_static() {
  using T = std::remove_cvref_t<E>;
  static_assert(std::is_lvalue_reference_v<E> || !std::is_base_of_v<Eigen::PlainObjectBase<T>, T>,
                "dsgd::adapt::eigen::view: a temporary Matrix or Array would be gone before the view is used; "
                "view one that lives as long as the model");
  static_assert(std::is_base_of_v<Eigen::EigenBase<T>, T>, "dsgd::adapt::eigen::view: not an Eigen object");
  static_assert(std::is_same_v<typename T::Scalar, float>,
                "dsgd::adapt::eigen::view: dsgd variables are float32; this Eigen object's Scalar is not float");
  static_assert((T::Flags & Eigen::DirectAccessBit) != 0,
                "dsgd::adapt::eigen::view: an Eigen expression without storage of its own (a + b, a * b, ...) "
                "cannot be viewed; evaluate it into a Matrix or view the Matrix it is assigned to");
  static_assert(T::InnerStrideAtCompileTime == 1 || T::InnerStrideAtCompileTime == Eigen::Dynamic,
                "dsgd::adapt::eigen::view: elements with an inner stride other than 1 are not contiguous");
}
}  // namespace detail

/// @returns a view named @p name of @p values, whose pulls write there, and of @p gradients,
/// which pushes read (both in place; the same sizes; shape as shape_of(values)). Refused at
/// compile time: non-float storage, expressions without storage, a fixed inner stride other
/// than 1, const values.
/// @throws dsgd::error errc::invalid_argument naming @p name for storage that is not contiguous
///         (a block, a Map with strides) or empty, errc::shape_mismatch when @p gradients has
///         another size
template <class V, class G>
variable_view view(std::string name, V&& values, G&& gradients) {
  detail::check_static<V>();
  detail::check_static<G>();
  static_assert(is_writable_v<V>,
                "dsgd::adapt::eigen::view: pulls write the values: they must not be const "
                "(a Map<const ...> or a const Matrix)");
  detail::check_contiguous(values, name, "values");
  detail::check_contiguous(gradients, name, "gradients");
  auto s = shape_of(values);
  auto v = variable_view{std::move(name), std::move(s),
                         std::span<float>(values.data(), static_cast<std::size_t>(values.size())),
                         std::span<const float>(gradients.data(), static_cast<std::size_t>(gradients.size()))};
  check_view(v, 0, "dsgd::adapt::eigen::view");
  return v;
}

/// @returns a view named @p name of @p values only (a set that is only pulled, to evaluate).
template <class V>
variable_view view(std::string name, V&& values) {
  detail::check_static<V>();
  static_assert(is_writable_v<V>,
                "dsgd::adapt::eigen::view: pulls write the values: they must not be const "
                "(a Map<const ...> or a const Matrix)");
  detail::check_contiguous(values, name, "values");
  auto s = shape_of(values);
  return variable_view{
      std::move(name), std::move(s), std::span<float>(values.data(), static_cast<std::size_t>(values.size())), {}};
}

}  // namespace dsgd::adapt::eigen
