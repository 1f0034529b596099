// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Must NOT compile: a type with no execution policy given as the trainer's device. The test
// conformance_near_miss_device passes when the compiler refuses it naming the Device concept.
#include <dsgd/trainer.hpp>

#include <string>

struct no_policy {
  template <class T>
  using vector = thrust::host_vector<T>;
  static constexpr bool is_host = true;
  void synchronize() const noexcept {}
  std::string name() const { return "cpu"; }
};

dsgd::trainer<no_policy>* refused = nullptr;
