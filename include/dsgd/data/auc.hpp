// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// data::auc: the exact area under the ROC curve of scores against 0/1 labels, the measure of
/// the click-through-rate job (docs/embeddings.md).
///
/// @code
/// std::vector<float> p = {0.1f, 0.4f, 0.35f, 0.8f}, y = {0, 0, 1, 1};
/// double a = dsgd::data::auc(p, y);  // 0.75
/// @endcode
#pragma once

#include <dsgd/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace dsgd::data {

namespace detail {

template <class Score>
double auc(std::span<const Score> scores, std::span<const float> labels) {
  if (scores.size() != labels.size())
    throw error(errc::shape_mismatch,
                "auc: " + std::to_string(scores.size()) + " scores but " + std::to_string(labels.size()) + " labels");
  std::vector<std::pair<Score, bool>> rows(scores.size());
  std::size_t positives = 0;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (std::isnan(scores[i])) throw error(errc::invalid_argument, "auc: score " + std::to_string(i) + " is NaN");
    if (labels[i] != 0.0f && labels[i] != 1.0f)
      throw error(errc::invalid_argument,
                  "auc: label " + std::to_string(i) + " is " + std::to_string(labels[i]) + ", not 0 or 1");
    const bool positive = labels[i] == 1.0f;
    positives += positive;
    rows[i] = {scores[i], positive};
  }
  const std::size_t negatives = rows.size() - positives;
  if (positives == 0 || negatives == 0)
    throw error(errc::invalid_argument, "auc: needs at least one positive and one negative label, got " +
                                            std::to_string(positives) + " and " + std::to_string(negatives));
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // Mann-Whitney: the positives' rank sum, tied scores sharing their mean rank, so a
  // positive tied with a negative counts half a correctly ordered pair.
  double rank_sum = 0;
  for (std::size_t begin = 0; begin < rows.size();) {
    std::size_t end = begin, tied_positives = 0;
    for (; end < rows.size() && rows[end].first == rows[begin].first; ++end) tied_positives += rows[end].second;
    const double mean_rank = 0.5 * (static_cast<double>(begin + 1) + static_cast<double>(end));
    rank_sum += mean_rank * static_cast<double>(tied_positives);
    begin = end;
  }
  const double p = static_cast<double>(positives), n = static_cast<double>(negatives);
  return (rank_sum - p * (p + 1) / 2) / (p * n);
}

}  // namespace detail

/// The area under the ROC curve of @p scores against @p labels: the probability that a random
/// positive scores above a random negative, ties counted half. Exact, O(n log n), O(n) memory.
/// @param scores any real scores (probabilities, logits); only their order matters.
/// @param labels 0 or 1 each, as many as scores.
/// @returns the AUC in [0, 1].
/// @throws dsgd::error errc::shape_mismatch for sizes that differ; errc::invalid_argument for a
/// NaN score, a label other than 0 or 1, or labels that are all 0 or all 1 (no AUC exists).
inline double auc(std::span<const float> scores, std::span<const float> labels) {
  return detail::auc<float>(scores, labels);
}

/// @copydoc auc(std::span<const float>, std::span<const float>)
inline double auc(std::span<const double> scores, std::span<const float> labels) {
  return detail::auc<double>(scores, labels);
}

}  // namespace dsgd::data
