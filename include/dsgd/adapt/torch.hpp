// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Views (tensor/view.hpp) of libtorch tensors: one torch::Tensor, or every parameter of a
/// torch::nn::Module (named_parameters()) with its .grad(), so that a model written with torch::nn
/// trains through dsgd: pulls write into the parameters' storage, pushes read their gradients
/// where backward() left them, nothing copied. Contiguous float32 CPU tensors only (a CUDA
/// module copies to and from CPU tensors of its own; docs/models.md). Needs libtorch (target
/// dsgd::torch; not in dsgd.hpp).
///
/// @code
/// Net net;                                          // a torch::nn::Module
/// dsgd::adapt::libtorch::module_views params(net);  // names and shapes recorded here
/// trainer.create_variables(params.values());
/// for (auto& batch : loader) {
///   net.zero_grad();
///   torch::nll_loss(net.forward(batch.data), batch.target).backward();
///   trainer.push_pull(params.with_gradients());     // gradients out, new values in, in place
/// }
/// @endcode
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/tensor/shape.hpp>
#include <dsgd/tensor/view.hpp>

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsgd::adapt::libtorch {

/// @returns the shape of @p t's sizes (a 0-dimensional tensor is a scalar).
inline dsgd::shape shape_of(const ::torch::Tensor& t) {
  std::vector<std::size_t> extents;
  for (auto e : t.sizes()) extents.push_back(static_cast<std::size_t>(e));
  return dsgd::shape(std::move(extents));
}

namespace detail {
inline std::string sizes_of(const ::torch::Tensor& t) { return shape_of(t).to_string(); }
// Whether @p t has shape @p s (allocating nothing: it runs on every exchange).
inline bool has_shape(const ::torch::Tensor& t, const dsgd::shape& s) {
  if (static_cast<std::size_t>(t.dim()) != s.rank()) return false;
  for (std::size_t d = 0; d < s.rank(); ++d)
    if (static_cast<std::size_t>(t.size(static_cast<std::int64_t>(d))) != s.extents()[d]) return false;
  return true;
}

// Checks that @p t, the @p what ("values", "gradient") of parameter @p name, can be viewed:
// defined, float32, on the CPU, contiguous, not empty.
inline void check_tensor(const ::torch::Tensor& t, std::string_view name, std::string_view what,
                         std::string_view where) {
  // The message is built only on failure: this runs on every exchange.
  const auto fail = [&](const std::string& what_is_wrong) {
    throw error(errc::invalid_argument, std::string(where) + ": the " + std::string(what) + " of parameter '" +
                                            std::string(name) + "'" + what_is_wrong);
  };
  if (!t.defined())
    fail(what == "gradient" ? " was never computed (.grad() is undefined): run backward() before pushing, on a "
                              "loss that depends on it"
                            : " is an undefined tensor");
  if (t.scalar_type() != ::torch::kFloat32)
    fail(" is " + std::string(c10::toString(t.scalar_type())) +
         "; dsgd variables are float32 (convert the module with .to(torch::kFloat32))");
  if (!t.device().is_cpu())
    fail(" is on " + t.device().str() + "; views are of CPU memory (docs/models.md, GPU tensors)");
  if (!t.is_contiguous())
    fail(" (sizes " + sizes_of(t) +
         ") is not contiguous; expected a dense row-major tensor (.contiguous() "
         "makes a copy: view the copy, and keep it)");
  if (t.numel() == 0) fail(" is empty (sizes " + sizes_of(t) + "); a variable needs elements");
}
}  // namespace detail

/// @returns a view named @p name of tensor @p values and, if defined, of @p gradients (its
/// .grad() by default), both in place.
/// @throws dsgd::error errc::invalid_argument naming @p name for a tensor that is not float32,
///         not on the CPU, not contiguous or empty; errc::shape_mismatch for a gradient of
///         other sizes
inline variable_view view(std::string name, const ::torch::Tensor& values, const ::torch::Tensor& gradients) {
  constexpr std::string_view where = "dsgd::adapt::libtorch::view";
  detail::check_tensor(values, name, "values", where);
  variable_view v{std::move(name),
                  shape_of(values),
                  std::span<float>(values.data_ptr<float>(), static_cast<std::size_t>(values.numel())),
                  {}};
  if (gradients.defined()) {
    detail::check_tensor(gradients, v.name, "gradient", where);
    if (!gradients.sizes().equals(values.sizes()))
      throw error(errc::shape_mismatch, std::string(where) + ": the gradient of parameter '" + v.name + "' has sizes " +
                                            detail::sizes_of(gradients) + ", its values " + detail::sizes_of(values));
    v.gradients = std::span<const float>(gradients.data_ptr<float>(), static_cast<std::size_t>(gradients.numel()));
  }
  return v;
}
/// view() of @p values and its own .grad() (none while undefined).
inline variable_view view(std::string name, const ::torch::Tensor& values) {
  return view(std::move(name), values, values.grad());
}

/// Views of every parameter of a torch::nn::Module (named_parameters(), in its order; dsgd's
/// variable names are the parameters' names, "conv1.weight"), with their gradients. The names
/// and shapes are recorded at construction, the placement's; values() and with_gradients() take
/// the views afresh (the storage of a gradient may change, zero_grad(true) frees it) and check
/// them against that record each time. The spans they return stay valid while this object lives
/// and are refreshed in place, so an overlap started on with_gradients() sees the gradients of
/// each step once with_gradients() was called after backward().
class module_views {
 public:
  /// Records @p module's parameters. @throws dsgd::error as values()
  explicit module_views(::torch::nn::Module& module) : module_(&module) {
    for (const auto& p : module.named_parameters()) {
      names_.push_back(p.key());
      shapes_.push_back(shape_of(p.value()));
    }
    if (names_.empty())
      throw error(errc::invalid_argument,
                  "dsgd::adapt::libtorch::module_views: module '" + module.name() + "' has no parameters");
    views_.resize(names_.size());
    refresh(false, "dsgd::adapt::libtorch::module_views");
  }

  /// @returns the views of the parameters' values (no gradients): for create_variables(),
  /// restore_variables(), pull(), recover().
  /// @throws dsgd::error errc::shape_mismatch naming the parameter when the module's parameters
  ///         changed number, names or shape since construction; errc::invalid_argument for a
  ///         parameter that is not contiguous float32 on the CPU
  variable_views values() { return refresh(false, "dsgd::adapt::libtorch::module_views::values"); }

  /// @returns the views of the parameters' values and gradients: for push(), push_pull(),
  /// overlapped(); call it after backward().
  /// @throws dsgd::error as values(), and errc::invalid_argument naming a parameter whose gradient
  ///         was never computed (.grad() undefined) or is not contiguous float32 on the CPU
  variable_views with_gradients() { return refresh(true, "dsgd::adapt::libtorch::module_views::with_gradients"); }

  /// @returns the parameters' names, in order.
  const std::vector<std::string>& names() const noexcept { return names_; }
  /// @returns the parameters' shapes as recorded at construction.
  const std::vector<dsgd::shape>& shapes() const noexcept { return shapes_; }

 private:
  variable_views refresh(bool gradients, std::string_view where) {
    const auto params = module_->named_parameters();
    if (params.size() != names_.size())
      throw error(errc::shape_mismatch, std::string(where) + ": module '" + module_->name() + "' has " +
                                            std::to_string(params.size()) + " parameters; it had " +
                                            std::to_string(names_.size()) + " when placed (first '" + names_.front() +
                                            "')");
    std::size_t i = 0;
    for (const auto& p : params) {
      const auto& t = p.value();
      if (p.key() != names_[i])
        throw error(errc::shape_mismatch, std::string(where) + ": parameter " + std::to_string(i) + " is '" + p.key() +
                                              "'; it was '" + names_[i] + "' when placed");
      detail::check_tensor(t, names_[i], "values", where);
      if (!detail::has_shape(t, shapes_[i]))
        throw error(errc::shape_mismatch, std::string(where) + ": parameter '" + names_[i] + "' has sizes " +
                                              detail::sizes_of(t) + "; it was placed with " + shapes_[i].to_string());
      auto& v = views_[i];
      if (v.name.empty()) {
        v.name = names_[i];
        v.shape = shapes_[i];
      }
      v.values = std::span<float>(t.data_ptr<float>(), shapes_[i].elements());
      v.gradients = {};
      if (gradients) {
        const auto g = t.grad();
        detail::check_tensor(g, names_[i], "gradient", where);
        if (!g.sizes().equals(t.sizes()))
          throw error(errc::shape_mismatch, std::string(where) + ": the gradient of parameter '" + names_[i] +
                                                "' has sizes " + detail::sizes_of(g) + ", its values " +
                                                detail::sizes_of(t));
        v.gradients = std::span<const float>(g.data_ptr<float>(), shapes_[i].elements());
      }
      ++i;
    }
    return views_;
  }

  ::torch::nn::Module* module_;
  std::vector<std::string> names_;
  std::vector<dsgd::shape> shapes_;
  std::vector<variable_view> views_;  // refreshed in place: the spans handed out stay valid
};

}  // namespace dsgd::adapt::libtorch
