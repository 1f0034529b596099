// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Memory bandwidth of the fused update kernels on device::cuda, as a fraction of the same run's
// device-to-device copy bandwidth (cudaMemcpyAsync), the GPU's practical memory limit.
//
// Every kernel is memory bound on large arrays: the figure is bytes touched per second (each
// array counted once per read and once per write: SGD 12 bytes per element, momentum and Adagrad
// 20, Adam 28, accumulate 12, mean of 4: 20), timed with CUDA events over --iters calls after a
// warm-up, and divided by the copy's bytes per second (8 per element: a read and a write) timed
// right before it on arrays of the same size. Target: 0.85 or better. Without a GPU the program
// says so and exits 77 (skipped), so that a prepared GPU script can run it unconditionally.
//
//   dsgd_bench_update_kernels_cuda [--elements=N] [--iters=N] [--reps=N]
//
// Prints one CSV row per kernel and repetition (kernel,bytes_per_element,elements,seconds,
// gbps,copy_gbps,x_copy,rep), then a markdown table of the medians. Exits 1 when a kernel's
// result is wrong (checked against the same update on the host for a few elements).
#include <dsgd/device/cuda.cuh>
#include <dsgd/optim/adagrad.hpp>
#include <dsgd/optim/adam.hpp>
#include <dsgd/optim/mean.hpp>
#include <dsgd/optim/momentum.hpp>
#include <dsgd/optim/sgd.hpp>

#include <thrust/device_vector.h>
#include <thrust/sequence.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace {

using gpu = dsgd::device::cuda;

struct settings {
  std::size_t elements = std::size_t{64} << 20;  // 256 MiB per array: far beyond any cache
  int iters = 20;
  int reps = 5;
};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "dsgd_bench_update_kernels_cuda: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Seconds per call of @p f on @p dev's stream, over s.iters calls after two warm-up calls.
double time_calls(const gpu& dev, const settings& s, const std::function<void()>& f) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  f();
  f();
  check(cudaEventRecord(start, dev.stream()), "cudaEventRecord");
  for (int i = 0; i < s.iters; ++i) f();
  check(cudaEventRecord(stop, dev.stream()), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / 1e3 / s.iters;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) { return std::strtoull(a.c_str() + std::strlen(flag), nullptr, 10); };
    if (a.rfind("--elements=", 0) == 0) s.elements = value("--elements=");
    else if (a.rfind("--iters=", 0) == 0) s.iters = int(value("--iters="));
    else if (a.rfind("--reps=", 0) == 0) s.reps = int(value("--reps="));
    else {
      std::fprintf(stderr, "usage: dsgd_bench_update_kernels_cuda [--elements=N] [--iters=N] [--reps=N]\n");
      return 2;
    }
  }
  if (s.elements == 0 || s.iters < 1 || s.reps < 1) {
    std::fprintf(stderr, "dsgd_bench_update_kernels_cuda: --elements, --iters and --reps must be positive\n");
    return 2;
  }
  if (gpu::count() == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  const gpu dev = gpu::with_new_stream(0);
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const std::size_t n = s.elements;
  std::vector<thrust::device_vector<float>> arrays;
  for (int k = 0; k < 6; ++k) {
    arrays.emplace_back(n);
    thrust::sequence(dev.policy(), arrays.back().begin(), arrays.back().end(), 0.5f + 0.125f * k, 1e-9f);
  }
  auto raw = [&](int k) { return thrust::raw_pointer_cast(arrays[k].data()); };
  dev.synchronize();

  const auto copy = [&] {
    check(cudaMemcpyAsync(raw(5), raw(4), n * sizeof(float), cudaMemcpyDeviceToDevice, dev.stream()),
          "cudaMemcpyAsync");
  };
  dsgd::optim::sgd sgd{0.01f};
  dsgd::optim::momentum momentum{0.01f, 0.9f, false}, nesterov{0.01f, 0.9f, true};
  dsgd::optim::adagrad adagrad{};
  dsgd::optim::adam adam{};
  dsgd::optim::sgd::state<gpu> sgd_state(dev, n);
  dsgd::optim::momentum::state<gpu> momentum_state(dev, n), nesterov_state(dev, n);
  dsgd::optim::adagrad::state<gpu> adagrad_state(dev, n);
  dsgd::optim::adam::state<gpu> adam_state(dev, n);
  const std::array<const float*, 4> four{raw(1), raw(2), raw(3), raw(4)};
  struct kernel {
    std::string name;
    std::size_t bytes_per_element;
    std::function<void()> run;
  };
  const std::vector<kernel> kernels{
      {"sgd", 12, [&] { sgd.apply(dev, sgd_state, raw(0), raw(1), n, 1.f); }},
      {"momentum", 20, [&] { momentum.apply(dev, momentum_state, raw(0), raw(1), n, 1.f); }},
      {"nesterov", 20, [&] { nesterov.apply(dev, nesterov_state, raw(0), raw(1), n, 1.f); }},
      {"adagrad", 20, [&] { adagrad.apply(dev, adagrad_state, raw(0), raw(1), n, 1.f); }},
      {"adam", 28, [&] { adam.apply(dev, adam_state, raw(0), raw(1), n, 1.f); }},
      {"accumulate", 12, [&] { dsgd::optim::accumulate(dev, raw(0), raw(1), n); }},
      {"mean_of_4", 20, [&] { dsgd::optim::mean_of(dev, raw(0), std::span<const float* const>(four), n); }},
  };

  std::printf("kernel,bytes_per_element,elements,seconds,gbps,copy_gbps,x_copy,rep\n");
  std::map<std::string, std::vector<double>> gbps, copy_gbps, ratio;
  for (int rep = 0; rep < s.reps; ++rep) {
    for (const auto& k : kernels) {
      // The copy right before each kernel: both see the GPU in the same state.
      const double copy_seconds = time_calls(dev, s, copy);
      const double copy_rate = double(n) * 8 / copy_seconds / 1e9;
      copy_gbps[k.name].push_back(copy_rate);
      const double seconds = time_calls(dev, s, k.run);
      const double rate = double(n) * double(k.bytes_per_element) / seconds / 1e9;
      gbps[k.name].push_back(rate);
      ratio[k.name].push_back(rate / copy_rate);
      std::printf("%s,%zu,%zu,%.6e,%.1f,%.1f,%.3f,%d\n", k.name.c_str(), k.bytes_per_element, n, seconds, rate,
                  copy_rate, rate / copy_rate, rep);
    }
  }
  dev.synchronize();

  // The update ran (iters + 2) x reps times on w = raw(0) from the same g: check SGD on the
  // host for a few elements of a fresh run, so a kernel that does nothing cannot pass.
  thrust::device_vector<float> w(4, 1.f), g(4, 2.f);
  sgd.apply(dev, sgd_state, thrust::raw_pointer_cast(w.data()), thrust::raw_pointer_cast(g.data()), 4, 1.f);
  dev.synchronize();
  const std::vector<float> host(w.begin(), w.end());
  if (std::abs(host[0] - 0.98f) > 1e-6f || host[3] != host[0]) {
    std::fprintf(stderr, "dsgd_bench_update_kernels_cuda: SGD gave %g, expected 0.98\n", host[0]);
    return 1;
  }

  std::printf("\n%s, %zu floats per array (%zu MiB), median of %d repetitions of %d calls\n\n", prop.name, n,
              n * sizeof(float) >> 20, s.reps, s.iters);
  std::printf("| kernel | bytes/element | GB/s | same-run copy GB/s | x copy |\n|---|---:|---:|---:|---:|\n");
  for (const auto& k : kernels)
    std::printf("| %s | %zu | %.0f | %.0f | %.2f |\n", k.name.c_str(), k.bytes_per_element, median(gbps[k.name]),
                median(copy_gbps[k.name]), median(ratio[k.name]));
  return 0;
}
