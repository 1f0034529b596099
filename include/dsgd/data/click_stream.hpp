// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// data::click_stream: an endless, seeded, synthetic click log in the schema of Criteo's
/// display-ads data (13 dense counts, 26 categorical ids as hashed 64-bit keys, a 0/1 click),
/// whose ids follow per-feature Zipf laws, whose vocabulary grows with time, and whose labels
/// come from a hidden teacher whose click probability is handed out with every example, so the
/// best AUC a model can reach on a held-out split is known. docs/embeddings.md describes the
/// schema, the cardinalities, the drift and the teacher.
///
/// @code
/// dsgd::data::click_stream train({.seed = 7, .batch = 4096, .shard = k, .shards = workers});
/// const auto& b = train.next();   // b.dense: 4096 x 13, b.keys: 4096 x 26, b.labels: 4096
/// dsgd::data::click_stream test({.seed = 7, .part = dsgd::data::click_stream::split::test,
///                                .batch = 100000, .start = train_examples});
/// const auto& t = test.next();
/// double best = dsgd::data::auc(t.probabilities, t.labels);  // the teacher's AUC (data/auc.hpp)
/// @endcode
#pragma once

#include <dsgd/data/ctr_batch.hpp>
#include <dsgd/detail/mix64.hpp>
#include <dsgd/detail/validate.hpp>
#include <dsgd/error.hpp>

#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::data {

namespace detail {

// Every random number and every hash below comes from these few functions, written out here
// rather than taken from <random>, whose distributions differ between standard libraries: the
// stream must be the same on every machine.

/// The splitmix64 finaliser (a bijection of 64-bit words).
using dsgd::detail::mix64;

/// Its inverse.
using dsgd::detail::unmix64;

/// splitmix64 (Steele, Lea and Flood 2014) started at @p state: one example's random numbers.
struct splitmix64 {
  std::uint64_t state;
  std::uint64_t next() noexcept { return mix64(state += 0x9e3779b97f4a7c15ull); }
  /// @returns a uniform double in [0, 1) with 53 random bits.
  double uniform() noexcept { return static_cast<double>(static_cast<std::int64_t>(next() >> 11)) * 0x1.0p-53; }
};

/// @returns an approximately standard normal number made of @p h (Irwin-Hall: the sum of four
/// 16-bit uniforms, centred and scaled; within 3.47 standard deviations).
constexpr double gauss_of(std::uint64_t h) noexcept {
  const double sum = static_cast<double>((h & 0xffff) + ((h >> 16) & 0xffff) + ((h >> 32) & 0xffff) + (h >> 48));
  return (sum - 2 * 65535.5) * (1.7320508075688772 / 65536.0);
}

// log and exp of doubles to about 1 ulp, from + - * / alone: libm's may differ between
// machines in the last bit, which could move a Zipf draw across a rank boundary.
inline constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;

/// Natural log of a positive, normal, finite @p x.
inline double log(double x) noexcept {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  int e = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  double m = std::bit_cast<double>((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull);  // [1, 2)
  if (m > 1.4142135623730951) {
    m *= 0.5;
    ++e;
  }
  // log m = 2 atanh(z), z = (m - 1) / (m + 1), |z| <= 0.1716: ten terms of the odd series.
  const double z = (m - 1) / (m + 1), z2 = z * z;
  double p = 1.0 / 19;
  p = p * z2 + 1.0 / 17;
  p = p * z2 + 1.0 / 15;
  p = p * z2 + 1.0 / 13;
  p = p * z2 + 1.0 / 11;
  p = p * z2 + 1.0 / 9;
  p = p * z2 + 1.0 / 7;
  p = p * z2 + 1.0 / 5;
  p = p * z2 + 1.0 / 3;
  const double de = e;
  return de * ln2_hi + (2 * z + 2 * z * z2 * p + de * ln2_lo);
}

/// Natural log of @p x >= 1 to float precision (relative error below 1e-7): for outputs that
/// are floats anyway.
inline double log_float(double x) noexcept {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  int e = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  double m = std::bit_cast<double>((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
  if (m > 1.4142135623730951) {
    m *= 0.5;
    ++e;
  }
  const double z = (m - 1) / (m + 1), z2 = z * z;
  const double p = ((1.0 / 9 * z2 + 1.0 / 7) * z2 + 1.0 / 5) * z2 + 1.0 / 3;
  return e * 0.6931471805599453 + (2 * z + 2 * z * z2 * p);
}

/// e to the power @p x, for |x| <= 700.
inline double exp(double x) noexcept {
  // Truncation toward zero is one instruction on every target; std::floor is a call on
  // baseline x86-64.
  const double k = static_cast<double>(static_cast<std::int64_t>(x * 1.4426950408889634 + (x < 0 ? -0.5 : 0.5)));
  const double r = (x - k * ln2_hi) - k * ln2_lo;  // |r| <= 0.347: Taylor to degree 13
  double p = 1.0 / 6227020800;
  p = p * r + 1.0 / 479001600;
  p = p * r + 1.0 / 39916800;
  p = p * r + 1.0 / 3628800;
  p = p * r + 1.0 / 362880;
  p = p * r + 1.0 / 40320;
  p = p * r + 1.0 / 5040;
  p = p * r + 1.0 / 720;
  p = p * r + 1.0 / 120;
  p = p * r + 1.0 / 24;
  p = p * r + 1.0 / 6;
  p = p * r + 0.5;
  p = p * r + 1;
  p = p * r + 1;
  return p * std::bit_cast<double>(static_cast<std::uint64_t>(static_cast<std::int64_t>(k) + 1023) << 52);
}

/// Zipf's law on ranks 1..n, P(k) proportional to k^-s (s > 1): the first head_ranks ranks from
/// a table (an integer compare per draw), the rest by rejection-inversion (Hoermann and
/// Derflinger 1996, "Rejection-inversion to generate variates from monotone discrete
/// distributions"; O(1) expected, about 1.0x draws per variate).
class zipf {
 public:
  static constexpr std::uint64_t head_ranks = 512;
  static constexpr int guide_bits = 12;

  zipf() = default;
  zipf(std::uint64_t n, double s) : n_(n), s_(s), a_(1 - s) {
    const std::uint64_t head = n < head_ranks ? n : head_ranks;
    std::vector<double> w(head);
    double head_sum = 0;
    for (std::uint64_t k = head; k >= 1; --k) head_sum += w[k - 1] = h(static_cast<double>(k));
    // The tail's weight by Euler-Maclaurin (error below 1e-12 of the total for k > 512).
    double tail_sum = 0;
    if (n > head) {
      const double lo = static_cast<double>(head + 1), hi = static_cast<double>(n);
      tail_sum = (big_h(hi) - big_h(lo)) + (h(lo) + h(hi)) / 2 + s_ * (h(lo) / lo - h(hi) / hi) / 12;
    }
    total_ = head_sum + tail_sum;
    thresholds_.resize(head);
    double cumulative = 0;
    for (std::uint64_t k = 0; k < head; ++k) {
      cumulative += w[k];
      const double c = cumulative / total_;
      thresholds_[k] =
          c >= 1 ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(std::ldexp(c, 64));
    }
    if (n == head) thresholds_.back() = std::numeric_limits<std::uint64_t>::max();
    head_end_ = thresholds_.back();
    last_ = static_cast<std::uint32_t>(head);
    guide_.resize(std::size_t{1} << guide_bits);
    std::uint32_t k = 0;
    for (std::size_t j = 0; j < guide_.size(); ++j) {
      const std::uint64_t bucket_start = static_cast<std::uint64_t>(j) << (64 - guide_bits);
      while (k + 1 < head && thresholds_[k] <= bucket_start) ++k;
      guide_[j] = k;
    }
    if (n > head) {
      tail_lo_ = static_cast<double>(head + 1);
      tail_hi_ = static_cast<double>(n);
      u_lo_ = big_h(tail_lo_ + 0.5) - h(tail_lo_);
      u_hi_ = big_h(tail_hi_ + 0.5);
      squeeze_ = n > head + 1 ? (tail_lo_ + 1) - big_h_inverse(big_h(tail_lo_ + 1.5) - h(tail_lo_ + 1)) : 1;
    }
  }

  /// @returns the number of ranks.
  std::uint64_t size() const noexcept { return n_; }
  /// @returns the exponent s.
  double exponent() const noexcept { return s_; }
  /// @returns P(rank == k) for k in 1..size().
  double probability(std::uint64_t k) const noexcept { return h(static_cast<double>(k)) / total_; }

  /// @returns a rank in 1..size(), drawn with @p rng.
  std::uint64_t operator()(splitmix64& rng) const noexcept {
    const std::uint64_t u = rng.next();
    if (u < head_end_ || n_ <= head_ranks) {
      // The guide table leaves at most a step or two, mostly none; steps made without branches
      // cost less than the mispredictions of a loop over a random count.
      std::uint32_t k = guide_[u >> (64 - guide_bits)];
      k += u >= thresholds_[k] && k + 1 < last_;
      while (u >= thresholds_[k] && k + 1 < last_) ++k;
      return k + 1;
    }
    for (;;) {
      const double v = u_hi_ + rng.uniform() * (u_lo_ - u_hi_);  // in (u_lo_, u_hi_]
      const double x = big_h_inverse(v);
      double k = static_cast<double>(static_cast<std::int64_t>(x + 0.5));  // x > 0: floor
      k = k < tail_lo_ ? tail_lo_ : (k > tail_hi_ ? tail_hi_ : k);
      if (k - x <= squeeze_ || v >= big_h(k + 0.5) - h(k)) return static_cast<std::uint64_t>(k);
    }
  }

 private:
  // h(x) = x^-s, its antiderivative H(x) = x^(1-s) / (1-s) and H's inverse.
  double h(double x) const noexcept { return detail::exp(-s_ * detail::log(x)); }
  double big_h(double x) const noexcept { return detail::exp(a_ * detail::log(x)) / a_; }
  double big_h_inverse(double y) const noexcept { return detail::exp(detail::log(a_ * y) / a_); }

  std::uint64_t n_ = 1;
  double s_ = 2, a_ = -1, total_ = 1;
  std::vector<std::uint64_t> thresholds_{std::numeric_limits<std::uint64_t>::max()};
  std::vector<std::uint32_t> guide_ = std::vector<std::uint32_t>(std::size_t{1} << guide_bits);
  std::uint64_t head_end_ = std::numeric_limits<std::uint64_t>::max();
  std::uint32_t last_ = 1;
  double tail_lo_ = 1, tail_hi_ = 1, u_lo_ = 0, u_hi_ = 0, squeeze_ = 1;
};

}  // namespace detail

/// A seeded, endless click log in Criteo's schema with a known teacher; see the file comment
/// and docs/embeddings.md.
///
/// Example i of a stream is a pure function of (options::seed, options::part, i): it is the same
/// every time, on every machine, whatever the batch size, shard or order of calls. Shard k of n
/// is examples start + k, start + k + n, start + k + 2n, ...: shards are disjoint and together
/// they are the unsharded stream. fill() is const and allocates nothing, so threads may fill
/// different ranges of one stream at once.
class click_stream {
 public:
  /// Integer features (Criteo's I1..I13) and categorical features (C1..C26) per example.
  static constexpr std::size_t dense_features = 13, categorical_features = 26;

  /// Cardinality of each categorical feature at options::cardinality_scale = 1: the number of
  /// distinct values per column of Criteo's Kaggle data, capped to [10, 10^6].
  static constexpr std::array<std::uint64_t, categorical_features> base_cardinalities = {
      1460, 583,   1000000, 1000000, 305,  24,   12517, 633,     10, 93145, 5683,   1000000, 3194,
      27,   14992, 1000000, 10,      5652, 2173, 10,    1000000, 18, 15,    286181, 105,     142572};

  /// Zipf exponent of each categorical feature: 1.05, 1.10, 1.15, 1.20, repeated.
  static constexpr std::array<double, categorical_features> zipf_exponents = {
      1.05, 1.10, 1.15, 1.20, 1.05, 1.10, 1.15, 1.20, 1.05, 1.10, 1.15, 1.20, 1.05,
      1.10, 1.15, 1.20, 1.05, 1.10, 1.15, 1.20, 1.05, 1.10, 1.15, 1.20, 1.05, 1.10};

  /// Standard deviation of the teacher's weight of an id of each feature: 0.20, 0.25, ...,
  /// 0.40, repeated.
  static constexpr std::array<double, categorical_features> teacher_scales = {
      0.20, 0.25, 0.30, 0.35, 0.40, 0.20, 0.25, 0.30, 0.35, 0.40, 0.20, 0.25, 0.30,
      0.35, 0.40, 0.20, 0.25, 0.30, 0.35, 0.40, 0.20, 0.25, 0.30, 0.35, 0.40, 0.20};

  /// Dense feature j is floor(c_j * (2^(G / alpha_j) * (1 + F) - 1)), G geometric (P(G = g) =
  /// 2^-(g+1), at most 32), F uniform in [0, 1): a count with a Pareto tail of index alpha_j.
  static constexpr std::array<double, dense_features> dense_scales = {1, 2, 4, 8, 1000, 20, 2, 5, 30, 1, 1, 3, 6};
  /// The tail index alpha_j of each dense feature.
  static constexpr std::array<double, dense_features> dense_tails = {1.5, 1.2, 2.0, 1.5, 1.1, 1.3, 1.5,
                                                                     2.0, 1.3, 3.0, 2.0, 1.5, 1.2};

  /// The teacher's pairwise interactions: each pair of categorical features whose ids' pair
  /// carries a weight of its own (C6 x C9 and C14 x C17).
  static constexpr std::array<std::array<std::size_t, 2>, 2> interactions = {{{5, 8}, {13, 16}}};
  /// Standard deviation of an interaction's weight.
  static constexpr double interaction_scale = 0.5;
  /// Standard deviation of a dense feature's weight (on log1p(count) - 1).
  static constexpr double dense_weight_scale = 0.05;

  /// Which stream of examples: the same world (ids, drift, teacher), other draws.
  enum class split : std::uint64_t { train = 0, test = 1 };

  /// What to generate. validate() says which field is wrong.
  struct options {
    std::uint64_t seed = 0;               ///< the world: keys, drift phases, teacher and draws
    split part = split::train;            ///< train or test draws of that world
    std::size_t batch = 4096;             ///< examples per next()
    std::size_t shard = 0;                ///< this worker's shard, < shards
    std::size_t shards = 1;               ///< number of disjoint shards
    std::uint64_t start = 0;              ///< index (time) of the first example
    double cardinality_scale = 1;         ///< multiplies base_cardinalities (rounded, at least 2)
    std::uint64_t drift_period = 100000;  ///< examples per drift step
    double drift_rate = 0.01;             ///< fraction of each feature's ranks that get new ids per step, in [0, 1]
    double teacher_scale = 1;             ///< multiplies every teacher weight (0: labels ignore the features)
    double bias = -2.5;                   ///< the teacher's bias logit

    /// @throws dsgd::error (errc::invalid_argument) naming the first bad field.
    void validate() const {
      constexpr std::string_view path = "click_stream::options";
      if (batch == 0) dsgd::detail::bad_option(path, "batch", "must be greater than 0");
      if (shards == 0) dsgd::detail::bad_option(path, "shards", "must be greater than 0");
      if (shard >= shards)
        dsgd::detail::bad_option(
            path, "shard", "must be less than shards (" + std::to_string(shards) + "), got " + std::to_string(shard));
      if (!(cardinality_scale > 0) || !std::isfinite(cardinality_scale))
        dsgd::detail::bad_option(path, "cardinality_scale", "must be greater than 0 and finite");
      if (cardinality_scale * 1e6 > 4294967296.0)
        dsgd::detail::bad_option(path, "cardinality_scale", "must keep every cardinality at most 2^32 (scale <= 4294)");
      if (drift_period == 0) dsgd::detail::bad_option(path, "drift_period", "must be greater than 0");
      if (!(drift_rate >= 0 && drift_rate <= 1))
        dsgd::detail::bad_option(path, "drift_rate", "must be in [0, 1] (a fraction of ranks per drift step)");
      if (!(teacher_scale >= 0) || !std::isfinite(teacher_scale))
        dsgd::detail::bad_option(path, "teacher_scale", "must be at least 0 and finite");
      if (!std::isfinite(bias)) dsgd::detail::bad_option(path, "bias", "must be finite");
    }
  };

  /// One batch in the layout a trainer reads: row-major, example r's features contiguous
  /// (dense_features log1p(count) floats, categorical_features hashed ids), with the teacher's
  /// click probabilities; data::ctr_batch, which a file of examples fills too.
  using batch = ctr_batch;

  /// What a key is made of (decode()).
  struct key_parts {
    std::size_t feature;       ///< 0..categorical_features-1
    std::uint64_t rank;        ///< 0 = the feature's most frequent id
    std::uint64_t generation;  ///< how often the rank got a new id, modulo 2^26
  };

  /// @throws dsgd::error (errc::invalid_argument) for bad options (options::validate()).
  explicit click_stream(const options& o) : options_((o.validate(), o)) {
    key_salt_ = detail::mix64(o.seed ^ 0x6b657973ull) & ~marker_bit;  // "keys"
    drift_salt_ = detail::mix64(o.seed ^ 0x6472696674ull);            // "drift"
    teacher_salt_ = detail::mix64(o.seed ^ 0x746561636865ull);        // "teache"
    stream_salt_ = detail::mix64(detail::mix64(o.seed ^ 0x647261777321ull) + static_cast<std::uint64_t>(o.part));
    for (std::size_t f = 0; f < categorical_features; ++f) {
      drift_salts_[f] = detail::mix64(drift_salt_ + f);
      const double scaled = std::round(static_cast<double>(base_cardinalities[f]) * o.cardinality_scale);
      cardinalities_[f] = scaled < 2 ? 2 : static_cast<std::uint64_t>(scaled);
      zipf_[f] = detail::zipf(cardinalities_[f], zipf_exponents[f]);
    }
    for (std::size_t j = 0; j < dense_features; ++j) {
      for (std::size_t g = 0; g < dense_powers; ++g)
        powers_[j][g] = dense_scales[j] * detail::exp(static_cast<double>(g) / dense_tails[j] * 0.6931471805599453);
      dense_weights_[j] = dense_weight_scale * detail::gauss_of(detail::mix64(teacher_salt_ + 0x64656e7365ull + j));
    }
  }

  /// @returns the options it was made with.
  const options& config() const noexcept { return options_; }
  /// @returns the number of ranks (distinct ids at one time) of categorical feature @p f.
  std::uint64_t cardinality(std::size_t f) const { return cardinalities_.at(f); }
  /// @returns P(rank == @p rank) of categorical feature @p f (rank 0 the most frequent).
  double rank_probability(std::size_t f, std::uint64_t rank) const { return zipf_.at(f).probability(rank + 1); }

  /// @returns the index (time) of this shard's @p position-th example.
  std::uint64_t example_index(std::uint64_t position) const noexcept {
    return options_.start + position * options_.shards + options_.shard;
  }

  /// @returns the generation of rank @p rank of feature @p f at example @p index:
  /// floor(index / drift_period * drift_rate + phase) with a phase in [0, 1) hashed from the
  /// seed, f and rank, so each rank gets a new id once every 1 / drift_rate drift steps, and a
  /// fraction drift_rate of the ranks in each step.
  std::uint64_t generation(std::size_t f, std::uint64_t rank, std::uint64_t index) const noexcept {
    return generation_at(f, rank, drift_of(index));
  }

  /// @returns the key of rank @p rank of feature @p f at example @p index: mix64 of the word
  /// (f << 59 | 1 << 58 | generation << 32 | rank) xor a salt of the seed. mix64 is a
  /// bijection, so distinct (f, rank, generation) never share a key, and no key is 0.
  std::uint64_t key(std::size_t f, std::uint64_t rank, std::uint64_t index) const noexcept {
    return key_at(f, rank, drift_of(index));
  }

  /// @returns the feature, rank and generation @p k was made of, or nothing when no
  /// (feature, rank < 2^32, generation) of this seed makes it.
  std::optional<key_parts> decode(std::uint64_t k) const noexcept {
    const std::uint64_t word = detail::unmix64(k) ^ key_salt_;
    const std::size_t f = static_cast<std::size_t>(word >> 59);
    if (!(word & marker_bit) || f >= categorical_features) return std::nullopt;
    return key_parts{f, word & 0xffffffffull, (word >> 32) & generation_mask};
  }

  /// @returns the teacher's weight of key @p k (feature @p f), a pure function of the seed and
  /// the key: teacher_scales[f] times a normal number hashed from them.
  double teacher_weight(std::size_t f, std::uint64_t k) const noexcept {
    return teacher_scales[f] * detail::gauss_of(detail::mix64(k ^ teacher_salt_));
  }

  /// Writes this shard's examples @p position .. @p position + @p count - 1 into the spans
  /// (row-major, as in batch). Allocates nothing.
  /// @throws dsgd::error (errc::shape_mismatch) when a span's size is not count times its width.
  void fill(std::uint64_t position, std::size_t count, std::span<float> dense, std::span<std::uint64_t> keys,
            std::span<float> labels, std::span<float> probabilities) const {
    if (dense.size() != count * dense_features || keys.size() != count * categorical_features ||
        labels.size() != count || probabilities.size() != count)
      throw error(errc::shape_mismatch,
                  "click_stream::fill: " + std::to_string(count) + " examples need spans of " +
                      std::to_string(count * dense_features) + ", " + std::to_string(count * categorical_features) +
                      ", " + std::to_string(count) + " and " + std::to_string(count) + ", got " +
                      std::to_string(dense.size()) + ", " + std::to_string(keys.size()) + ", " +
                      std::to_string(labels.size()) + " and " + std::to_string(probabilities.size()));
    for (std::size_t r = 0; r < count; ++r)
      one(example_index(position + r), &dense[r * dense_features], &keys[r * categorical_features], labels[r],
          probabilities[r]);
  }

  /// Fills @p out with this shard's examples @p position .. @p position + @p count - 1,
  /// resizing it to @p count (which allocates only when it grows).
  void fill(std::uint64_t position, std::size_t count, batch& out) const {
    out.resize(count, dense_features, categorical_features);
    out.first = example_index(position);
    fill(position, count, out.dense, out.keys, out.labels, out.probabilities);
  }

  /// @returns the next options::batch examples of this shard, in buffers this object owns and
  /// reuses: the reference stays valid, its contents change on the next call.
  const batch& next() {
    fill(position_, options_.batch, batch_);
    position_ += options_.batch;
    return batch_;
  }

  /// @returns how many examples of this shard next() has handed out (or seek() skipped).
  std::uint64_t position() const noexcept { return position_; }
  /// Makes the next next() start at this shard's @p position-th example.
  void seek(std::uint64_t position) noexcept { position_ = position; }

 private:
  static constexpr std::uint64_t marker_bit = std::uint64_t{1} << 58;
  static constexpr std::uint64_t generation_mask = (std::uint64_t{1} << 26) - 1;
  static constexpr std::size_t dense_powers = 33;

  static constexpr std::uint64_t pack(std::size_t f, std::uint64_t rank, std::uint64_t generation) noexcept {
    return static_cast<std::uint64_t>(f) << 59 | marker_bit | (generation & generation_mask) << 32 | rank;
  }

  // The drift steps made by example @p index times drift_rate (computed once per example: a
  // 64-bit division costs as much as a feature's key).
  double drift_of(std::uint64_t index) const noexcept {
    return static_cast<double>(index / options_.drift_period) * options_.drift_rate;
  }

  std::uint64_t generation_at(std::size_t f, std::uint64_t rank, double drift) const noexcept {
    if (options_.drift_rate == 0) return 0;
    // The phase is the fractional part of (rank + salt_f) times the golden ratio (a Weyl
    // sequence): equidistributed, so each step renews drift_rate of the ranks almost exactly.
    const std::uint64_t weyl = (rank + drift_salts_[f]) * 0x9e3779b97f4a7c15ull;
    const double phase = static_cast<double>(static_cast<std::int64_t>(weyl >> 11)) * 0x1.0p-53;
    // drift + phase is in [0, 2^63): the signed conversion is one instruction and, as the value
    // is not negative, truncation is floor.
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(drift + phase)) & generation_mask;
  }

  std::uint64_t key_at(std::size_t f, std::uint64_t rank, double drift) const noexcept {
    return detail::mix64(pack(f, rank, generation_at(f, rank, drift)) ^ key_salt_);
  }

  void one(std::uint64_t index, float* dense, std::uint64_t* keys, float& label, float& probability) const noexcept {
    detail::splitmix64 rng{detail::mix64(stream_salt_ ^ detail::mix64(index))};
    const double drift = drift_of(index);
    // Ranks first, then keys and weights: the second loop's iterations are independent of one
    // another and of the random numbers, so the processor overlaps them.
    std::array<std::uint64_t, categorical_features> ranks;
    for (std::size_t f = 0; f < categorical_features; ++f) ranks[f] = zipf_[f](rng) - 1;
    double features = 0, odd = 0;
    for (std::size_t f = 0; f < categorical_features; f += 2) {
      keys[f] = key_at(f, ranks[f], drift);
      keys[f + 1] = key_at(f + 1, ranks[f + 1], drift);
      features += teacher_weight(f, keys[f]);
      odd += teacher_weight(f + 1, keys[f + 1]);
    }
    for (const auto& [a, b] : interactions) {
      const std::uint64_t pair = keys[a] ^ std::rotl(keys[b], 23);
      features += interaction_scale * detail::gauss_of(detail::mix64(pair ^ teacher_salt_ ^ 0x70616972ull));
    }
    std::array<std::uint64_t, dense_features> words;
    for (auto& w : words) w = rng.next();
    for (std::size_t j = 0; j < dense_features; ++j) {
      const std::uint64_t w = words[j];
      const auto high = static_cast<std::uint32_t>(w >> 32);
      const int g = high == 0 ? 32 : std::countl_zero(high);
      const double fraction = static_cast<double>(static_cast<std::uint32_t>(w)) * 0x1.0p-32;
      // At most 1000 * 2^(32 / 1.1) < 2^63: the signed conversions (one instruction each) do.
      const double count =
          static_cast<double>(static_cast<std::int64_t>(powers_[j][g] * (1 + fraction) - dense_scales[j]));
      const double x = detail::log_float(count + 1);
      dense[j] = static_cast<float>(x);
      (j % 2 ? odd : features) += dense_weights_[j] * (x - 1);
    }
    features += odd;
    double logit = options_.bias + options_.teacher_scale * features;
    logit = logit < -40 ? -40 : (logit > 40 ? 40 : logit);
    const double p = 1 / (1 + detail::exp(-logit));
    probability = static_cast<float>(p);
    label = rng.uniform() < p ? 1.0f : 0.0f;
  }

  options options_;
  std::uint64_t key_salt_ = 0, drift_salt_ = 0, teacher_salt_ = 0, stream_salt_ = 0;
  std::array<std::uint64_t, categorical_features> cardinalities_{}, drift_salts_{};
  std::array<detail::zipf, categorical_features> zipf_;
  std::array<std::array<double, dense_powers>, dense_features> powers_{};
  std::array<double, dense_features> dense_weights_{};
  std::uint64_t position_ = 0;
  batch batch_;
};

}  // namespace dsgd::data
