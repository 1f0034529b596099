// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/update/chunked_apply.hpp> and the chunked pushes of the async and
// bounded-staleness shards: a push applied chunk by chunk as it arrives ends exactly where a
// whole one does, and no reader ever sees it half applied.
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/chunked_apply.hpp>

#include <support/deadline.hpp>

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <random>
#include <vector>

BOOST_AUTO_TEST_SUITE(chunked_apply_test)

using namespace std::chrono_literals;
using dsgd::device::cpu;

static_assert(dsgd::update::chunked_apply<dsgd::optim::sgd>::available);
static_assert(dsgd::update::chunked_apply<dsgd::optim::momentum>::available);
static_assert(!dsgd::update::chunked_apply<dsgd::optim::adam>::available);

using dsgd::test::soon;

namespace {

std::vector<float> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n01;
  std::vector<float> v(n);
  for (auto& x : v) x = n01(rng);
  return v;
}

// Pushes @p g into @p shard as worker @p worker in chunks of @p chunk elements, the last
// through push_streamed; @returns how many chunks push_chunk accepted.
template <class Shard>
std::size_t push_in_chunks(Shard& shard, std::size_t worker, const std::vector<float>& g, std::size_t chunk) {
  std::size_t accepted = 0;
  bool streaming = true;
  for (std::size_t first = 0; first + chunk < g.size(); first += chunk) {
    streaming = streaming && shard.push_chunk(worker, first, chunk, g.data());
    accepted += streaming;
  }
  if (streaming) shard.push_streamed(worker, 0, g.data());
  else shard.push(worker, 0, g.data());
  return accepted;
}

template <class Shard>
std::vector<float> values_of(Shard& shard) {
  std::vector<float> w(shard.size());
  shard.pull(0, 0, w.data(), soon());
  return w;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(chunked_apply)

using optimizers = std::tuple<dsgd::optim::sgd, dsgd::optim::momentum>;

BOOST_AUTO_TEST_CASE_TEMPLATE(a_push_applied_in_chunks_equals_the_same_push_applied_whole, O, optimizers) {
  constexpr std::size_t n = 1000;
  const auto w0 = random_vector(n, 1);
  O opt{};
  opt.learning_rate = 0.1f;
  dsgd::update::async::shard<cpu, O> whole(cpu{}, w0, opt, 1), chunked(cpu{}, w0, opt, 1);
  for (unsigned step = 0; step < 5; ++step) {  // several steps, so momentum's velocity matters
    const auto g = random_vector(n, 100 + step);
    whole.push(0, step, g.data());
    BOOST_TEST(push_in_chunks(chunked, 0, g, 128) == 7u);  // 7 chunks of 128, then the last 104
  }
  BOOST_TEST(chunked.streamed() == 5u);
  BOOST_TEST(whole.streamed() == 0u);
  BOOST_TEST(chunked.step() == whole.step());
  BOOST_TEST(values_of(chunked) == values_of(whole), boost::test_tools::per_element());  // bit for bit
  auto a = chunked.save(), b = whole.save();
  BOOST_TEST(a.slots.size() == b.slots.size());
  for (std::size_t k = 0; k < a.slots.size(); ++k)
    BOOST_TEST(a.slots[k].second == b.slots[k].second, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(nesterov_momentum_in_chunks_equals_it_whole) {
  constexpr std::size_t n = 300;
  const auto w0 = random_vector(n, 2);
  dsgd::optim::momentum opt{0.05f, 0.9f, true};
  dsgd::update::bounded_staleness::shard<cpu, dsgd::optim::momentum> whole(cpu{}, w0, opt, 1, 1),
      chunked(cpu{}, w0, opt, 1, 1);
  for (unsigned step = 0; step < 3; ++step) {
    const auto g = random_vector(n, 200 + step);
    whole.push(0, step, g.data());
    push_in_chunks(chunked, 0, g, 64);
  }
  BOOST_TEST(chunked.streamed() == 3u);
  BOOST_TEST(chunked.clock_of(0) == 3u);  // a streamed push advances the SSP clock like any other
  BOOST_TEST(values_of(chunked) == values_of(whole), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(readers_see_no_chunk_of_a_push_until_its_last_chunk_is_in) {
  std::vector<float> w0{1.f, 2.f, 3.f, 4.f}, g{1.f, 1.f, 1.f, 1.f}, w(4);
  dsgd::update::async::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 2);
  auto pin = shard.try_pin(1, 0);
  BOOST_REQUIRE(shard.push_chunk(0, 0, 2, g.data()));
  BOOST_TEST(shard.pull(1, 0, w.data(), soon()) == 0u);
  BOOST_TEST(w == w0, boost::test_tools::per_element());  // half the push is applied, none visible
  BOOST_TEST(shard.save().values == w0, boost::test_tools::per_element());
  shard.push_streamed(0, 0, g.data());
  BOOST_TEST(shard.pull(1, 0, w.data(), soon()) == 1u);
  BOOST_TEST(w == (std::vector<float>{0.f, 1.f, 2.f, 3.f}), boost::test_tools::per_element());
  BOOST_TEST(std::vector<float>(pin->values->begin(), pin->values->end()) == w0, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_push_landing_during_a_stream_ends_it_and_both_are_applied_once) {
  std::vector<float> w0{0.f, 0.f, 0.f, 0.f}, g1{1.f, 1.f, 1.f, 1.f}, g2{10.f, 10.f, 10.f, 10.f};
  dsgd::update::async::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 2);
  BOOST_REQUIRE(shard.push_chunk(0, 0, 2, g1.data()));
  BOOST_TEST(!shard.push_chunk(1, 0, 2, g2.data()));  // one stream per shard: worker 1 goes whole
  shard.push(1, 0, g2.data());                        // changes the values under the stream
  BOOST_TEST(!shard.push_chunk(0, 2, 1, g1.data()));  // the stream read the old values: ended
  shard.push_streamed(0, 0, g1.data());               // so worker 0's push is applied whole
  BOOST_TEST(shard.streamed() == 0u);
  BOOST_TEST(shard.step() == 2u);
  BOOST_TEST(values_of(shard) == (std::vector<float>{-11.f, -11.f, -11.f, -11.f}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_stream_left_behind_by_a_lost_connection_is_never_published) {
  std::vector<float> w0{0.f, 0.f, 0.f, 0.f}, lost{100.f, 100.f, 100.f, 100.f}, g{1.f, 1.f, 1.f, 1.f};
  dsgd::update::async::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 2);
  BOOST_REQUIRE(shard.push_chunk(0, 0, 2, lost.data()));  // ...and the connection goes
  shard.push(0, 0, g.data());                             // the reconnected worker's next push
  BOOST_TEST(values_of(shard) == (std::vector<float>{-1.f, -1.f, -1.f, -1.f}), boost::test_tools::per_element());
  // A new stream by another worker is not blocked by the abandoned one once the values moved on.
  BOOST_REQUIRE(shard.push_chunk(0, 0, 2, lost.data()));
  BOOST_TEST(!shard.push_chunk(1, 0, 2, g.data()));  // live and current: taken
  shard.push(1, 0, g.data());
  BOOST_TEST(shard.push_chunk(1, 0, 2, g.data()));  // the abandoned one is stale now
  shard.push_streamed(1, 0, g.data());
  BOOST_TEST(values_of(shard) == (std::vector<float>{-3.f, -3.f, -3.f, -3.f}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_restore_during_a_stream_ends_it) {
  std::vector<float> w0{0.f, 0.f}, g{1.f, 1.f}, restored{5.f, 6.f};
  dsgd::update::async::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 1);
  BOOST_REQUIRE(shard.push_chunk(0, 0, 1, g.data()));
  shard.assign(restored, 7);
  shard.push_streamed(0, 7, g.data());
  BOOST_TEST(shard.streamed() == 0u);
  BOOST_TEST(shard.step() == 8u);
  BOOST_TEST(values_of(shard) == (std::vector<float>{4.f, 5.f}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(an_optimizer_without_a_chunked_apply_is_applied_whole) {
  const auto w0 = random_vector(64, 3), g = random_vector(64, 4);
  dsgd::update::async::shard<cpu, dsgd::optim::adam> whole(cpu{}, w0, {}, 1), chunked(cpu{}, w0, {}, 1);
  whole.push(0, 0, g.data());
  BOOST_TEST(push_in_chunks(chunked, 0, g, 16) == 0u);
  BOOST_TEST(chunked.streamed() == 0u);
  BOOST_TEST(values_of(chunked) == values_of(whole), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(chunks_out_of_order_or_past_the_end_end_the_stream) {
  std::vector<float> w0{0.f, 0.f, 0.f, 0.f}, g{1.f, 1.f, 1.f, 1.f};
  dsgd::update::async::shard<cpu, dsgd::optim::sgd> shard(cpu{}, w0, {1.f}, 1);
  BOOST_REQUIRE(shard.push_chunk(0, 0, 1, g.data()));
  BOOST_TEST(!shard.push_chunk(0, 2, 1, g.data()));  // a gap: elements 1..2 were skipped
  shard.push_streamed(0, 0, g.data());
  BOOST_TEST(!shard.push_chunk(0, 0, 5, g.data()));  // longer than the shard
  shard.push_streamed(0, 1, g.data());
  BOOST_TEST(shard.streamed() == 0u);
  BOOST_TEST(values_of(shard) == (std::vector<float>{-2.f, -2.f, -2.f, -2.f}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
