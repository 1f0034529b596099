// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/train/overlap.hpp> through train::worker (trainer::overlap on a model is
// test/server/overlap_test.cpp): the overlap, on the host and off it through the worker's one
// staging buffer, ends on the bits of push then pull; it refuses gradients that do not match.
#include <dsgd/device/cpu.hpp>
#include <dsgd/train/overlap.hpp>
#include <dsgd/train/worker.hpp>

#include <support/error_checks.hpp>
#include <support/inproc_cluster.hpp>
#include <support/off_host_device.hpp>
#include <support/role_cluster.hpp>

#include <boost/test/unit_test.hpp>

#include <vector>

BOOST_AUTO_TEST_SUITE(train_overlap_test)

using cpu = dsgd::device::cpu;
using off_host = dsgd::test::off_host;
using dsgd::test::exchange;

BOOST_AUTO_TEST_SUITE(train_overlap)

BOOST_AUTO_TEST_CASE(the_overlap_on_and_off_the_host_ends_on_the_bits_of_push_then_pull) {
  const std::size_t steps = 5;
  const auto plain = dsgd::test::train_roles<cpu>(exchange::push_then_pull, steps);
  const auto host = dsgd::test::train_roles<cpu>(exchange::overlapped, steps);
  const auto off = dsgd::test::train_roles<off_host>(exchange::overlapped, steps);
  for (std::size_t k = 0; k < 2; ++k) {
    BOOST_TEST(host[k].step == steps);
    BOOST_TEST(off[k].step == steps);
    BOOST_TEST(off[k].allocations == 1u);  // the overlap adds no buffer of its own
    BOOST_TEST(off[k].buffer_stable);
    for (std::size_t v = 0; v < 2; ++v) {
      BOOST_TEST(host[k].values[v] == plain[0].values[v], boost::test_tools::per_element());
      BOOST_TEST(off[k].values[v] == plain[0].values[v], boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(gradients_that_do_not_match_the_variables_are_refused) {
  const auto spec = dsgd::test::inproc_cluster(1, 1);
  dsgd::train::worker<off_host> w(spec, {"worker", 0}, dsgd::test::quiet_options());
  std::vector<dsgd::tensor<off_host>> vars(3), grads(2);
  const auto msg = dsgd::test::error_of([&] { w.overlapped(vars, grads); }, dsgd::errc::shape_mismatch);
  BOOST_TEST(dsgd::test::contains(msg, "2 gradients for 3 variables"));
  static_assert(
      std::is_same_v<dsgd::train::worker<off_host>::overlap_type, dsgd::train::overlap<dsgd::train::worker<off_host>>>);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
