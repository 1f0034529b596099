// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0

// dsgd-ctr's examples: a worker's training batches (its shard of the synthetic click stream, or
// of a .ctr file read in a loop, streamed: the file is never held in memory) and the chief's
// test set (the stream's test split after the training examples, or a .ctr file), read a batch
// at a time either way.
#pragma once

#include "options.hpp"

#include <dsgd/data/click_stream.hpp>
#include <dsgd/data/ctr_batch.hpp>
#include <dsgd/data/ctr_file.hpp>

#include <cstdint>
#include <optional>

namespace dsgd_ctr {

using dsgd::data::click_stream;

/// The shape of the examples of @p s: dense features and fields per example.
struct example_shape {
  std::size_t dense_features = 0, fields = 0;
  bool teacher = false;  // the examples carry the teacher's click probability (the stream; a flagged file)
};
inline example_shape shape_of(const settings& s) {
  if (s.train.empty()) return {click_stream::dense_features, click_stream::categorical_features, true};
  const auto train = dsgd::data::read_ctr_file_header(s.train), test = dsgd::data::read_ctr_file_header(s.test);
  if (train.dense_features != test.dense_features || train.fields != test.fields)
    throw dsgd::error(dsgd::errc::invalid_argument,
                      "--train " + s.train + " has " + std::to_string(train.dense_features) + " dense features and " +
                          std::to_string(train.fields) + " fields per example, --test " + s.test + " " +
                          std::to_string(test.dense_features) + " and " + std::to_string(test.fields));
  return {train.dense_features, train.fields, test.has_probabilities()};
}

/// Training examples over all workers that --examples or --epochs ask for.
inline std::uint64_t training_examples(const settings& s) {
  if (s.examples > 0) return s.examples;
  if (s.train.empty()) return 1'000'000;
  return s.epochs * dsgd::data::read_ctr_file_header(s.train).examples;
}

/// A worker's training batches: shard @p shard of @p shards, from its @p skip-th example on (a
/// job resumed from a checkpoint goes on about where it stopped).
class training_batches {
 public:
  training_batches(const settings& s, std::size_t shard, std::size_t shards, std::uint64_t skip) {
    if (s.train.empty()) {
      stream_.emplace(click_stream::options{.seed = s.data_seed,
                                            .batch = s.batch,
                                            .shard = shard,
                                            .shards = shards,
                                            .cardinality_scale = s.scale,
                                            .drift_rate = s.drift});
      stream_->seek(skip);
    } else {
      file_.emplace(dsgd::data::ctr_file_reader::options{
          .path = s.train, .batch = s.batch, .shard = shard, .shards = shards, .loop = true, .first = skip});
    }
  }
  const dsgd::data::ctr_batch& next() { return stream_ ? stream_->next() : file_->next(); }

 private:
  std::optional<click_stream> stream_;
  std::optional<dsgd::data::ctr_file_reader> file_;
};

/// The chief's test examples, a batch at a time: --eval of them (a file's every one with 0).
class test_batches {
 public:
  /// @p trained: the training examples, after which the stream's test split is drawn (its ids
  /// drift with time).
  test_batches(const settings& s, std::uint64_t trained) : left_(s.eval) {
    constexpr std::size_t batch = 4096;
    if (s.test.empty()) {
      stream_.emplace(click_stream::options{.seed = s.data_seed,
                                            .part = click_stream::split::test,
                                            .batch = batch,
                                            .start = trained,
                                            .cardinality_scale = s.scale,
                                            .drift_rate = s.drift});
    } else {
      file_.emplace(dsgd::data::ctr_file_reader::options{.path = s.test, .batch = batch});
      if (left_ == 0 || left_ > file_->examples()) left_ = file_->examples();
    }
  }
  /// @returns the next batch, of size 0 after the last.
  const dsgd::data::ctr_batch& next() {
    const auto& b = stream_ ? stream_->next() : file_->next();
    last_ = b;  // a copy, cut to what is left
    if (last_.size > left_) last_.resize(left_, last_.dense_features, last_.fields);
    left_ -= last_.size;
    return last_;
  }

 private:
  std::uint64_t left_;
  std::optional<click_stream> stream_;
  std::optional<dsgd::data::ctr_file_reader> file_;
  dsgd::data::ctr_batch last_;
};

}  // namespace dsgd_ctr
