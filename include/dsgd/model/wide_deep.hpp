// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// model::wide_deep: Wide & Deep (Cheng et al. 2016, "Wide & Deep Learning for Recommender
/// Systems"), as TensorFlow 1's DNNLinearCombinedClassifier defines it, for examples of dense
/// features and hashed categorical ids. Its two embedding tables live on the ps tasks
/// (embedding::table_spec); this class is the arithmetic of one batch on the rows a worker pulled.
///
///     wide(x) = sum of w[k] over the example's wide keys: its ids, its crosses, a bias key
///     deep(x) = MLP([dense features, e[id_0], ..., e[id_F-1]])   (ReLU hidden layers, 1 output)
///     p(click) = sigmoid(wide(x) + deep(x)),  loss = mean sigmoid cross-entropy
///
/// w is a table of rows of 1 float (TF trains it with FTRL), e a table of rows of `dim` floats,
/// and the MLP's kernels and biases are the dense variables (Adagrad in TF).
///
/// @code
/// dsgd::model::wide_deep net({.dense_features = 13, .fields = 26, .dim = 16, .hidden = {256, 128}});
/// net.wide_keys(batch.keys, batch.size, wide_keys);            // ids, crosses and the bias key
/// const auto& dw = wide_dedup.run(wide_keys);   const auto& dd = deep_dedup.run(batch.keys);
/// pull_table(wide, dw.unique, wide_rows);        pull_table(deep, dd.unique, deep_rows);
/// float loss = net.forward_backward(examples, {wide_rows, dw.inverse}, {deep_rows, dd.inverse},
///                                   wide_grads, deep_grads);     // dense ones in net.gradients()
/// @endcode
#pragma once

#include <dsgd/detail/mix64.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/error.hpp>
#include <dsgd/model/blas.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/tensor/tensor.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::model {

/// The shape of a Wide & Deep model. validate() names the first bad field.
struct wide_deep_config {
  std::size_t dense_features = 13;  ///< numeric features per example (the deep part's input)
  std::size_t fields = 26;          ///< hashed categorical ids per example (both parts)
  /// Pairs of fields whose ids' pair is a wide key of its own (TF's crossed_column); the click
  /// stream's teacher has C6 x C9 and C14 x C17.
  std::vector<std::array<std::size_t, 2>> crosses = {{5, 8}, {13, 16}};
  std::size_t dim = 16;                          ///< floats per deep embedding row
  std::vector<std::size_t> hidden = {256, 128};  ///< the MLP's hidden widths (none: linear)
  std::uint64_t seed = 1;                        ///< the MLP's Glorot initialisation
  /// What the gradients are of: the batch's summed loss (TF1's canned estimators' default,
  /// `losses.Reduction.SUM`: each example moves its keys' rows as much in a batch of 512 as
  /// alone, which adaptive optimizers with an initial accumulator need) or its mean.
  enum class reduction { sum, mean } loss_reduction = reduction::sum;

  /// @returns the wide keys per example: the ids, the crosses and the bias key.
  std::size_t wide_keys() const noexcept { return fields + crosses.size() + 1; }
  /// @returns the MLP's input width: the dense features and the fields' embeddings.
  std::size_t deep_inputs() const noexcept { return dense_features + fields * dim; }

  /// @throws dsgd::error (errc::invalid_argument) naming the first bad field
  void validate() const {
    const auto bad = [](const std::string& what) {
      throw error(errc::invalid_argument, "model::wide_deep_config: " + what);
    };
    if (fields == 0) bad("fields must be at least 1");
    if (dim == 0) bad("dim must be at least 1");
    for (std::size_t c = 0; c < crosses.size(); ++c)
      for (std::size_t f : crosses[c])
        if (f >= fields)
          bad("crosses[" + std::to_string(c) + "] names field " + std::to_string(f) + " of " + std::to_string(fields));
    for (std::size_t l = 0; l < hidden.size(); ++l)
      if (hidden[l] == 0) bad("hidden[" + std::to_string(l) + "] is 0; every hidden width must be positive");
  }
};

/// Wide & Deep over the rows a worker pulled: see the file comment for the model.
///
/// The dense variables, in creation order: `dnn/hiddenlayer_<l>/kernel` (in x out, Glorot
/// uniform) and `dnn/hiddenlayer_<l>/bias` (zeros) per hidden layer, then `dnn/logits/kernel`
/// and `dnn/logits/bias` (TF's names). gradients() has the same shapes and order.
///
/// A step's tables come as lookups: the unique keys' rows (a deduplicator's unique order) and
/// each position's index into them (its inverse): positions are example-major, wide_keys() of
/// them per example for the wide table and `fields` for the deep one.
///
/// Thread safety: one object per thread (it owns its activations).
class wide_deep {
 public:
  using device_type = device::cpu;

  /// One batch: row-major host arrays of `size` examples.
  struct examples {
    std::size_t size = 0;
    std::span<const float> dense;        ///< size x dense_features
    std::span<const std::uint64_t> ids;  ///< size x fields
    std::span<const float> labels;       ///< size, 0 or 1 (unused by predict())
  };
  /// One table's rows for a batch: rows of the unique keys and each position's row index.
  struct lookup {
    std::span<const float> rows;             ///< unique keys x row width
    std::span<const std::uint32_t> inverse;  ///< per position: its row
  };

  /// The key every example has in the wide table: the linear part's bias, trained by its
  /// optimizer like any weight (TF's linear model trains its bias with FTRL too).
  static constexpr std::uint64_t bias_key = 0x7769646562696173ull;  // "widebias"

  /// @throws dsgd::error (errc::invalid_argument) as wide_deep_config::validate()
  explicit wide_deep(wide_deep_config config) : config_(std::move(config)) {
    config_.validate();
    widths_.push_back(config_.deep_inputs());
    widths_.insert(widths_.end(), config_.hidden.begin(), config_.hidden.end());
    widths_.push_back(1);
    for (std::size_t l = 0; l + 1 < widths_.size(); ++l) {
      const std::size_t in = widths_[l], out = widths_[l + 1];
      const std::string name =
          l + 2 == widths_.size() ? std::string("dnn/logits") : "dnn/hiddenlayer_" + std::to_string(l);
      params_.emplace_back(device::cpu{}, dsgd::shape{in, out},
                           init::glorot_uniform{in, out, dsgd::detail::mix64(config_.seed + l)});
      params_.emplace_back(device::cpu{}, dsgd::shape{out});
      grads_.emplace_back(device::cpu{}, dsgd::shape{in, out});
      grads_.emplace_back(device::cpu{}, dsgd::shape{out});
      names_.push_back(name + "/kernel");
      names_.push_back(name + "/bias");
    }
    acts_.resize(layers());
    deltas_.resize(layers());
  }

  const wide_deep_config& config() const noexcept { return config_; }
  std::vector<tensor<device::cpu>>& parameters() noexcept { return params_; }
  const std::vector<tensor<device::cpu>>& parameters() const noexcept { return params_; }
  std::vector<tensor<device::cpu>>& gradients() noexcept { return grads_; }
  const std::vector<std::string>& names() const noexcept { return names_; }
  /// @returns the dense parameters' element count.
  std::size_t parameter_count() const noexcept {
    std::size_t n = 0;
    for (const auto& p : params_) n += p.size();
    return n;
  }

  /// The wide keys of @p n examples whose ids are @p ids (n x fields) into @p out (n x
  /// wide_keys(), example-major): each example's ids, then its crosses (a 64-bit mix of the
  /// pair and the cross's number), then bias_key.
  /// @throws dsgd::error (errc::shape_mismatch) when ids.size() != n x fields
  void wide_keys(std::span<const std::uint64_t> ids, std::size_t n, std::vector<std::uint64_t>& out) const {
    check_size("wide_keys", "ids", ids.size(), n * config_.fields);
    const std::size_t f = config_.fields, w = config_.wide_keys();
    out.resize(n * w);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t* id = ids.data() + i * f;
      std::uint64_t* k = out.data() + i * w;
      std::copy_n(id, f, k);
      for (std::size_t c = 0; c < config_.crosses.size(); ++c) {
        const auto [a, b] = config_.crosses[c];
        k[f + c] = dsgd::detail::mix64(id[a] ^ std::rotl(id[b], 23) ^ dsgd::detail::mix64(0x63726f7373ull + c));
      }
      k[w - 1] = bias_key;
    }
  }

  /// One training step's forward and backward pass over @p b: @returns the mean sigmoid
  /// cross-entropy; writes the dense gradients into gradients(), the wide table's gradient rows
  /// into @p wide_grads (as many as @p wide's rows, 1 float each) and the deep table's into
  /// @p deep_grads (as many as @p deep's rows, dim floats each): the gradients of the batch's
  /// summed or mean loss (wide_deep_config::loss_reduction).
  /// @throws dsgd::error errc::shape_mismatch naming an array of the wrong size,
  ///         errc::invalid_argument naming a row index out of its lookup or a label not 0 or 1
  float forward_backward(const examples& b, lookup wide, lookup deep, std::span<float> wide_grads,
                         std::span<float> deep_grads) {
    check(b, wide, deep, true);
    check_size("forward_backward", "wide_grads", wide_grads.size(), wide.rows.size());
    check_size("forward_backward", "deep_grads", deep_grads.size(), deep.rows.size());
    forward(b, wide, deep);
    // d(loss)/d(logit) = sigmoid(z) - y, over n for the mean; the loss in its stable form.
    const std::size_t n = b.size;
    const float scale = config_.loss_reduction == wide_deep_config::reduction::mean ? 1.f / static_cast<float>(n) : 1.f;
    double loss = 0;
    float* dz = deltas_.back().data();
    for (std::size_t i = 0; i < n; ++i) {
      const float z = logits_[i], y = b.labels[i];
      loss += std::max(z, 0.f) - z * y + std::log1p(std::exp(-std::abs(z)));
      dz[i] = (sigmoid(z) - y) * scale;
    }
    // The wide part: each key's gradient is the sum of its examples' logit gradients.
    std::fill(wide_grads.begin(), wide_grads.end(), 0.f);
    const std::size_t w = config_.wide_keys();
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t k = 0; k < w; ++k) wide_grads[wide.inverse[i * w + k]] += dz[i];
    backward(n);
    // The deep part's embeddings: each field's slice of the input's gradient, summed per row.
    std::fill(deep_grads.begin(), deep_grads.end(), 0.f);
    const std::size_t in = widths_.front(), d = config_.dim, f = config_.fields, dense = config_.dense_features;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < f; ++j) {
        const float* g = input_grad_.data() + i * in + dense + j * d;
        float* e = deep_grads.data() + std::size_t{deep.inverse[i * f + j]} * d;
        for (std::size_t c = 0; c < d; ++c) e[c] += g[c];
      }
    return static_cast<float>(loss / static_cast<double>(n));
  }

  /// The logits (scores before the sigmoid) of @p b's examples into @p logits (b.size floats);
  /// labels are not read.
  /// @throws dsgd::error as forward_backward()
  void predict(const examples& b, lookup wide, lookup deep, std::span<float> logits) {
    check(b, wide, deep, false);
    check_size("predict", "logits", logits.size(), b.size);
    forward(b, wide, deep);
    std::copy_n(logits_.data(), b.size, logits.begin());
  }

  /// @returns 1 / (1 + e^-z).
  static float sigmoid(float z) noexcept { return 1.f / (1.f + std::exp(-z)); }

 private:
  std::size_t layers() const noexcept { return widths_.size() - 1; }

  static void check_size(std::string_view where, std::string_view what, std::size_t size, std::size_t expected) {
    if (size != expected)
      throw error(errc::shape_mismatch, "model::wide_deep::" + std::string(where) + ": " + std::string(what) +
                                            " holds " + std::to_string(size) + " values; expected " +
                                            std::to_string(expected));
  }
  static void check_rows(std::string_view what, const lookup& l, std::size_t width) {
    if (l.rows.size() % width != 0)
      throw error(errc::shape_mismatch, "model::wide_deep: the " + std::string(what) + " rows hold " +
                                            std::to_string(l.rows.size()) + " floats, not a multiple of " +
                                            std::to_string(width));
    const std::size_t rows = l.rows.size() / width;
    for (std::size_t i = 0; i < l.inverse.size(); ++i)
      if (l.inverse[i] >= rows)
        throw error(errc::invalid_argument, "model::wide_deep: the " + std::string(what) + " lookup's position " +
                                                std::to_string(i) + " names row " + std::to_string(l.inverse[i]) +
                                                " of " + std::to_string(rows));
  }
  void check(const examples& b, const lookup& wide, const lookup& deep, bool labels) const {
    if (b.size == 0) throw error(errc::invalid_argument, "model::wide_deep: an empty batch");
    check_size("examples", "dense", b.dense.size(), b.size * config_.dense_features);
    check_size("examples", "ids", b.ids.size(), b.size * config_.fields);
    check_size("examples", "the wide lookup's inverse", wide.inverse.size(), b.size * config_.wide_keys());
    check_size("examples", "the deep lookup's inverse", deep.inverse.size(), b.size * config_.fields);
    check_rows("wide", wide, 1);
    check_rows("deep", deep, config_.dim);
    if (!labels) return;
    check_size("examples", "labels", b.labels.size(), b.size);
    for (std::size_t i = 0; i < b.size; ++i)
      if (b.labels[i] != 0.f && b.labels[i] != 1.f)
        throw error(errc::invalid_argument, "model::wide_deep: label " + std::to_string(i) + " is " +
                                                std::to_string(b.labels[i]) + "; expected 0 or 1");
  }

  // The MLP's input (dense features, then the fields' rows), its layers, and the wide sums.
  void forward(const examples& b, const lookup& wide, const lookup& deep) {
    const std::size_t n = b.size, in = widths_.front(), d = config_.dim, f = config_.fields,
                      dense = config_.dense_features;
    if (n > capacity_) {
      capacity_ = n;
      input_.resize(n * in);
      input_grad_.resize(n * in);
      ones_.assign(n, 1.f);
      logits_.resize(n);
      for (std::size_t l = 0; l < layers(); ++l) {
        acts_[l].resize(n * widths_[l + 1]);
        deltas_[l].resize(n * widths_[l + 1]);
      }
    }
    for (std::size_t i = 0; i < n; ++i) {
      float* x = input_.data() + i * in;
      std::copy_n(b.dense.data() + i * dense, dense, x);
      for (std::size_t j = 0; j < f; ++j)
        std::copy_n(deep.rows.data() + std::size_t{deep.inverse[i * f + j]} * d, d, x + dense + j * d);
    }
    const int m = static_cast<int>(n);
    const float* x = input_.data();
    for (std::size_t l = 0; l < layers(); ++l) {
      const int k = static_cast<int>(widths_[l]), o = static_cast<int>(widths_[l + 1]);
      float* z = acts_[l].data();
      const float* bias = params_[2 * l + 1].data();
      for (std::size_t i = 0; i < n; ++i) std::copy_n(bias, o, z + i * o);  // C = bias, then += x W
      blas<device::cpu>::gemm(device::cpu{}, false, false, m, o, k, 1.f, x, k, params_[2 * l].data(), o, 1.f, z, o);
      if (l + 1 < layers())
        for (std::size_t e = 0; e < n * std::size_t(o); ++e) z[e] = z[e] > 0.f ? z[e] : 0.f;
      x = z;
    }
    const std::size_t w = config_.wide_keys();
    for (std::size_t i = 0; i < n; ++i) {
      float s = acts_.back()[i];
      for (std::size_t k = 0; k < w; ++k) s += wide.rows[wide.inverse[i * w + k]];
      logits_[i] = s;
    }
  }

  // From deltas_.back() (the logits' gradient) to the dense gradients and input_grad_.
  void backward(std::size_t n) {
    const int m = static_cast<int>(n);
    for (std::size_t l = layers(); l-- > 0;) {
      const int k = static_cast<int>(widths_[l]), o = static_cast<int>(widths_[l + 1]);
      const float* in = l == 0 ? input_.data() : acts_[l - 1].data();
      const float* dz = deltas_[l].data();
      blas<device::cpu>::gemm(device::cpu{}, true, false, k, o, m, 1.f, in, k, dz, o, 0.f, grads_[2 * l].data(), o);
      blas<device::cpu>::gemm(device::cpu{}, false, false, 1, o, m, 1.f, ones_.data(), m, dz, o, 0.f,
                              grads_[2 * l + 1].data(), o);
      float* din = l == 0 ? input_grad_.data() : deltas_[l - 1].data();
      blas<device::cpu>::gemm(device::cpu{}, false, true, m, k, o, 1.f, dz, o, params_[2 * l].data(), o, 0.f, din, k);
      if (l == 0) break;
      const float* a = acts_[l - 1].data();  // through the ReLU that made `in`
      for (std::size_t e = 0; e < n * std::size_t(k); ++e)
        if (!(a[e] > 0.f)) din[e] = 0.f;
    }
  }

  wide_deep_config config_;
  std::vector<std::size_t> widths_;  // deep_inputs(), hidden..., 1
  std::vector<tensor<device::cpu>> params_, grads_;
  std::vector<std::string> names_;
  // Scratch for the largest batch so far.
  std::size_t capacity_ = 0;
  std::vector<float> input_, input_grad_, ones_, logits_;
  std::vector<std::vector<float>> acts_, deltas_;
};

}  // namespace dsgd::model
