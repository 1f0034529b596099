// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Case 1 of the article: one machine, one device.
//
//   w (2x2, all 2) and b (2x2, all 5) are created on the CPU (where large parameters live when
//   they do not fit the GPU); w + b and w * b are computed on the device you pick.
//
//   with tf.device('/cpu:0'): w = ...; b = ...        dsgd::tensor w(cpu, {2, 2}, constant{2})
//   with tf.device('/gpu:0'): addwb = w + b           auto addwb = w.to(gpu) + b.to(gpu)
//
// Run:      ./01_single_device --device cpu        (or cuda:0, /gpu:0, /cpu:0 in a CUDA build)
// Expected: the NumPy-style prints of [[7. 7.] [7. 7.]] and [[10. 10.] [10. 10.]]; exit 0.
#include <dsgd/device/cpu.hpp>
#include <dsgd/device/parse.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/tensor/ops.hpp>
#include <dsgd/tensor/tensor.hpp>
#if DSGD_HAS_CUDA
#include <dsgd/device/cuda.cuh>
#endif

#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <string>

namespace {

// The computation, written once for any device.
template <dsgd::Device D>
void add_and_multiply_on(const D& device) {
  dsgd::device::cpu cpu;
  dsgd::tensor w(cpu, {2, 2}, dsgd::init::constant{2.f});  // the parameters live on the CPU
  dsgd::tensor b(cpu, {2, 2}, dsgd::init::constant{5.f});
  auto wd = w.to(device);  // the ops run on `device`
  auto bd = b.to(device);
  auto addwb = wd + bd;
  auto mutwb = wd * bd;
  std::printf("w + b on %s:\n%s\n", device.name().c_str(), dsgd::to_string(addwb).c_str());
  std::printf("w * b on %s:\n%s\n", device.name().c_str(), dsgd::to_string(mutwb).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  namespace po = boost::program_options;
  std::string device_string = "cpu";
  po::options_description options("usage: 01_single_device [--device cpu|cuda:N]");
  options.add_options()("device", po::value(&device_string)->value_name("D"),
                        "where w + b and w * b run: cpu, cuda:N, /gpu:N, /cpu:0 [cpu]")("help,h", "this text");
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, options), vm);
    if (vm.count("help")) return std::cout << options, 0;
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "01_single_device: " << e.what() << "\n" << options;
    return 2;
  }
  try {
    auto spec = dsgd::device::parse(device_string);
    if (spec.type == dsgd::device::spec::kind::cpu) {
      add_and_multiply_on(dsgd::device::cpu{});
    } else {
#if DSGD_HAS_CUDA
      add_and_multiply_on(dsgd::device::cuda(spec.index));
#else
      throw dsgd::error(dsgd::errc::device_unavailable, "device \"" + device_string +
                                                            "\": this build has no CUDA support (configure with "
                                                            "-DDSGD_ENABLE_CUDA=ON)");
#endif
    }
  } catch (const dsgd::error& e) {
    std::fprintf(stderr, "01_single_device: %s\n", e.what());
    return 1;
  }
  return 0;
}
