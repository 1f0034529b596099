// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// What the placement tests share: the MLP's variables and the check that a plan covers them.
#pragma once

#include <dsgd/placement/plan.hpp>

#include <boost/test/unit_test.hpp>

#include <cstddef>
#include <vector>

namespace placement_fixtures {

namespace pl = dsgd::placement;

/// The MLP's variables in creation order.
inline std::vector<pl::variable_info> mlp_variables() {
  return {{"dense0/kernel", {784, 256}}, {"dense0/bias", {256}},       {"dense1/kernel", {256, 128}},
          {"dense1/bias", {128}},        {"dense2/kernel", {128, 10}}, {"dense2/bias", {10}}};
}

/// The ps task of each shard of @p p, in order.
inline std::vector<std::size_t> owners(const pl::plan& p) {
  std::vector<std::size_t> out;
  for (const auto& s : p.shards()) out.push_back(s.ps_task);
  return out;
}

/// Checks that every element of every variable is covered by exactly one shard, in order.
inline void check_covers_every_element(const pl::plan& p) {
  for (std::size_t v = 0; v < p.variables().size(); ++v) {
    std::size_t next = 0;
    for (const auto& s : p.shards_of(v)) {
      BOOST_TEST(s.offset == next);
      BOOST_TEST(s.ps_task < p.ps_tasks());
      next += s.elements;
    }
    BOOST_TEST(next == p.variables()[v].shape.elements());
  }
}

}  // namespace placement_fixtures
