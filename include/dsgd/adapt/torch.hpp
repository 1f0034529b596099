// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Views (tensor/view.hpp) of libtorch tensors: one torch::Tensor, or every parameter of a
/// torch::nn::Module (named_parameters()) with its .grad(), and its buffers (BatchNorm's running
/// statistics) as chosen, so that a model written with torch::nn trains through dsgd: pulls
/// write into the parameters' storage, pushes read their gradients where backward() left them,
/// nothing copied. Contiguous float32 CPU tensors only (a CUDA
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

#include <algorithm>
#include <cmath>
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

/// What module_views does with a module's state that has no gradient: its buffers
/// (named_buffers(): BatchNorm's running mean and variance and its num_batches_tracked), or its
/// frozen parameters (requires_grad() false, so never a .grad()).
enum class keep : std::uint8_t {
  /// Neither chosen: a module that has such state is an error at construction naming it and
  /// these choices (an unsynchronised BatchNorm would otherwise train without a word).
  ask,
  /// Variables beside the parameters, their values pushed in place of a gradient, so that a ps
  /// task that averages its pushes (docs/models.md, "Buffers") keeps every replica's copy equal
  /// and checkpoints and restores it with the job.
  exchange,
  /// Not variables: each replica keeps its own, no checkpoint holds it (frozen parameters of a
  /// pretrained part every replica loads alike, or buffers a job recomputes itself).
  leave_out
};

/// The choices of module_views (what it makes variables of, besides trainable parameters).
struct module_options {
  keep buffers = keep::ask;  ///< named_buffers() (an undefined buffer is never a variable)
  keep frozen = keep::ask;   ///< parameters with requires_grad() false
};

/// Views of a torch::nn::Module as dsgd variables: every trainable parameter
/// (named_parameters(), in its order; the variable names are the parameters' names,
/// "conv1.weight") with its gradient, then, as @p options choose, its state that has no
/// gradient: frozen parameters in their place and buffers (named_buffers(), "bn1.running_mean")
/// after the parameters.
///
/// A variable of state is pushed its values in place of a gradient (a copy taken by
/// with_gradients()), so the ps task that holds it must set it to the mean of its pushes, which
/// an optimizer's step does not: give state_names() an optimizer of their own that assigns the
/// mean, through optim::per_variable (docs/models.md, "Buffers"). Under sync every replica then ends each step with the
/// replicas' mean of its float buffers (BatchNorm's statistics over all the step's batches), and checkpoints hold them.
/// An integer buffer (num_batches_tracked, int64) is a count, not a statistic: its variable is a float mirror (exact to
/// 2^24) into which pulls land, and the module's tensor holds the value last landed plus what the module counted since,
/// written back at each values() and with_gradients(); replicas that count alike (every one a batch a step, under sync)
/// push equal counts, which the mean keeps exactly.
///
/// The names, kinds and shapes are recorded at construction, the placement's; values() and
/// with_gradients() take the views afresh (the storage of a gradient may change, zero_grad(true)
/// frees it) and check them against that record each time. The spans they return stay valid
/// while this object lives and are refreshed in place, so an overlap started on
/// with_gradients() sees the gradients of each step once with_gradients() was called after
/// backward().
class module_views {
 public:
  /// Records @p module's parameters and, as @p options choose, its state without gradients.
  /// @throws dsgd::error errc::invalid_argument naming the first buffer or frozen parameter
  ///         when @p options leave that kind at keep::ask, for a module without variables, and
  ///         as values()
  explicit module_views(::torch::nn::Module& module, module_options options = {}) : module_(&module) {
    constexpr std::string_view where = "dsgd::adapt::libtorch::module_views";
    const auto ask = [&](std::string_view what, const std::string& name, std::string_view field) {
      throw error(errc::invalid_argument,
                  std::string(where) + ": module '" + module.name() + "' has " + std::string(what) + " ('" + name +
                      "'), which get no gradient: choose module_options{." + std::string(field) +
                      " = keep::exchange} to make them variables the ps tasks synchronise and checkpoint "
                      "(docs/models.md, \"Buffers\"), or keep::leave_out to leave each replica its own");
    };
    for (const auto& p : module.named_parameters()) {
      kind k = kind::parameter;
      if (!p.value().requires_grad()) {
        if (options.frozen == keep::ask) ask("frozen parameters (requires_grad() false)", p.key(), "frozen");
        k = options.frozen == keep::exchange ? kind::state : kind::left_out;
      }
      params_.push_back(k);
      if (k != kind::left_out) record(p.key(), p.value(), k);
    }
    for (const auto& b : module.named_buffers()) {
      kind k = kind::left_out;
      if (b.value().defined()) {
        if (options.buffers == keep::ask) ask("buffers", b.key(), "buffers");
        if (options.buffers == keep::exchange)
          k = c10::isIntegralType(b.value().scalar_type(), false) ? kind::counter : kind::state;
      }
      buffers_.push_back(k);
      if (k != kind::left_out) record(b.key(), b.value(), k);
    }
    if (names_.empty())
      throw error(errc::invalid_argument,
                  std::string(where) + ": module '" + module.name() + "' has no parameters to train");
    views_.resize(names_.size());
    refresh(false, where);
  }

  /// @returns the views of the variables' values (no gradients): for create_variables(),
  /// restore_variables(), pull(), recover(). It also writes the counters last pulled into the
  /// module's integer buffers (with what the module counted since).
  /// @throws dsgd::error errc::shape_mismatch naming the variable when the module's parameters
  ///         or buffers changed number, names, kind or shape since construction;
  ///         errc::invalid_argument for a tensor that is not contiguous float32 on the CPU
  variable_views values() { return refresh(false, "dsgd::adapt::libtorch::module_views::values"); }

  /// @returns the views of the variables' values and gradients: for push(), push_pull(),
  /// overlapped(); call it after backward(). A variable of state (a buffer, a frozen
  /// parameter) pushes a copy of its values, taken here.
  /// @throws dsgd::error as values(), and errc::invalid_argument naming a trainable parameter
  ///         whose gradient was never computed (.grad() undefined) or is not contiguous float32
  ///         on the CPU
  variable_views with_gradients() { return refresh(true, "dsgd::adapt::libtorch::module_views::with_gradients"); }

  /// @returns the variables' names, in order: parameters, then buffers.
  const std::vector<std::string>& names() const noexcept { return names_; }
  /// @returns the variables' shapes as recorded at construction.
  const std::vector<dsgd::shape>& shapes() const noexcept { return shapes_; }
  /// @returns the names of the variables of state (buffers, frozen parameters kept), in order:
  /// those to place on a ps task that averages its pushes.
  std::vector<std::string> state_names() const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (kinds_[i] != kind::parameter) out.push_back(names_[i]);
    return out;
  }

 private:
  enum class kind : std::uint8_t { parameter, state, counter, left_out };

  void record(const std::string& name, const ::torch::Tensor& t, kind k) {
    names_.push_back(name);
    shapes_.push_back(shape_of(t));
    kinds_.push_back(k);
    pushed_.emplace_back(k == kind::parameter ? 0 : static_cast<std::size_t>(t.numel()));
    landed_.emplace_back(k == kind::counter ? static_cast<std::size_t>(t.numel()) : 0);
    seen_.emplace_back(k == kind::counter ? static_cast<std::size_t>(t.numel()) : 0);
    if (k == kind::counter) {
      const auto counts = t.to(::torch::kInt64).contiguous();
      for (std::int64_t e = 0; e < counts.numel(); ++e) {
        seen_.back()[static_cast<std::size_t>(e)] = counts.data_ptr<std::int64_t>()[e];
        landed_.back()[static_cast<std::size_t>(e)] = static_cast<float>(counts.data_ptr<std::int64_t>()[e]);
      }
    }
  }

  // The recorded variable @p i is tensor @p t, named @p name: checks it and refreshes its view.
  void refresh_one(std::size_t i, const std::string& name, const ::torch::Tensor& t, bool gradients,
                   std::string_view where) {
    if (name != names_[i])
      throw error(errc::shape_mismatch, std::string(where) + ": variable " + std::to_string(i) + " is '" + name +
                                            "'; it was '" + names_[i] + "' when placed");
    const kind k = kinds_[i];
    if (k == kind::counter) {
      if (!t.defined() || !c10::isIntegralType(t.scalar_type(), false))
        throw error(errc::shape_mismatch,
                    std::string(where) + ": buffer '" + name + "' is no longer an integer tensor; it was when placed");
    } else {
      detail::check_tensor(t, names_[i], "values", where);
    }
    if (!detail::has_shape(t, shapes_[i]))
      throw error(errc::shape_mismatch, std::string(where) + (k == kind::parameter ? ": parameter '" : ": '") +
                                            names_[i] + "' has sizes " + detail::sizes_of(t) + "; it was placed with " +
                                            shapes_[i].to_string());
    auto& v = views_[i];
    if (v.name.empty()) {
      v.name = names_[i];
      v.shape = shapes_[i];
    }
    v.gradients = {};
    const auto n = shapes_[i].elements();
    switch (k) {
      case kind::parameter:
        v.values = std::span<float>(t.data_ptr<float>(), n);
        if (gradients) {
          const auto g = t.grad();
          detail::check_tensor(g, names_[i], "gradient", where);
          if (!g.sizes().equals(t.sizes()))
            throw error(errc::shape_mismatch, std::string(where) + ": the gradient of parameter '" + names_[i] +
                                                  "' has sizes " + detail::sizes_of(g) + ", its values " +
                                                  detail::sizes_of(t));
          v.gradients = std::span<const float>(g.data_ptr<float>(), n);
        }
        break;
      case kind::state:
        v.values = std::span<float>(t.data_ptr<float>(), n);
        if (gradients) {
          std::copy_n(t.data_ptr<float>(), n, pushed_[i].begin());
          v.gradients = pushed_[i];
        }
        break;
      case kind::counter: {
        // The module's count is the one last landed plus what it counted since; the mirror
        // then holds it too, so that a second refresh without a pull changes nothing.
        ::torch::NoGradGuard no_grad;
        auto counts = t.to(::torch::kInt64).contiguous();
        auto* c = counts.data_ptr<std::int64_t>();
        for (std::size_t e = 0; e < n; ++e) {
          const auto now = std::llround(static_cast<double>(landed_[i][e])) + (c[e] - seen_[i][e]);
          c[e] = seen_[i][e] = now;
          landed_[i][e] = pushed_[i][e] = static_cast<float>(now);
        }
        if (counts.data_ptr() != t.data_ptr()) t.copy_(counts);
        v.values = landed_[i];
        if (gradients) v.gradients = pushed_[i];
        break;
      }
      case kind::left_out:
        break;
    }
  }

  variable_views refresh(bool gradients, std::string_view where) {
    const auto count_error = [&](std::string_view what, std::size_t now, std::size_t then) {
      throw error(errc::shape_mismatch, std::string(where) + ": module '" + module_->name() + "' has " +
                                            std::to_string(now) + " " + std::string(what) + "; it had " +
                                            std::to_string(then) + " when placed (first '" + names_.front() + "')");
    };
    const auto params = module_->named_parameters();
    if (params.size() != params_.size()) count_error("parameters", params.size(), params_.size());
    const auto buffers = module_->named_buffers();
    if (buffers.size() != buffers_.size()) count_error("buffers", buffers.size(), buffers_.size());
    std::size_t i = 0, j = 0;
    for (const auto& p : params) {
      if (params_[j++] == kind::left_out) continue;
      refresh_one(i++, p.key(), p.value(), gradients, where);
    }
    j = 0;
    for (const auto& b : buffers) {
      if (buffers_[j++] == kind::left_out) continue;
      refresh_one(i++, b.key(), b.value(), gradients, where);
    }
    return views_;
  }

  ::torch::nn::Module* module_;
  std::vector<kind> params_, buffers_;  // per named_parameters() and named_buffers() entry
  std::vector<std::string> names_;
  std::vector<dsgd::shape> shapes_;
  std::vector<kind> kinds_;                      // per variable
  std::vector<std::vector<float>> pushed_;       // per variable of state: the copy pushed
  std::vector<std::vector<float>> landed_;       // per counter: where its pulls land
  std::vector<std::vector<std::int64_t>> seen_;  // per counter: the module's count when last written
  std::vector<variable_view> views_;             // refreshed in place: the spans handed out stay valid
};

}  // namespace dsgd::adapt::libtorch
