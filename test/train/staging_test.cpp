// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for <dsgd/train/staging.hpp>: on a host device the exchanges use the tensors' own
// memory; off the host one buffer, allocated once, holds the values pulled and the gradients
// pushed, copied to and from the device once each.
#include <dsgd/device/cpu.hpp>
#include <dsgd/train/staging.hpp>

#include <support/off_host_device.hpp>

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <vector>

BOOST_AUTO_TEST_SUITE(staging_test)

namespace {

template <class D>
std::vector<dsgd::tensor<D>> tensors(float first) {
  std::vector<dsgd::tensor<D>> out;
  out.emplace_back(D{}, dsgd::shape{2, 3});
  out.emplace_back(D{}, dsgd::shape{4});
  out.emplace_back(D{}, dsgd::shape{5, 2});
  float x = first;
  for (auto& t : out)
    for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = x++;
  return out;
}

const auto none = [](std::size_t) { return false; };
const auto second = [](std::size_t v) { return v == 1; };

// A staging buffer of device D reserved for tensors() (values from 0, gradients from 100) with
// variable 1 read by rows.
template <class D>
struct reserved_staging {
  using dev = D;
  dsgd::train::staging<D> s;
  std::vector<dsgd::tensor<D>> vars = tensors<D>(0.f);
  std::vector<dsgd::tensor<D>> grads = tensors<D>(100.f);
  reserved_staging() { s.reserve(vars, second); }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(staging)

BOOST_FIXTURE_TEST_CASE(on_the_host_the_spans_are_the_tensors_own_memory_and_nothing_is_allocated,
                        reserved_staging<dsgd::device::cpu>) {
  const auto values = s.values(vars, second);
  BOOST_TEST_REQUIRE(values.size() == 3u);
  BOOST_TEST(values[0].data() == vars[0].data());
  BOOST_TEST(values[0].size() == 6u);
  BOOST_TEST(values[1].empty());  // read by rows
  BOOST_TEST(values[2].data() == vars[2].data());
  const auto g = s.gradients(grads, second);
  BOOST_TEST(g[2].data() == grads[2].data());
  BOOST_TEST(g[1].empty());
  const auto all = s.snapshot(vars);
  BOOST_TEST(all[1].data() == vars[1].data());  // initialising sends the sparse ones too
  BOOST_TEST(s.data() == nullptr);
  BOOST_TEST(s.allocations() == 0u);
}

BOOST_FIXTURE_TEST_CASE(off_the_host_one_buffer_allocated_once_holds_values_and_gradients_apart,
                        reserved_staging<dsgd::test::off_host>) {
  BOOST_TEST(s.allocations() == 1u);
  const float* buffer = s.data();
  BOOST_TEST_REQUIRE(buffer != nullptr);
  for (int step = 0; step < 3; ++step) {
    auto values = s.values(vars, second);
    auto g = s.gradients(grads, second);
    BOOST_TEST(s.data() == buffer);
    BOOST_TEST(s.allocations() == 1u);
    BOOST_TEST(values[1].empty());
    BOOST_TEST(g[1].empty());
    // Nothing is copied off the device before a pull: the values area is what the last pull
    // left there, not the tensors' values.
    BOOST_TEST(values[0].data() != vars[0].data());
    // A "pull" lands in the values area, then in the tensors once land() is called.
    for (std::size_t v : {0u, 2u})
      for (auto& f : values[v]) f = float(1000 * step + v);
    BOOST_TEST(vars[0].data()[5] == (step == 0 ? 5.f : float(1000 * (step - 1))));  // not landed yet
    s.land(vars, 0);
    s.land(vars, 1);  // no room, nothing to land
    BOOST_TEST(vars[0].data()[5] == float(1000 * step));
    BOOST_TEST(vars[2].data()[0] != float(1000 * step + 2));  // not landed yet
    s.land(vars, 2);
    BOOST_TEST(vars[2].data()[9] == float(1000 * step + 2));
    // Gradients are copied off the device once, into their own area.
    grads[0].data()[0] = float(step);
    s.stage(grads, 0);
    s.stage(grads, 2);
    BOOST_TEST(g[0][0] == float(step));
    BOOST_TEST(g[2][9] == 119.f);
    BOOST_TEST(values[0][0] == float(1000 * step));  // the values area untouched
  }
  // Initialising sends every variable: those with room through the buffer, the others copied.
  const auto all = s.snapshot(vars);
  BOOST_TEST(all[0][0] == vars[0].data()[0]);
  BOOST_TEST(all[1].size() == 4u);
  BOOST_TEST(all[1][3] == 9.f);
  BOOST_TEST(s.allocations() == 1u);
  // Another model (other sizes) gets a buffer of its own layout.
  std::vector<dsgd::tensor<dev>> other;
  other.emplace_back(dev{}, dsgd::shape{7});
  s.values(other, none);
  BOOST_TEST(s.allocations() == 2u);
}

BOOST_AUTO_TEST_CASE(a_variable_marked_sparse_after_the_layout_keeps_its_room_and_gets_an_empty_span) {
  using dev = dsgd::test::off_host;
  dsgd::train::staging<dev> s;
  auto vars = tensors<dev>(0.f);
  s.reserve(vars, none);
  const auto values = s.values(vars, second);
  BOOST_TEST(values[1].empty());
  BOOST_TEST(values[2].size() == 10u);
  BOOST_TEST(s.allocations() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
