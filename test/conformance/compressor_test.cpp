// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Conformance of the Compressor family: every shipped compressor models dsgd::Compressor, a
// user compressor that models only the concept (no dsgd base, no detail::) keeps the concept's
// promise (decoded + new residual = gradient + old residual), is registered by name and parsed
// from its text like the shipped ones, and carries every push of a whole training run: the
// workers encode with it, the ps tasks decode with it; near_miss_compressor.cpp checks that a
// near-miss is refused naming the concept.
#include <dsgd/compress/codec.hpp>
#include <dsgd/compress/registry.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/update/sync_average.hpp>

#include "user_policy_cluster.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

BOOST_AUTO_TEST_SUITE(conformance_compressor_test)

namespace {

// What every copy of a scaled_sign did, counted together.
struct sign_counts {
  std::atomic<std::size_t> encodes{0};
  std::atomic<std::size_t> decodes{0};
};

// A user's compressor from the concept alone: scaled sign with error feedback (Karimireddy et
// al., "Error feedback fixes SignSGD", 2019). v = gradient + residual is sent as one bit per
// element, its sign, and one scale, the mean of |v| times `gain`; the residual keeps what the
// bits did not say, v - scale x sign(v). 32x fewer bytes than floats.
// Payload: f32 scale, then ceil(n / 8) bytes, element i in bit i % 8 of byte i / 8 (1: +scale,
// 0: -scale), unused bits 0.
struct scaled_sign {
  static constexpr std::string_view name = "scaled_sign";
  static constexpr bool uses_residual = true;

  float gain = 1.f;
  std::shared_ptr<sign_counts> counts = std::make_shared<sign_counts>();

  std::string describe() const { return "scaled_sign(" + std::to_string(gain) + ")"; }
  std::size_t max_bytes(std::size_t n) const { return 4 + (n + 7) / 8; }

  std::size_t encode(std::span<const float> grad, std::span<float> residual, std::span<std::byte> out) const {
    const std::size_t n = grad.size();
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      residual[i] += grad[i];
      sum += std::fabs(residual[i]);
    }
    const float scale = n == 0 ? 0.f : gain * static_cast<float>(sum / static_cast<double>(n));
    std::memcpy(out.data(), &scale, 4);
    std::memset(out.data() + 4, 0, (n + 7) / 8);
    for (std::size_t i = 0; i < n; ++i) {
      const bool up = residual[i] >= 0.f;
      if (up) out[4 + i / 8] |= std::byte{1} << (i % 8);
      residual[i] -= up ? scale : -scale;
    }
    ++counts->encodes;
    return max_bytes(n);
  }

  void check(std::span<const std::byte> in, std::size_t n, std::string_view what) const {
    const auto refuse = [&](const std::string& why) {
      throw dsgd::error(dsgd::errc::bad_frame, "malformed scaled_sign payload of " + std::string(what) + ": " + why);
    };
    if (in.size() != max_bytes(n)) refuse(std::to_string(in.size()) + " bytes for " + std::to_string(n) + " elements");
    float scale;
    std::memcpy(&scale, in.data(), 4);
    if (!(std::isfinite(scale) && scale >= 0.f)) refuse("scale " + std::to_string(scale));
    if (n % 8 != 0 && (static_cast<unsigned>(in.back()) >> (n % 8)) != 0) refuse("unused bits set");
  }

  void decode_add(std::span<const std::byte> in, float* acc, std::size_t n) const {
    float scale;
    std::memcpy(&scale, in.data(), 4);
    for (std::size_t i = 0; i < n; ++i)
      acc[i] += ((static_cast<unsigned>(in[4 + i / 8]) >> (i % 8)) & 1u) ? scale : -scale;
    ++counts->decodes;
  }
};

// Registered once for the whole test program, by the factory a program would give.
const std::shared_ptr<sign_counts>& registered_counts() {
  static const auto counts = [] {
    auto c = std::make_shared<sign_counts>();
    dsgd::compress::registry::global().add("scaled_sign", "scaled_sign(GAIN)", [c](std::string_view p) {
      const float gain = p.empty() ? 1.f : dsgd::compress::registry::number(p, "scaled_sign");
      if (!(gain > 0.f && std::isfinite(gain)))
        throw dsgd::error(dsgd::errc::invalid_argument, "scaled_sign's gain must be finite and above 0");
      return dsgd::compress::codec(scaled_sign{gain, c});
    });
    return c;
  }();
  return counts;
}

}  // namespace

static_assert(dsgd::Compressor<dsgd::compress::none> && dsgd::Compressor<dsgd::compress::fp16> &&
              dsgd::Compressor<dsgd::compress::bf16> && dsgd::Compressor<dsgd::compress::top_k> &&
              dsgd::Compressor<dsgd::compress::two_bit>);
static_assert(dsgd::Compressor<scaled_sign>);

// Through a codec, as the worker and the ps call it: what is decoded plus the new residual is
// the gradient plus the old residual; the payload is what max_bytes says; bad bytes are refused
// naming the variable.
BOOST_AUTO_TEST_CASE(a_user_compressor_keeps_the_concepts_promise_through_a_codec) {
  const dsgd::compress::codec c = scaled_sign{};
  BOOST_TEST(c.name() == "scaled_sign");
  BOOST_TEST(c.uses_residual());
  BOOST_TEST(!c.is_none());
  BOOST_TEST(c.get_if<scaled_sign>() != nullptr);
  std::mt19937 gen(3);
  std::normal_distribution<float> normal;
  for (std::size_t n : {0u, 1u, 7u, 8u, 1001u}) {
    std::vector<float> g(n), r(n), before(n);
    for (auto& x : r) x = 0.1f * normal(gen);
    for (auto& x : g) x = normal(gen);
    before = r;
    std::vector<std::byte> payload(c.max_bytes(n));
    BOOST_TEST(c.encode(g, r, payload) == 4 + (n + 7) / 8);
    c.check(payload, n, "w");
    std::vector<float> acc(n, 0.f);
    c.decode_add(payload, acc.data(), n);
    for (std::size_t i = 0; i < n; ++i)
      BOOST_TEST_REQUIRE(std::fabs(acc[i] + r[i] - (g[i] + before[i])) <= 1e-5f, n << " elements, element " << i);
    if (n % 8 != 0) {
      payload.back() |= std::byte{0x80};
      BOOST_CHECK_EXCEPTION(c.check(payload, n, "push of softmax/weights shard 0"), dsgd::error,
                            [](const dsgd::error& e) {
                              return e.code() == dsgd::errc::bad_frame &&
                                     std::string(e.what()).find("softmax/weights") != std::string::npos;
                            });
    }
  }
}

// Registered by name, the user's compressor is what a command line's text makes, and the
// registry's refusals name it like the shipped ones.
BOOST_AUTO_TEST_CASE(a_user_compressor_is_parsed_by_its_registered_name) {
  registered_counts();
  const auto c = dsgd::compress::parse("scaled_sign(0.5)");
  BOOST_TEST(c.get_if<scaled_sign>()->gain == 0.5f);
  BOOST_TEST(dsgd::compress::parse(c.describe()).describe() == c.describe());
  BOOST_CHECK_EXCEPTION(dsgd::compress::parse("scaled_sign(-1)"), dsgd::error, [](const dsgd::error& e) {
    return std::string(e.what()).find("gain must be finite and above 0") != std::string::npos;
  });
  BOOST_CHECK_EXCEPTION(dsgd::compress::parse("gzip"), dsgd::error, [](const dsgd::error& e) {
    return std::string(e.what()).find("or scaled_sign(GAIN)") != std::string::npos;
  });
}

// Two workers train softmax regression on Fashion-MNIST, one epoch, every push of both variables
// encoded by the registered compressor and decoded by it on two ps tasks: 1 bit per element in
// place of 32, and the run still learns.
BOOST_AUTO_TEST_CASE(a_user_compressor_carries_every_push_of_a_training_run) {
  using P = dsgd::placement::round_robin;
  using U = dsgd::update::sync_average;
  using O = dsgd::test::decaying_momentum;
  const auto& counts = registered_counts();
  const std::size_t encodes = counts->encodes, decodes = counts->decodes;
  auto o = dsgd::test::user_policy_options<P, U>(dsgd::test::decaying_momentum_over(469));
  o.compression = {.all = dsgd::compress::parse("scaled_sign")};
  const auto r = dsgd::test::train_softmax<dsgd::device::cpu, P, U, O>(o, 2);
  BOOST_TEST(r.accuracy >= 0.78);
  // Each step, each worker encodes and the ps tasks decode each of the two variables once.
  const std::size_t steps = r.pushes[0] + r.pushes[1];
  BOOST_TEST(counts->encodes - encodes == 2 * steps);
  BOOST_TEST(counts->decodes - decodes == 2 * steps);
}

BOOST_AUTO_TEST_SUITE_END()
