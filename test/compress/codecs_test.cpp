// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The compressors of <dsgd/compress/selection.hpp> on their own: what each encodes exactly,
// fp16 and bf16 rounding, top-k's choice, 2-bit's thresholds, the error-feedback invariant, and
// malformed payloads refused as bad_frame naming the variable.
#include <dsgd/compress/registry.hpp>
#include <dsgd/compress/selection.hpp>

#include <support/error_checks.hpp>

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

BOOST_AUTO_TEST_SUITE(compress_codecs_test)

namespace c = dsgd::compress;

namespace {

std::vector<float> random_gradient(std::size_t n, unsigned seed, float scale = 1.f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> g(n);
  for (auto& x : g) x = d(gen);
  return g;
}

// Encodes @p g with @p codec and residual @p r; @returns the payload.
std::vector<std::byte> encoded(const c::codec& codec, std::span<const float> g, std::span<float> r) {
  std::vector<std::uint32_t> buffer((codec.max_bytes(g.size()) + 3) / 4);
  auto out = std::as_writable_bytes(std::span(buffer));
  const auto n = codec.encode(g, r, out);
  BOOST_TEST(n <= codec.max_bytes(g.size()));
  return {out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n)};
}

std::vector<float> decoded(const c::codec& codec, std::span<const std::byte> payload, std::size_t n) {
  codec.check(payload, n, "v");
  std::vector<float> acc(n, 0.f);
  codec.decode_add(payload, acc.data(), n);
  return acc;
}

template <class F>
void check_error(F&& f, dsgd::errc code, std::initializer_list<std::string> parts);

// Checks that @p payload is refused with bad_frame naming "dense0/kernel" and containing @p why.
void refused(const c::codec& codec, std::span<const std::byte> payload, std::size_t n, const std::string& why) {
  check_error([&] { codec.check(payload, n, "push of dense0/kernel shard 0"); }, dsgd::errc::bad_frame,
              {"dense0/kernel", why});
}

// Runs @p f, which must throw dsgd::error @p code with a message containing every @p parts.
template <class F>
void check_error(F&& f, dsgd::errc code, std::initializer_list<std::string> parts) {
  const auto msg = dsgd::test::error_of(std::forward<F>(f), code);
  for (const auto& part : parts)
    BOOST_TEST(dsgd::test::contains(msg, part), "\"" << msg << "\" lacks \"" << part << "\"");
}

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }

}  // namespace

BOOST_AUTO_TEST_CASE(none_round_trips_exactly) {
  const auto g = random_gradient(1000, 1);
  std::vector<float> r;
  const auto p = encoded(c::none{}, g, r);
  BOOST_TEST(p.size() == 4000u);
  const auto back = decoded(c::none{}, p, g.size());
  BOOST_TEST(std::memcmp(back.data(), g.data(), 4000) == 0);
}

BOOST_AUTO_TEST_CASE(fp16_and_bf16_are_exact_on_values_they_hold) {
  // Values with few mantissa bits: fp16 and bf16 hold them exactly (and the halving of bytes).
  std::vector<float> g = {0.f, -0.f, 1.f, -2.f, 0.5f, 1.5f, -0.375f, 1024.f, 65504.f, 0x1p-14f, 0x1p-24f, 3.f};
  std::vector<float> r;
  for (const c::codec& codec : {c::codec{c::fp16{}}, c::codec{c::bf16{}}}) {
    auto values = g;
    if (codec.get_if<c::bf16>()) values[8] = 65536.f;  // 65504 needs 11 bits
    const auto p = encoded(codec, values, r);
    BOOST_TEST(p.size() == 2 * values.size());
    const auto back = decoded(codec, p, values.size());
    // (decode adds into a zeroed accumulator, so -0 arrives as +0: equal as values)
    for (std::size_t i = 0; i < values.size(); ++i) BOOST_TEST(back[i] == values[i], "element " << i);
    BOOST_TEST(bits(c::detail::from_fp16(c::detail::to_fp16(-0.f))) == bits(-0.f));
    BOOST_TEST(bits(c::detail::from_bf16(c::detail::to_bf16(-0.f))) == bits(-0.f));
  }
}

BOOST_AUTO_TEST_CASE(fp16_rounds_to_nearest_even_and_keeps_inf_and_nan) {
  using c::detail::from_fp16;
  using c::detail::to_fp16;
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to the even one (1); 1 + 3 x 2^-11
  // is halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  BOOST_TEST(to_fp16(1.f + 0x1p-11f) == 0x3c00u);
  BOOST_TEST(to_fp16(1.f + 3 * 0x1p-11f) == 0x3c02u);
  BOOST_TEST(to_fp16(1.f + 0x1p-11f + 0x1p-20f) == 0x3c01u);  // above the tie: up
  BOOST_TEST(to_fp16(65504.f) == 0x7bffu);
  BOOST_TEST(to_fp16(65519.f) == 0x7bffu);  // below the tie with 65536
  BOOST_TEST(to_fp16(65520.f) == 0x7c00u);  // the tie rounds to even: infinity
  BOOST_TEST(to_fp16(1e10f) == 0x7c00u);
  BOOST_TEST(to_fp16(-std::numeric_limits<float>::infinity()) == 0xfc00u);
  BOOST_TEST(std::isnan(from_fp16(to_fp16(std::numeric_limits<float>::quiet_NaN()))));
  BOOST_TEST(std::isnan(from_fp16(to_fp16(-std::numeric_limits<float>::signaling_NaN()))));
  BOOST_TEST(std::isinf(from_fp16(0x7c00u)));
  // Subnormals: 2^-24 is the smallest; 2^-25 is the tie with 0 (even), a bit more rounds up.
  BOOST_TEST(to_fp16(0x1p-24f) == 0x0001u);
  BOOST_TEST(to_fp16(0x1p-25f) == 0x0000u);
  BOOST_TEST(to_fp16(0x1.000002p-25f) == 0x0001u);
  BOOST_TEST(to_fp16(3 * 0x1p-25f) == 0x0002u);  // 1.5 units: the tie goes to 2
  BOOST_TEST(to_fp16(-0x1p-30f) == 0x8000u);
  BOOST_TEST(from_fp16(0x03ffu) == 1023 * 0x1p-24f);
  // Every half value round-trips through float (NaNs as NaNs).
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const float f = from_fp16(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    BOOST_TEST_REQUIRE(to_fp16(f) == h);
  }
  // A float rounds to the nearer of its two neighbours (random values in fp16's range).
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> d(-60000.f, 60000.f);
  for (int i = 0; i < 20000; ++i) {
    const float f = d(gen) * (i % 2 ? 1e-4f : 1.f);
    const float back = from_fp16(to_fp16(f));
    const float up = from_fp16(static_cast<std::uint16_t>(to_fp16(f) + 1));  // next magnitude
    BOOST_TEST_REQUIRE(std::fabs(back - f) <= std::fabs(up - f));
  }
}

BOOST_AUTO_TEST_CASE(bf16_rounds_to_nearest_even_and_keeps_inf_and_nan) {
  using c::detail::from_bf16;
  using c::detail::to_bf16;
  BOOST_TEST(to_bf16(1.f) == 0x3f80u);
  BOOST_TEST(to_bf16(std::bit_cast<float>(0x3f808000u)) == 0x3f80u);  // tie, even stays
  BOOST_TEST(to_bf16(std::bit_cast<float>(0x3f818000u)) == 0x3f82u);  // tie, odd goes up
  BOOST_TEST(to_bf16(std::bit_cast<float>(0x3f808001u)) == 0x3f81u);  // above the tie
  BOOST_TEST(to_bf16(std::numeric_limits<float>::max()) == 0x7f80u);  // rounds to infinity
  BOOST_TEST(to_bf16(-std::numeric_limits<float>::infinity()) == 0xff80u);
  BOOST_TEST(std::isnan(from_bf16(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload is only in the low 16 bits stays a NaN (not an infinity).
  BOOST_TEST(std::isnan(from_bf16(to_bf16(std::bit_cast<float>(0x7f800001u)))));
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    const float f = from_bf16(static_cast<std::uint16_t>(b));
    if (!std::isnan(f)) BOOST_TEST_REQUIRE(to_bf16(f) == b);
  }
}

BOOST_AUTO_TEST_CASE(top_k_sends_the_k_largest_magnitudes) {
  const auto g = random_gradient(1000, 4);
  std::vector<float> r(g.size(), 0.f);
  const c::top_k codec{0.01f};
  BOOST_TEST(codec.k(1000) == 10u);
  BOOST_TEST(codec.k(1) == 1u);
  BOOST_TEST(codec.k(50) == 1u);  // ceil(0.5)
  const auto p = encoded(codec, g, r);
  BOOST_TEST(p.size() == 4u + 8u * 10u);
  const auto back = decoded(codec, p, g.size());
  std::vector<float> magnitudes(g.size());
  std::transform(g.begin(), g.end(), magnitudes.begin(), [](float x) { return std::fabs(x); });
  std::sort(magnitudes.begin(), magnitudes.end(), std::greater<>());
  std::size_t sent = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (back[i] != 0.f) {
      ++sent;
      BOOST_TEST(back[i] == g[i]);  // sent exactly
      BOOST_TEST(std::fabs(g[i]) >= magnitudes[9]);
      BOOST_TEST(r[i] == 0.f);
    } else {
      BOOST_TEST(std::fabs(g[i]) <= magnitudes[9]);
      BOOST_TEST(r[i] == g[i]);  // kept for later
    }
  }
  BOOST_TEST(sent == 10u);
}

BOOST_AUTO_TEST_CASE(error_feedback_loses_nothing) {
  // Over many steps, what the ps received plus the worker's residual is what the worker
  // computed: exactly per step for top_k (values sent as they are), to float rounding of the
  // running sums for two_bit.
  for (const c::codec& codec : {c::codec{c::top_k{0.05f}}, c::codec{c::two_bit{0.25f}}}) {
    const std::size_t n = 777;
    std::vector<float> r(n, 0.f);
    std::vector<double> computed(n, 0.0), received(n, 0.0);
    for (unsigned step = 0; step < 50; ++step) {
      const auto g = random_gradient(n, 100 + step, 0.2f);
      const auto before = r;
      const auto p = encoded(codec, g, r);
      const auto back = decoded(codec, p, n);
      for (std::size_t i = 0; i < n; ++i) {
        BOOST_TEST_REQUIRE(back[i] + r[i] == before[i] + g[i], codec.describe() << " element " << i);
        computed[i] += g[i];
        received[i] += back[i];
      }
    }
    for (std::size_t i = 0; i < n; ++i) BOOST_TEST_REQUIRE(std::fabs(received[i] + r[i] - computed[i]) < 1e-4);
  }
}

BOOST_AUTO_TEST_CASE(two_bit_sends_plus_minus_threshold_or_nothing) {
  const c::two_bit codec{0.5f};
  std::vector<float> g = {0.5f, 0.49f, -0.5f, -0.6f, 2.f, 0.f, -0.1f, 0.7f, 0.3f};
  std::vector<float> r(g.size(), 0.f);
  r[8] = 0.25f;  // 0.3 + 0.25 crosses the threshold
  const auto p = encoded(codec, g, r);
  BOOST_TEST(p.size() == 4u + 3u);
  const auto back = decoded(codec, p, g.size());
  const std::vector<float> want = {0.5f, 0.f, -0.5f, -0.5f, 0.5f, 0.f, 0.f, 0.5f, 0.5f};
  BOOST_TEST(back == want, boost::test_tools::per_element());
  BOOST_TEST(r[1] == 0.49f);
  BOOST_TEST(r[4] == 1.5f);  // one threshold per step: the rest waits in the residual
  BOOST_TEST(std::fabs(r[3] + 0.1f) < 1e-6f);
  BOOST_TEST(std::fabs(r[8] - 0.05f) < 1e-6f);
}

BOOST_AUTO_TEST_CASE(malformed_payloads_are_bad_frame_naming_the_variable) {
  const std::size_t n = 100;
  const auto g = random_gradient(n, 7);
  std::vector<float> r(n, 0.f);
  // Truncated and odd lengths for every encoding.
  for (const c::codec& codec : {c::codec{c::none{}}, c::codec{c::fp16{}}, c::codec{c::bf16{}}, c::codec{c::top_k{0.1f}},
                                c::codec{c::two_bit{0.5f}}}) {
    std::fill(r.begin(), r.end(), 0.f);
    auto p = encoded(codec, g, r);
    BOOST_TEST_CONTEXT(codec.describe()) {
      refused(codec, std::span(p).first(p.size() - 1), n, "bytes");
      refused(codec, std::span(p).first(0), n, "");
      auto longer = p;
      longer.push_back(std::byte{0});
      refused(codec, longer, n, "bytes");
      // A payload of another variable's size (top_k's fits any variable with as many entries).
      if (!codec.get_if<c::top_k>()) refused(codec, p, n + 4, "");
    }
  }
  const c::top_k top{0.1f};
  std::fill(r.begin(), r.end(), 0.f);
  auto p = encoded(top, g, r);
  auto put = [](std::vector<std::byte>& b, std::size_t at, std::uint32_t v) { std::memcpy(b.data() + at, &v, 4); };
  auto bad = p;
  put(bad, 4, 100);  // the first index is past the variable
  refused(top, bad, n, "index 100 (entry 0) is out of range for 100 elements");
  bad = p;
  put(bad, 8, 0);  // the second index not above the first (duplicates, unsorted)
  put(bad, 4, 0);
  refused(top, bad, n, "is not above");
  bad = p;
  put(bad, 0, 0xffffffffu);  // a count far above the variable: refused before anything is read
  refused(top, bad, n, "count 4294967295 is larger than the variable's 100 elements");
  bad = p;
  put(bad, 0, 11);  // above k = 10
  refused(top, bad, n, "above k = 10");
  bad.assign(3, std::byte{0});
  refused(top, bad, n, "truncated");

  const c::two_bit two{0.5f};
  p = encoded(two, g, r);
  bad = p;
  bad[4] = std::byte{0x03};
  refused(two, bad, n, "code 3 at element 0");
  auto odd = encoded(two, std::span(g).first(5), std::span(r).first(5));  // 5 elements: 2 bytes
  odd.back() |= std::byte{0x40};
  refused(two, odd, 5, "unused bits");
  bad = p;
  const float other = 0.25f;
  std::memcpy(bad.data(), &other, 4);
  refused(two, bad, n, "threshold 0.25, but two_bit(0.5) was agreed");
}

BOOST_AUTO_TEST_CASE(a_selection_picks_per_variable_and_validates) {
  const c::selection s{.all = c::top_k{0.01f}, .variables = {{"softmax/bias", c::none{}}, {"w", c::bf16{}}}};
  BOOST_TEST(s.of("softmax/weights").describe() == "top_k(0.01)");
  BOOST_TEST(s.of("softmax/bias").describe() == "none");
  BOOST_TEST(s.of("w").describe() == "bf16");
  BOOST_TEST(c::codec(c::two_bit{}).describe() == "two_bit(0.5)");
  BOOST_CHECK_NO_THROW(c::validate(s));
  check_error([] { c::validate(c::selection{.all = c::top_k{0.f}}, "o.compression"); }, dsgd::errc::invalid_argument,
              {"o.compression.all.ratio", "(0, 1]"});
  check_error(
      [] {
        c::validate(c::selection{.variables = {{"w", c::two_bit{-1.f}}}}, "o.compression");
      },
      dsgd::errc::invalid_argument, {"o.compression.variables[w].threshold"});
}

// A command line's codec is what describe() writes, and reads back to the same codec; anything
// else names the text and what was expected.
BOOST_AUTO_TEST_CASE(parse_reads_what_describe_writes_and_names_bad_text) {
  for (const c::codec& k : {c::codec(c::none{}), c::codec(c::fp16{}), c::codec(c::bf16{}), c::codec(c::top_k{0.01f}),
                            c::codec(c::two_bit{0.5f})})
    BOOST_TEST(c::parse(k.describe()).describe() == k.describe());
  BOOST_TEST(c::parse("top_k(0.25)").get_if<c::top_k>()->ratio == 0.25f);
  check_error([] { c::parse("gzip"); }, dsgd::errc::invalid_argument,
              {"compression \"gzip\"", "expected none, fp16, bf16, top_k(RATIO) or two_bit(THRESHOLD)"});
  check_error([] { c::parse("top_k"); }, dsgd::errc::invalid_argument, {"top_k(RATIO)"});
  check_error([] { c::parse("top_k()"); }, dsgd::errc::invalid_argument,
              {"top_k takes one number, not \"\"", "(usage: top_k(RATIO))"});
  check_error([] { c::parse("top_k(1%)"); }, dsgd::errc::invalid_argument, {"top_k takes one number, not \"1%\""});
  check_error([] { c::parse("top_k(2)"); }, dsgd::errc::invalid_argument, {"top_k.ratio: must be in (0, 1]"});
  check_error([] { c::parse("two_bit(-1)"); }, dsgd::errc::invalid_argument, {"two_bit.threshold"});
  check_error([] { c::parse("fp16(3)"); }, dsgd::errc::invalid_argument, {"fp16 takes no parameters, not \"3\""});
  check_error([] { c::parse("top_k(0.1"); }, dsgd::errc::invalid_argument, {"with a closing parenthesis"});
}

// A program's own compressor is registered by name beside the shipped ones, parsed like them,
// and listed in what a bad name is told; names are words, and registered once.
BOOST_AUTO_TEST_CASE(a_registered_compressor_is_parsed_by_its_name) {
  c::registry r;
  r.add("scaled", "scaled(THRESHOLD)",
        [](std::string_view p) { return c::codec(c::two_bit{c::registry::number(p, "scaled")}); });
  BOOST_TEST(r.parse("scaled(0.25)").get_if<c::two_bit>()->threshold == 0.25f);
  BOOST_TEST(r.parse("top_k(0.5)").describe() == "top_k(0.5)");
  check_error([&] { r.parse("gzip"); }, dsgd::errc::invalid_argument,
              {"expected none, fp16, bf16, top_k(RATIO), two_bit(THRESHOLD) or scaled(THRESHOLD)"});
  check_error([&] { r.add("scaled", "", {}); }, dsgd::errc::invalid_argument, {"\"scaled\" is registered already"});
  check_error([&] { r.add("my-codec", "", {}); }, dsgd::errc::invalid_argument,
              {"name \"my-codec\" must be letters, digits and '_'"});
  // Another registry, and the global one, know nothing of it.
  check_error([] { c::parse("scaled(0.25)"); }, dsgd::errc::invalid_argument, {"compression \"scaled(0.25)\""});
}

BOOST_AUTO_TEST_SUITE_END()
