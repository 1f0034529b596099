// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Initialisers for tensors: zeros, constant, uniform, normal and Glorot, all seeded.
///
/// Each initialiser is a value that fills a host span; tensor's constructor runs it on the host
/// and copies the result to the device, so the same seed gives bit-identical tensors on every
/// device and every platform (the generators below are specified exactly, unlike
/// std::uniform_real_distribution).
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <span>

namespace dsgd::init {

namespace detail {

/// A uniform float in [0, 1) from the top 24 bits of a 64-bit draw: exact and portable.
inline float unit_float(std::mt19937_64& g) { return static_cast<float>(g() >> 40) * 0x1.0p-24f; }

}  // namespace detail

/// Every element 0.
struct zeros {
  template <class T>
  void operator()(std::span<T> out) const {
    for (auto& x : out) x = T{};
  }
};

/// Every element @c value.
struct constant {
  float value = 0.f;
  template <class T>
  void operator()(std::span<T> out) const {
    for (auto& x : out) x = static_cast<T>(value);
  }
};

/// Independent draws from U[lo, hi).
struct uniform {
  float lo = -1.f, hi = 1.f;
  std::uint64_t seed = 0;
  template <class T>
  void operator()(std::span<T> out) const {
    std::mt19937_64 g(seed);
    for (auto& x : out) x = static_cast<T>(lo + (hi - lo) * detail::unit_float(g));
  }
};

/// Independent draws from N(mean, stddev^2) by the Box-Muller transform.
struct normal {
  float mean = 0.f, stddev = 1.f;
  std::uint64_t seed = 0;
  template <class T>
  void operator()(std::span<T> out) const {
    std::mt19937_64 g(seed);
    for (std::size_t i = 0; i < out.size(); i += 2) {
      float u1 = 1.f - detail::unit_float(g);  // (0, 1]: log(u1) is finite
      float u2 = detail::unit_float(g);
      float r = std::sqrt(-2.f * std::log(u1));
      float a = 2.f * std::numbers::pi_v<float> * u2;
      out[i] = static_cast<T>(mean + stddev * r * std::cos(a));
      if (i + 1 < out.size()) out[i + 1] = static_cast<T>(mean + stddev * r * std::sin(a));
    }
  }
};

/// Glorot (Xavier) uniform for a fan_in x fan_out weight: U[-l, l), l = sqrt(6 / (in + out)).
struct glorot_uniform {
  std::size_t fan_in = 1, fan_out = 1;
  std::uint64_t seed = 0;
  template <class T>
  void operator()(std::span<T> out) const {
    float l = std::sqrt(6.f / static_cast<float>(fan_in + fan_out));
    uniform{-l, l, seed}(out);
  }
};

}  // namespace dsgd::init
