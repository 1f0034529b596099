// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Accuracy kept under compression: the MLP 784-256-128-10 on real Fashion-MNIST, trained by one
// ps task and two workers (threads over transport::inproc) with every push compressed, under
// sync and async, must reach 0.88 test accuracy with none, fp16, bf16 and top_k(0.01) with error
// feedback, and 0.87 with two_bit. Each case prints its accuracy and bytes per push, the
// figures of docs/compression.md. Optimised builds only (label slow): compress_cluster_test is
// the one-epoch run the sanitizers afford.
#include "compress_cluster.hpp"

#include <dsgd/model/mlp.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>

#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <type_traits>

BOOST_AUTO_TEST_SUITE(compress_accuracy_test)

namespace c = dsgd::compress;
namespace {

auto mlp() { return dsgd::model::mlp<dsgd::device::cpu>(dsgd::device::cpu{}, {.hidden = {256, 128}, .seed = 1}); }

// Trains the MLP with @p codec on every variable for @p epochs passes of each worker over its
// half, the learning rate 0.05 decaying by 0.8 an epoch (top_k and two_bit deliver a gradient
// over several steps, through their residual: with example_03's 0.7 they stop short, at 0.874
// and 0.868 after 10 epochs); checks the final accuracy against @p target.
template <class Rule>
void reaches(const c::codec& codec, std::size_t epochs, double target, float learning_rate = 0.05f,
             float decay = 0.8f) {
  const char* rule = std::is_same_v<Rule, dsgd::update::async> ? "async" : "sync";
  std::printf("%s %s, %zu epochs:\n", rule, c::describe(codec).c_str(), epochs);
  const auto r = dsgd::test::train_compressed<Rule>(c::selection{.all = codec}, {.epochs = epochs, .learning_rate = learning_rate, .decay = decay}, mlp);
  std::printf("%s %s: test accuracy %.4f after %zu epochs, %.0f bytes per push (none: %.0f), %.0f s\n", rule,
              c::describe(codec).c_str(), r.accuracy, epochs, r.bytes_per_push(), 4.0 * 235146, r.seconds);
  BOOST_TEST(r.accuracy >= target);
}

using sync = dsgd::update::sync_average;
using async = dsgd::update::async;

}  // namespace

BOOST_AUTO_TEST_CASE(none_sync) { reaches<sync>(c::none{}, 12, 0.88); }
BOOST_AUTO_TEST_CASE(fp16_sync) { reaches<sync>(c::fp16{}, 12, 0.88); }
BOOST_AUTO_TEST_CASE(bf16_sync) { reaches<sync>(c::bf16{}, 12, 0.88); }
BOOST_AUTO_TEST_CASE(top_k_1_percent_sync) { reaches<sync>(c::top_k{0.01f}, 12, 0.88); }
BOOST_AUTO_TEST_CASE(two_bit_sync) { reaches<sync>(c::two_bit{0.5f}, 12, 0.87); }
// Async applies every worker's gradient on its own (sync applies the mean of two): at sync's
// 0.05 two_bit's +-threshold kicks diverge in the first epoch, whatever the threshold (0.1,
// 0.25, 0.5), and none ends at 0.8786, top_k(0.01) at 0.859; async runs at 0.02, decaying 0.85.
BOOST_AUTO_TEST_CASE(none_async) { reaches<async>(c::none{}, 12, 0.88, 0.02f, 0.85f); }
BOOST_AUTO_TEST_CASE(fp16_async) { reaches<async>(c::fp16{}, 12, 0.88, 0.02f, 0.85f); }
BOOST_AUTO_TEST_CASE(bf16_async) { reaches<async>(c::bf16{}, 12, 0.88, 0.02f, 0.85f); }
BOOST_AUTO_TEST_CASE(top_k_1_percent_async) { reaches<async>(c::top_k{0.01f}, 12, 0.88, 0.02f, 0.85f); }
BOOST_AUTO_TEST_CASE(two_bit_async) { reaches<async>(c::two_bit{0.5f}, 12, 0.87, 0.02f, 0.85f); }

BOOST_AUTO_TEST_SUITE_END()
