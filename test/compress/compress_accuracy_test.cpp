// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Accuracy kept under compression: the MLP 784-256-128-10 on real Fashion-MNIST, trained by one
// ps task and two workers (threads over transport::inproc) with every push compressed, under
// sync and async. Optimised builds only (label slow): compress_cluster_test is the one-epoch run
// the sanitizers afford.
//
// What the test command runs (sync_against_none, async_against_none): each compressor against
// the uncompressed run of the same seed, schedule and epochs, trained in the same case just
// before: a compressor may lose at most its margin of test accuracy to it (fp16 and bf16
// 0.003 under sync, the codecs that deliver a gradient late through their residual 0.03 and
// 0.035: the figures are above sync_against_none),
// and the uncompressed run itself must reach its own bar. A codec that loses its residual, or
// decodes a wrong scale, loses far more than its margin in the first epochs. Four epochs with
// the learning rate decaying 0.6 an epoch: eleven trainings of 4 epochs where the test command
// trained eleven of 12 to 16 to an absolute 0.88 (docs/compression.md has the figures).
//
// The cases that train each compressor to its absolute target (0.88; two_bit 0.87) over 12 to
// 16 epochs are kept for bench/compress/accuracy.sh, which runs them by name and plots their
// per-epoch `csv,` lines; the test command leaves them out (disabled).
#include "compress_cluster.hpp"

#include <dsgd/model/mlp.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>

#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

BOOST_AUTO_TEST_SUITE(compress_accuracy_test)

namespace c = dsgd::compress;
namespace ut = boost::unit_test;
namespace {

auto mlp() { return dsgd::model::mlp<dsgd::device::cpu>(dsgd::device::cpu{}, {.hidden = {256, 128}, .seed = 1}); }

template <class Rule>
const char* rule_name() {
  return std::is_same_v<Rule, dsgd::update::async> ? "async" : "sync";
}

// Trains the MLP with @p codec on every variable's pushes and @p pull on its pulls; prints its
// accuracy, bytes per push and one `csv,` line per epoch (bench/compress/ plots them).
template <class Rule>
dsgd::test::compress_outcome train(const c::codec& codec, const c::codec& pull, dsgd::test::compress_schedule s) {
  const auto name = codec.describe(), pulled = pull.describe();
  std::printf("%s %s, pulls %s, %zu epochs:\n", rule_name<Rule>(), name.c_str(), pulled.c_str(), s.epochs);
  const auto r = dsgd::test::train_compressed<Rule>(c::selection{.all = codec}, c::selection{.all = pull}, s, mlp);
  std::printf("%s %s, pulls %s: test accuracy %.4f after %zu epochs, %.0f bytes per push (none: %.0f), %.0f s\n",
              rule_name<Rule>(), name.c_str(), pulled.c_str(), r.accuracy, s.epochs, r.bytes_per_push(), 4.0 * 235146,
              r.seconds);
  for (const auto& e : r.epochs)
    std::printf("csv,%s,%s,%s,%zu,%.2f,%llu,%.4f\n", rule_name<Rule>(), name.c_str(), pulled.c_str(), e.epoch,
                e.seconds, static_cast<unsigned long long>(e.pushed_bytes), e.accuracy);
  return r;
}

// The long runs of bench/compress/accuracy.sh: @p epochs at @p learning_rate decaying by
// @p decay an epoch must reach @p target.
template <class Rule>
void reaches(const c::codec& codec, std::size_t epochs, double target, float learning_rate = 0.05f, float decay = 0.8f,
             const c::codec& pull = c::none{}) {
  BOOST_TEST(train<Rule>(codec, pull, {.epochs = epochs, .learning_rate = learning_rate, .decay = decay}).accuracy >=
             target);
}

// A compressor of the test command's comparison: its pushes, its pulls, and the test accuracy
// it may lose to the uncompressed run.
struct against {
  c::codec push;
  c::codec pull = c::none{};
  double margin = 0.003;
};

// Trains without compression, checks that run reaches @p none_reaches, then trains every case
// of @p cases with the same seed and schedule @p s and checks that it ends within its margin
// of the uncompressed run.
template <class Rule>
void within_margin_of_none(dsgd::test::compress_schedule s, double none_reaches, const std::vector<against>& cases) {
  const double none = train<Rule>(c::none{}, c::none{}, s).accuracy;
  BOOST_TEST(none >= none_reaches, rule_name<Rule>() << " none after " << s.epochs << " epochs: " << none);
  for (const auto& k : cases) {
    const double accuracy = train<Rule>(k.push, k.pull, s).accuracy;
    BOOST_TEST(accuracy >= none - k.margin,
               rule_name<Rule>() << ' ' << k.push.describe() << ", pulls " << k.pull.describe() << ": " << accuracy
                                 << " against none's " << none << " (margin " << k.margin << ')');
  }
}

using sync = dsgd::update::sync_average;
using async = dsgd::update::async;

}  // namespace

// The margins, from a run on 2 AMD EPYC vCPUs (docs/compression.md): sync is deterministic,
// none 0.8734 after 4 epochs, fp16 +0.0021, bf16 +0.0006, bf16 both ways +0.0032, top_k -0.0173
// and two_bit -0.0227 (their residuals still hold gradient the uncompressed run has applied);
// async varies with the interleaving: none 0.8669, fp16 +0.0038, bf16 +0.0013, top_k -0.0077,
// two_bit -0.0184. A residual codec that dropped its residual, or a wrong scale on decode,
// loses several times its margin.
BOOST_AUTO_TEST_CASE(sync_against_none) {
  within_margin_of_none<sync>({.epochs = 4, .learning_rate = 0.05f, .decay = 0.6f}, 0.865,
                              {{c::fp16{}},
                               {c::bf16{}},
                               {c::bf16{}, c::bf16{}},
                               {c::top_k{0.01f}, c::none{}, 0.03},
                               {c::two_bit{0.5f}, c::none{}, 0.035}});
}
// Async applies every worker's gradient on its own: at sync's 0.05 two_bit's +-threshold kicks
// diverge in the first epoch (docs/compression.md), so async runs at 0.02; its fp16 and bf16
// margins allow for the interleaving.
BOOST_AUTO_TEST_CASE(async_against_none) {
  within_margin_of_none<async>({.epochs = 4, .learning_rate = 0.02f, .decay = 0.6f}, 0.85,
                               {{c::fp16{}, c::none{}, 0.006},
                                {c::bf16{}, c::none{}, 0.006},
                                {c::top_k{0.01f}, c::none{}, 0.03},
                                {c::two_bit{0.5f}, c::none{}, 0.035}});
}

// bench/compress/accuracy.sh's cases. top_k's and two_bit's residual delivers a gradient over
// several steps: they need the rate for longer (16 epochs decaying 0.85; with 12 at 0.8 top_k
// ended at 0.8770 under sync where OpenBLAS picks other kernels, two_bit at 0.8704, and top_k at
// 0.8799 under async). Async runs at 0.02, decaying 0.85, for 16 epochs.
BOOST_AUTO_TEST_CASE(none_sync, *ut::disabled()) { reaches<sync>(c::none{}, 12, 0.88); }
BOOST_AUTO_TEST_CASE(fp16_sync, *ut::disabled()) { reaches<sync>(c::fp16{}, 12, 0.88); }
BOOST_AUTO_TEST_CASE(bf16_sync, *ut::disabled()) { reaches<sync>(c::bf16{}, 12, 0.88); }
BOOST_AUTO_TEST_CASE(bf16_sync_bf16_pulls, *ut::disabled()) {
  reaches<sync>(c::bf16{}, 12, 0.88, 0.05f, 0.8f, c::bf16{});
}
BOOST_AUTO_TEST_CASE(top_k_1_percent_sync, *ut::disabled()) { reaches<sync>(c::top_k{0.01f}, 16, 0.88, 0.05f, 0.85f); }
BOOST_AUTO_TEST_CASE(two_bit_sync, *ut::disabled()) { reaches<sync>(c::two_bit{0.5f}, 16, 0.87, 0.05f, 0.85f); }
BOOST_AUTO_TEST_CASE(none_async, *ut::disabled()) { reaches<async>(c::none{}, 16, 0.88, 0.02f, 0.85f); }
BOOST_AUTO_TEST_CASE(fp16_async, *ut::disabled()) { reaches<async>(c::fp16{}, 16, 0.88, 0.02f, 0.85f); }
BOOST_AUTO_TEST_CASE(bf16_async, *ut::disabled()) { reaches<async>(c::bf16{}, 16, 0.88, 0.02f, 0.85f); }
BOOST_AUTO_TEST_CASE(top_k_1_percent_async, *ut::disabled()) {
  reaches<async>(c::top_k{0.01f}, 16, 0.88, 0.02f, 0.85f);
}
BOOST_AUTO_TEST_CASE(two_bit_async, *ut::disabled()) { reaches<async>(c::two_bit{0.5f}, 16, 0.87, 0.02f, 0.85f); }

BOOST_AUTO_TEST_SUITE_END()
