// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// model::shuffled_batches: the training loop's data side. Draws mini-batches from a dataset in
/// host memory in a seeded random order, reshuffled every epoch, optionally from one shard of
/// the examples (worker k of n), and runs a step function over an epoch with timing.
#pragma once

#include <dsgd/error.hpp>

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace dsgd::model {

/// One mini-batch: host pointers to `size` contiguous rows of inputs and their labels.
struct batch_view {
  const float* images = nullptr;
  const std::int32_t* labels = nullptr;
  std::size_t size = 0;
};

/// What one epoch did.
struct epoch_stats {
  std::size_t epoch = 0;     ///< number of epochs completed, this one included
  std::size_t steps = 0;     ///< batches run
  std::size_t examples = 0;  ///< examples seen
  double mean_loss = 0;      ///< mean of the step losses, weighted by batch size
  double seconds = 0;        ///< wall time of the epoch

  /// @returns the training throughput of the epoch.
  double examples_per_second() const noexcept { return seconds > 0 ? examples / seconds : 0; }
};

/// Mini-batches over a host dataset in a random order that changes every epoch.
///
/// The order comes from a std::mt19937 seeded with `options::seed`, so the same seed gives the
/// same batches. With `shards = n`, `shard = k` uses examples k, k + n, k + 2n, ... only. The
/// last batch of an epoch may be smaller than `options::batch`.
///
/// @code
/// dsgd::model::shuffled_batches batches(train, {.batch = 64, .seed = 1});
/// auto stats = batches.run_epoch([&](const dsgd::model::batch_view& b) {
///   float loss = net.forward_backward(b.images, b.labels, b.size);
///   /* apply the gradients */
///   return loss;
/// });
/// @endcode
class shuffled_batches {
 public:
  /// Batch size, shuffling seed and the shard of the examples to draw from.
  struct options {
    std::size_t batch = 64;
    std::uint64_t seed = 0;
    std::size_t shard = 0;
    std::size_t shards = 1;
  };

  /// Batches over @p size examples of @p features floats at @p images (row-major) with
  /// @p labels. The pointers must stay valid while this object is used.
  /// @throws dsgd::error (errc::invalid_argument) for a zero batch, no shards, a shard out of
  /// range or a shard with no examples.
  shuffled_batches(const float* images, const std::int32_t* labels, std::size_t size, std::size_t features,
                   const options& o)
      : images_(images),
        labels_(labels),
        features_(features),
        batch_(o.batch),
        rng_(static_cast<std::mt19937::result_type>(o.seed)) {
    if (o.batch == 0 || o.shards == 0 || o.shard >= o.shards)
      throw error(errc::invalid_argument, "shuffled_batches: need batch > 0 and shard < shards, got batch " +
                                              std::to_string(o.batch) + ", shard " + std::to_string(o.shard) + " of " +
                                              std::to_string(o.shards));
    for (std::size_t i = o.shard; i < size; i += o.shards) order_.push_back(i);
    if (order_.empty())
      throw error(errc::invalid_argument, "shuffled_batches: shard " + std::to_string(o.shard) + " of " +
                                              std::to_string(o.shards) + " over " + std::to_string(size) +
                                              " examples is empty");
    std::shuffle(order_.begin(), order_.end(), rng_);
    x_.resize(batch_ * features_);
    y_.resize(batch_);
  }

  /// Batches over a dataset with `images`, `labels` vectors, `size()` and `features()`
  /// (data::fashion_mnist::dataset), which must outlive this object.
  template <class Dataset>
  requires requires(const Dataset& d) {
    { d.images.data() } -> std::convertible_to<const float*>;
    { d.labels.data() } -> std::convertible_to<const std::int32_t*>;
    d.size();
    d.features();
  }
  shuffled_batches(const Dataset& d, const options& o)
      : shuffled_batches(d.images.data(), d.labels.data(), d.size(), d.features(), o) {}

  /// @returns the number of examples this object draws from (its shard).
  std::size_t size() const noexcept { return order_.size(); }
  /// @returns the number of batches in one epoch.
  std::size_t batches_per_epoch() const noexcept { return (order_.size() + batch_ - 1) / batch_; }
  /// @returns the number of epochs completed.
  std::size_t epochs() const noexcept { return epochs_; }

  /// @returns the next batch, after reshuffling when the previous epoch is exhausted. The view
  /// stays valid until the next call.
  batch_view next() {
    if (cursor_ == order_.size()) {
      std::shuffle(order_.begin(), order_.end(), rng_);
      cursor_ = 0;
    }
    const std::size_t n = std::min(batch_, order_.size() - cursor_);
    for (std::size_t r = 0; r < n; ++r) {
      const std::size_t i = order_[cursor_ + r];
      std::copy_n(images_ + i * features_, features_, x_.begin() + r * features_);
      y_[r] = labels_[i];
    }
    cursor_ += n;
    if (cursor_ == order_.size()) ++epochs_;
    return {x_.data(), y_.data(), n};
  }

  /// Runs @p step on every remaining batch of the current epoch (a whole epoch when called at
  /// an epoch boundary). @p step takes a batch_view and returns the batch's mean loss.
  /// @returns the epoch's statistics.
  template <class Step>
  requires requires(Step& s, const batch_view& b) {
    { s(b) } -> std::convertible_to<double>;
  }
  epoch_stats run_epoch(Step&& step) {
    const auto start = std::chrono::steady_clock::now();
    epoch_stats stats;
    double loss_sum = 0;
    const std::size_t epoch = epochs_;
    do {
      const batch_view b = next();
      loss_sum += static_cast<double>(step(b)) * static_cast<double>(b.size);
      stats.examples += b.size;
      ++stats.steps;
    } while (epochs_ == epoch);
    stats.epoch = epochs_;
    stats.mean_loss = loss_sum / static_cast<double>(stats.examples);
    stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return stats;
  }

 private:
  const float* images_;
  const std::int32_t* labels_;
  std::size_t features_, batch_;
  std::mt19937 rng_;
  std::vector<std::size_t> order_;
  std::size_t cursor_ = 0, epochs_ = 0;
  std::vector<float> x_;
  std::vector<std::int32_t> y_;
};

}  // namespace dsgd::model
