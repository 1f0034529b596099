// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Uses a little of every layer a downstream project would: a tensor on the cpu device, an
// optimizer step, a placement, and a gemm through the models' BLAS.
#include <dsgd/device/cpu.hpp>
#include <dsgd/model/blas.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/tensor/tensor.hpp>
#include <dsgd/version.hpp>

#include <cstdio>

int main() {
  dsgd::device::cpu cpu;
  dsgd::tensor w(cpu, {2, 2}, dsgd::init::constant{2.f});
  dsgd::tensor g(cpu, {2, 2}, dsgd::init::constant{1.f});
  dsgd::optim::sgd opt{0.5f};
  dsgd::optim::sgd::state<dsgd::device::cpu> state(cpu, w.size());
  opt.apply(cpu, state, w.data(), g.data(), w.size());
  float c[4] = {};
  dsgd::model::blas<dsgd::device::cpu>::gemm(cpu, false, false, 2, 2, 2, 1.f, w.data(), 2, g.data(), 2, 0.f, c, 2);
  auto plan = dsgd::placement::round_robin{}.place({{"w", {2, 2}}, {"b", {2}}}, 2);
  bool ok = w.to_host()[0] == 1.5f && c[0] == 3.f && plan.shards()[1].ps_task == 1;
  std::printf("dsgd %d.%d.%d consumer %s\n", dsgd::version().major, dsgd::version().minor, dsgd::version().patch,
              ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
