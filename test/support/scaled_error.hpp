// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support: how far a device's results are from the host's, as the CUDA tests bound them
// (floats summed in another order differ in the last bits, more so for large values).
#pragma once

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace dsgd::test {

/// The largest |a - b| / (1 + |b|) over the elements; a and b must have the same size.
inline double max_scaled_error(const std::vector<float>& a, const std::vector<float>& b) {
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - b[i]) / (1.0 + std::abs(double(b[i]))));
  return worst;
}

}  // namespace dsgd::test
