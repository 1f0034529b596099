// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// model::feed_forward<D>: a stack of dense layers with ReLU between them and a softmax
/// cross-entropy loss, trained on mini-batches. mlp<D> and softmax_regression<D> are its two
/// shapes; the examples use those names.
#pragma once

#include <dsgd/device/concepts.hpp>
#include <dsgd/error.hpp>
#include <dsgd/model/blas.hpp>
#include <dsgd/model/kernels.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/tensor/tensor.hpp>

#include <thrust/copy.h>
#include <thrust/fill.h>
#include <thrust/for_each.h>
#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/reduce.h>
#include <thrust/transform_reduce.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dsgd::model {

/// Loss and accuracy of a model over a set of examples.
struct evaluation {
  double loss = 0;      ///< mean softmax cross-entropy
  double accuracy = 0;  ///< fraction of examples whose arg-max logit is the label
};

/// What a training step tells whoever moves its parameters and gradients (trainer::overlap):
/// parameters_needed(i) before the step first reads parameter i, gradient_ready(i) once the
/// step has written gradient i, in creation order of the parameters.
template <class H>
concept step_hooks = requires(H& h, std::size_t i) {
  h.parameters_needed(i);
  h.gradient_ready(i);
};

/// step_hooks that do nothing: a step on parameters already in place.
struct no_hooks {
  void parameters_needed(std::size_t) const noexcept {}
  void gradient_ready(std::size_t) const noexcept {}
};

/// A fully connected network: widths {in, h1, ..., out} give dense layers in -> h1 -> ... -> out
/// with ReLU after every layer but the last, and softmax cross-entropy on the output.
///
/// Parameters, in creation order, are `dense<l>/kernel` (in_l x out_l, Glorot uniform from the
/// seed) and `dense<l>/bias` (out_l, zeros); gradients() has the same shapes and order.
/// Inputs are host pointers (a dataset in memory); each call copies its batch to the device.
///
/// A model object is one replica: it owns its activations and gradients, so distinct objects
/// may be used from distinct threads at once, but one object from one thread at a time. Copies
/// (or objects built with the same widths and seed) start identical.
///
/// @tparam D the device holding parameters and running kernels; needs a model::blas<D>.
template <Device D>
class feed_forward {
 public:
  using device_type = D;
  using vector_type = typename D::template vector<float>;

  /// Builds the layers given by @p widths (at least {in, out}), weights drawn from @p seed.
  /// @throws dsgd::error (errc::invalid_argument) if there are fewer than two widths or a zero.
  feed_forward(D device, std::vector<std::size_t> widths, std::uint64_t seed)
      : device_(std::move(device)), widths_(std::move(widths)) {
    if (widths_.size() < 2 || std::find(widths_.begin(), widths_.end(), 0u) != widths_.end())
      throw error(errc::invalid_argument, "feed_forward: widths must be at least {inputs, outputs}, all positive");
    for (std::size_t l = 0; l + 1 < widths_.size(); ++l) {
      const std::size_t in = widths_[l], out = widths_[l + 1];
      const std::string name = "dense" + std::to_string(l);
      params_.emplace_back(device_, dsgd::shape{in, out}, init::glorot_uniform{in, out, mix(seed, l)});
      params_.emplace_back(device_, dsgd::shape{out});
      grads_.emplace_back(device_, dsgd::shape{in, out});
      grads_.emplace_back(device_, dsgd::shape{out});
      names_.push_back(name + "/kernel");
      names_.push_back(name + "/bias");
    }
    acts_.resize(layers());
    deltas_.resize(layers());
  }

  const D& device() const noexcept { return device_; }
  /// @returns the layer widths {in, ..., out}.
  const std::vector<std::size_t>& widths() const noexcept { return widths_; }
  /// @returns the number of dense layers.
  std::size_t layers() const noexcept { return widths_.size() - 1; }
  /// @returns the input width (784 for Fashion-MNIST).
  std::size_t inputs() const noexcept { return widths_.front(); }
  /// @returns the number of classes.
  std::size_t outputs() const noexcept { return widths_.back(); }

  /// @returns the trainable tensors, kernel then bias for each layer in order.
  std::vector<tensor<D>>& parameters() noexcept { return params_; }
  const std::vector<tensor<D>>& parameters() const noexcept { return params_; }
  /// @returns the mean gradients of the last forward_backward(), same shapes as parameters().
  std::vector<tensor<D>>& gradients() noexcept { return grads_; }
  const std::vector<tensor<D>>& gradients() const noexcept { return grads_; }
  /// @returns the names of parameters(), e.g. "dense0/kernel", "dense0/bias".
  const std::vector<std::string>& names() const noexcept { return names_; }
  /// @returns the total number of trainable scalars.
  std::size_t parameter_count() const noexcept {
    std::size_t n = 0;
    for (const auto& p : params_) n += p.size();
    return n;
  }

  /// Overwrites the parameters with @p values (same count and shapes, e.g. another replica's or
  /// a parameter server's copy, on the same device type).
  /// @throws dsgd::error (errc::shape_mismatch) naming the first tensor that differs.
  void set_parameters(const std::vector<tensor<D>>& values) {
    if (values.size() != params_.size())
      throw error(errc::shape_mismatch, "set_parameters: " + std::to_string(values.size()) + " tensors for " +
                                            std::to_string(params_.size()));
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (values[i].shape() != params_[i].shape())
        throw error(errc::shape_mismatch, "set_parameters: " + names_[i] + " has shape " +
                                              params_[i].shape().to_string() + ", got " +
                                              values[i].shape().to_string());
    }
    for (std::size_t i = 0; i < values.size(); ++i)
      thrust::copy(device_.policy(), values[i].storage().begin(), values[i].storage().end(),
                   params_[i].storage().begin());
  }

  /// Copies the parameter values of @p other (a model of the same widths) into this one.
  void copy_parameters_from(const feed_forward& other) { set_parameters(other.params_); }

  /// Computes the mean loss over a batch and writes its gradient into gradients().
  /// @param images host pointer to @p batch rows of inputs() floats
  /// @param labels host pointer to @p batch labels in 0..outputs()-1
  /// @returns the mean softmax cross-entropy of the batch (before any update)
  /// @throws dsgd::error (errc::invalid_argument) for an empty batch or a label out of range.
  float forward_backward(const float* images, const std::int32_t* labels, std::size_t batch) {
    no_hooks none;
    return forward_backward(images, labels, batch, none);
  }

  /// forward_backward() that tells @p hooks when it first reads each layer's parameters (kernel,
  /// then bias, first layer first) and when each layer's gradients are final (last layer
  /// first), so that communication overlaps the compute (trainer::overlap).
  template <step_hooks Hooks>
  float forward_backward(const float* images, const std::int32_t* labels, std::size_t batch, Hooks& hooks) {
    const float* x = stage(images, labels, batch);
    forward(x, batch, hooks);
    const float loss = cross_entropy(batch, true);
    backward(x, batch, hooks);
    return loss;
  }

  /// @returns the mean loss over @p n examples (evaluated in batches), without touching gradients.
  float loss(const float* images, const std::int32_t* labels, std::size_t n) {
    return static_cast<float>(evaluate(images, labels, n).loss);
  }

  /// @returns the mean loss and accuracy over @p n examples, evaluated @p batch at a time.
  evaluation evaluate(const float* images, const std::int32_t* labels, std::size_t n, std::size_t batch = 1000) {
    if (n == 0 || batch == 0)
      throw error(errc::invalid_argument, "evaluate: need n > 0 and batch > 0, got n = " + std::to_string(n) +
                                              ", batch = " + std::to_string(batch));
    double loss_sum = 0;
    std::size_t correct = 0;
    for (std::size_t at = 0; at < n; at += batch) {
      const std::size_t b = std::min(batch, n - at);
      const float* x = stage(images + at * inputs(), labels + at, b);
      no_hooks none;
      forward(x, b, none);
      loss_sum += static_cast<double>(cross_entropy(b, false)) * static_cast<double>(b);
      const float* z = raw(acts_.back());
      correct += thrust::transform_reduce(
          device_.policy(), thrust::counting_iterator<std::size_t>(0), thrust::counting_iterator<std::size_t>(b),
          kernels::correct_prediction{z, label_ptr_, outputs()}, std::size_t{0}, thrust::plus<std::size_t>());
    }
    return {loss_sum / static_cast<double>(n), static_cast<double>(correct) / static_cast<double>(n)};
  }

  /// @returns the fraction of @p n examples classified correctly.
  double accuracy(const float* images, const std::int32_t* labels, std::size_t n) {
    return evaluate(images, labels, n).accuracy;
  }

  /// @returns the accuracy over a dataset with `images`, `labels` vectors and `size()`
  /// (data::fashion_mnist::dataset).
  template <class Dataset>
  requires requires(const Dataset& d) {
    d.images.data();
    d.labels.data();
    d.size();
  }
  double accuracy(const Dataset& d) { return accuracy(d.images.data(), d.labels.data(), d.size()); }

 private:
  static std::uint64_t mix(std::uint64_t seed, std::uint64_t layer) noexcept {
    // splitmix64: nearby seeds and layers give unrelated weight streams.
    std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (layer + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  static float* raw(vector_type& v) noexcept { return thrust::raw_pointer_cast(v.data()); }

  /// Checks the labels on the host, makes room for @p batch rows and brings the batch onto the
  /// device; @returns the device pointer to the inputs.
  const float* stage(const float* images, const std::int32_t* labels, std::size_t batch) {
    if (batch == 0) throw error(errc::invalid_argument, "feed_forward: empty batch");
    for (std::size_t i = 0; i < batch; ++i) {
      if (labels[i] < 0 || static_cast<std::size_t>(labels[i]) >= outputs())
        throw error(errc::invalid_argument, "feed_forward: label " + std::to_string(labels[i]) + " at batch position " +
                                                std::to_string(i) + " is not in 0.." + std::to_string(outputs() - 1));
    }
    if (batch > capacity_) {
      capacity_ = batch;
      for (std::size_t l = 0; l < layers(); ++l) {
        acts_[l].resize(batch * widths_[l + 1]);
        deltas_[l].resize(batch * widths_[l + 1]);
      }
      losses_.resize(batch);
      ones_.resize(batch);
      thrust::fill(device_.policy(), ones_.begin(), ones_.end(), 1.f);
      if constexpr (!D::is_host) {
        input_.resize(batch * inputs());
        labels_.resize(batch);
      }
    }
    if constexpr (D::is_host) {
      label_ptr_ = labels;
      return images;
    } else {
      thrust::copy(images, images + batch * inputs(), input_.begin());
      thrust::copy(labels, labels + batch, labels_.begin());
      label_ptr_ = thrust::raw_pointer_cast(labels_.data());
      return thrust::raw_pointer_cast(input_.data());
    }
  }

  template <class Hooks>
  void forward(const float* x, std::size_t batch, Hooks& hooks) {
    const int m = static_cast<int>(batch);
    const float* in = x;
    for (std::size_t l = 0; l < layers(); ++l) {
      const int k = static_cast<int>(widths_[l]), n = static_cast<int>(widths_[l + 1]);
      hooks.parameters_needed(2 * l);
      hooks.parameters_needed(2 * l + 1);
      float* z = raw(acts_[l]);
      blas<D>::gemm(device_, false, false, m, n, k, 1.f, in, k, params_[2 * l].data(), n, 0.f, z, n);
      const auto elements = batch * widths_[l + 1];
      const float* b = params_[2 * l + 1].data();
      if (l + 1 < layers()) {
        thrust::for_each_n(device_.policy(), thrust::counting_iterator<std::size_t>(0), elements,
                           kernels::bias_activation<true>{z, b, widths_[l + 1]});
      } else {
        thrust::for_each_n(device_.policy(), thrust::counting_iterator<std::size_t>(0), elements,
                           kernels::bias_activation<false>{z, b, widths_[l + 1]});
      }
      in = z;
    }
  }

  /// @returns the mean loss of the last forward(); with @p gradient, also writes its gradient
  /// with respect to the logits into deltas_.back().
  float cross_entropy(std::size_t batch, bool gradient) {
    thrust::for_each_n(device_.policy(), thrust::counting_iterator<std::size_t>(0), batch,
                       kernels::softmax_cross_entropy{raw(acts_.back()), label_ptr_, raw(losses_),
                                                      gradient ? raw(deltas_.back()) : nullptr, outputs(),
                                                      1.f / static_cast<float>(batch)});
    const float sum =
        thrust::reduce(device_.policy(), losses_.begin(), losses_.begin() + static_cast<std::ptrdiff_t>(batch), 0.f);
    return sum / static_cast<float>(batch);
  }

  template <class Hooks>
  void backward(const float* x, std::size_t batch, Hooks& hooks) {
    const int m = static_cast<int>(batch);
    for (std::size_t l = layers(); l-- > 0;) {
      const int k = static_cast<int>(widths_[l]), n = static_cast<int>(widths_[l + 1]);
      const float* in = l == 0 ? x : raw(acts_[l - 1]);
      const float* dz = raw(deltas_[l]);
      // dW = in^T dz (k x n); db = 1^T dz (a GEMM with a ones row keeps the sum on the BLAS).
      blas<D>::gemm(device_, true, false, k, n, m, 1.f, in, k, dz, n, 0.f, grads_[2 * l].data(), n);
      blas<D>::gemm(device_, false, false, 1, n, m, 1.f, raw(ones_), m, dz, n, 0.f, grads_[2 * l + 1].data(), n);
      hooks.gradient_ready(2 * l);
      hooks.gradient_ready(2 * l + 1);
      if (l == 0) break;
      // d(in) = dz W^T, then through the ReLU that produced `in`.
      float* din = raw(deltas_[l - 1]);
      blas<D>::gemm(device_, false, true, m, k, n, 1.f, dz, n, params_[2 * l].data(), n, 0.f, din, k);
      thrust::for_each_n(device_.policy(), thrust::counting_iterator<std::size_t>(0), batch * widths_[l],
                         kernels::relu_mask{din, raw(acts_[l - 1])});
    }
  }

  [[no_unique_address]] D device_;
  std::vector<std::size_t> widths_;
  std::vector<tensor<D>> params_, grads_;
  std::vector<std::string> names_;
  // Scratch for the largest batch seen so far: per-layer outputs (after the activation) and
  // their gradients, per-row losses, a row of ones, and device copies of the batch.
  std::size_t capacity_ = 0;
  std::vector<vector_type> acts_, deltas_;
  vector_type losses_, ones_, input_;
  typename D::template vector<std::int32_t> labels_;
  const std::int32_t* label_ptr_ = nullptr;
};

}  // namespace dsgd::model
