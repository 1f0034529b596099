// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// The standard normal quantile on the central part of the distribution, written with + - * /,
/// sqrt and frexp only (all exact or correctly rounded by IEEE 754), so a truncated-normal
/// initial row has the same bits on every machine: libm's log, exp, sin and cos are not
/// specified to the last bit and differ between C libraries.
// IWYU pragma: private, include <dsgd/dsgd.hpp>
#pragma once

#include <array>
#include <cmath>

namespace dsgd::embedding::detail {

/// Natural logarithm of @p x > 0 (finite, normal) to within about 2 ulp: x = m 2^e with m in
/// [sqrt(1/2), sqrt(2)), log x = e log 2 + 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, by 13
/// terms of the atanh series (truncation below 1e-20).
inline double portable_log(double x) noexcept {
  int e = 0;
  double m = std::frexp(x, &e);  // exact: m in [0.5, 1)
  if (m < 0.70710678118654752440) {
    m *= 2;
    --e;
  }
  const double s = (m - 1) / (m + 1);
  const double s2 = s * s;
  double series = 1.0 / 25;
  for (int k = 11; k >= 0; --k) series = series * s2 + 1.0 / (2 * k + 1);
  constexpr double ln2_hi = 6.93147180369123816490e-01;  // ln 2 split so that e * ln2_hi is exact
  constexpr double ln2_lo = 1.90821492927058770002e-10;
  return e * ln2_hi + (e * ln2_lo + 2 * s * series);
}

/// P(Z <= -2) for a standard normal Z: the lower truncation point of truncated_normal.
inline constexpr double normal_cdf_minus_two = 0.022750131948179207200;

/// c[0] + c[1] r + ... + c[7] r^7 by Horner's rule.
inline double polynomial(const std::array<double, 8>& c, double r) noexcept {
  double y = c[7];
  for (int i = 6; i >= 0; --i) y = y * r + c[i];
  return y;
}

/// The standard normal quantile z with P(Z <= z) = @p p, for min(p, 1 - p) >= exp(-25) (about
/// 1.4e-11, |z| <= 6.6), by the rational approximations of Wichura's AS 241 (PPND16, relative
/// error about 1e-16) for its central (|p - 1/2| <= 0.425) and intermediate regions.
inline double normal_quantile(double p) noexcept {
  constexpr std::array<double, 8> a{3.3871328727963666080e+0, 1.3314166789178437745e+2, 1.9715909503065514427e+3,
                                    1.3731693765509461125e+4, 4.5921953931549871457e+4, 6.7265770927008700853e+4,
                                    3.3430575583588128105e+4, 2.5090809287301226727e+3};
  constexpr std::array<double, 8> b{1.0,
                                    4.2313330701600911252e+1,
                                    6.8718700749205790830e+2,
                                    5.3941960214247511077e+3,
                                    2.1213794301586595867e+4,
                                    3.9307895800092710610e+4,
                                    2.8729085735721942674e+4,
                                    5.2264952788528545610e+3};
  constexpr std::array<double, 8> c{1.42343711074968357734e+0, 4.63033784615654529590e+0, 5.76949722146069140550e+0,
                                    3.64784832476320460504e+0, 1.27045825245236838258e+0, 2.41780725177450611770e-1,
                                    2.27238449892691845833e-2, 7.74545014278341407640e-4};
  constexpr std::array<double, 8> d{1.0,
                                    2.05319162663775882187e+0,
                                    1.67638483018380384940e+0,
                                    6.89767334985100004550e-1,
                                    1.48103976427480074590e-1,
                                    1.51986665636164571966e-2,
                                    5.47593808499534494600e-4,
                                    1.05075007164441684324e-9};
  const double q = p - 0.5;
  if (std::abs(q) <= 0.425) {
    const double r = 0.180625 - q * q;
    return q * polynomial(a, r) / polynomial(b, r);
  }
  const double tail = q < 0 ? p : 1 - p;
  const double r = std::sqrt(-portable_log(tail)) - 1.6;  // <= 5 - 1.6 in the valid range
  const double z = polynomial(c, r) / polynomial(d, r);
  return q < 0 ? -z : z;
}

}  // namespace dsgd::embedding::detail
