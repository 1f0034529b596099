// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// device::cuda: one GPU and one CUDA stream; memory in thrust::device_vector, kernels on
/// Thrust's CUDA backend. Needs nvcc (hence .cuh); the umbrella header does not include it.
#pragma once

#include <dsgd/device/concepts.hpp>
#include <dsgd/device/detail/throw_on_cuda_error.cuh>
#include <dsgd/error.hpp>

#include <cuda_runtime_api.h>
#include <thrust/device_vector.h>
#include <thrust/system/cuda/execution_policy.h>

#include <cstddef>
#include <memory>
#include <string>

namespace dsgd::device {

namespace detail {

/// Makes GPU @p index current for a scope and restores the previous one on exit.
class scoped_device {
 public:
  explicit scoped_device(int index) {
    detail::throw_on_cuda_error(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != index)
      detail::throw_on_cuda_error(cudaSetDevice(index), ("cudaSetDevice(" + std::to_string(index) + ")").c_str());
    index_ = index;
  }
  ~scoped_device() {
    if (previous_ != index_) (void)cudaSetDevice(previous_);
  }
  scoped_device(const scoped_device&) = delete;
  scoped_device& operator=(const scoped_device&) = delete;

 private:
  int previous_ = 0;
  int index_ = 0;
};

/// Destroys a stream the cuda device created; leaves a borrowed one alone.
struct stream_deleter {
  bool owned = false;
  void operator()(cudaStream_t stream) const noexcept {
    if (owned && stream != nullptr) (void)cudaStreamDestroy(stream);
  }
};

}  // namespace detail

/// One GPU, addressed by its CUDA device index, and the stream that its kernels run on.
///
/// Streams. `cuda(i)` runs on GPU i's legacy default stream and makes no CUDA call (so a
/// default-constructed device costs nothing and cannot fail). `cuda::with_new_stream(i)` creates
/// a stream of its own, shared by all copies of that device and destroyed with the last one; it
/// is a *blocking* stream (cudaStreamDefault) unless other flags are given, so it stays ordered
/// with the legacy default stream that thrust::device_vector uses for its own allocation, fill
/// and host copies (tensor construction, to_host, assign): work queued through policy() is done
/// before a later to_host() reads it (with nvcc's default `--default-stream legacy`). Two
/// devices with their own streams overlap with each other.
/// `cuda(i, stream)` borrows a stream that the caller keeps alive.
///
/// Current device. policy(), synchronize() and copy_peer() select GPU i themselves. Allocating
/// a `vector` (constructing a tensor) uses the *current* CUDA device: with several GPUs, call
/// activate() before creating tensors on this one (with one GPU there is nothing to do).
///
/// @code
/// dsgd::device::cuda gpu = dsgd::device::cuda::with_new_stream(0);
/// gpu.activate();
/// dsgd::tensor<dsgd::device::cuda> w(gpu, {2, 2}, dsgd::init::constant{2.f});
/// @endcode
class cuda {
 public:
  template <class T>
  using vector = thrust::device_vector<T>;

  static constexpr bool is_host = false;

  /// GPU @p index on its legacy default stream. Makes no CUDA call.
  explicit cuda(int index = 0) noexcept : index_(index) {}

  /// GPU @p index on @p stream, which the caller owns and keeps alive while this device (or a
  /// copy of it) is in use.
  cuda(int index, cudaStream_t stream) : index_(index), stream_(stream, detail::stream_deleter{false}) {}

  /// @returns GPU @p index on a new stream created with @p flags (cudaStreamDefault or
  /// cudaStreamNonBlocking); copies share the stream, the last one destroys it.
  /// @throws dsgd::error in cuda_category() if the GPU does not exist or the stream cannot be
  /// created.
  static cuda with_new_stream(int index, unsigned flags = cudaStreamDefault) {
    detail::scoped_device on(index);
    cudaStream_t stream = nullptr;
    detail::throw_on_cuda_error(cudaStreamCreateWithFlags(&stream, flags),
                                ("cudaStreamCreateWithFlags on cuda:" + std::to_string(index)).c_str());
    cuda d(index);
    d.stream_ = std::shared_ptr<CUstream_st>(stream, detail::stream_deleter{true});
    return d;
  }

  /// @returns the CUDA device index.
  int index() const noexcept { return index_; }

  /// @returns the stream kernels run on (nullptr: the legacy default stream).
  cudaStream_t stream() const noexcept { return stream_.get(); }

  /// Makes this GPU the calling thread's current CUDA device (cudaSetDevice).
  /// @throws dsgd::error in cuda_category() if the GPU does not exist.
  void activate() const { detail::throw_on_cuda_error(cudaSetDevice(index_), ("cudaSetDevice on " + name()).c_str()); }

  /// @returns the Thrust execution policy for kernels on this device's stream, after making the
  /// GPU current. Algorithms that need no result on the host return without waiting: call
  /// synchronize() before reading results other than through device_vector / tensor copies.
  auto policy() const {
    activate();
    return thrust::cuda::par_nosync.on(stream());
  }

  /// Blocks until all work queued on this device's stream is complete.
  /// @throws dsgd::error in cuda_category() with the first asynchronous error of that work.
  void synchronize() const {
    detail::scoped_device on(index_);
    detail::throw_on_cuda_error(cudaStreamSynchronize(stream()), ("cudaStreamSynchronize on " + name()).c_str());
  }

  /// @returns "cuda:N", N the device index.
  std::string name() const { return "cuda:" + std::to_string(index_); }

  /// @returns the number of GPUs this process can use: 0 without a GPU or without a driver
  /// (never throws).
  static int count() noexcept {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return n;
  }

  /// Devices are equal when they name the same GPU and the same stream.
  friend bool operator==(const cuda& a, const cuda& b) noexcept {
    return a.index_ == b.index_ && a.stream() == b.stream();
  }

 private:
  int index_ = 0;
  std::shared_ptr<CUstream_st> stream_;  // null: the legacy default stream
};

static_assert(Device<cuda>);

/// Copies @p n elements from @p src in the memory of @p from to @p dst in the memory of @p to,
/// GPU to GPU with cudaMemcpyPeerAsync (direct where the GPUs allow it, else staged by the
/// driver; in both cases without a copy into a host container as tensor::to() makes).
///
/// The copy waits for the work already queued on @p from's stream and is queued on @p to's
/// stream, so later work there sees the data; it returns without waiting for the copy.
/// @throws dsgd::error in cuda_category() if a CUDA call fails.
template <class T>
void copy_peer(const cuda& from, const T* src, const cuda& to, T* dst, std::size_t n) {
  if (n == 0) return;
  detail::scoped_device on_from(from.index());
  cudaEvent_t ready = nullptr;
  detail::throw_on_cuda_error(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming),
                              "copy_peer: cudaEventCreateWithFlags");
  // Destroying the event right after the wait is queued is allowed: CUDA releases it once it
  // has completed.
  std::unique_ptr<CUevent_st, decltype(&cudaEventDestroy)> release(ready, &cudaEventDestroy);
  detail::throw_on_cuda_error(cudaEventRecord(ready, from.stream()), "copy_peer: cudaEventRecord");
  detail::scoped_device on_to(to.index());
  detail::throw_on_cuda_error(cudaStreamWaitEvent(to.stream(), ready, 0), "copy_peer: cudaStreamWaitEvent");
  detail::throw_on_cuda_error(cudaMemcpyPeerAsync(dst, to.index(), src, from.index(), n * sizeof(T), to.stream()),
                              ("copy_peer: cudaMemcpyPeerAsync " + from.name() + " -> " + to.name()).c_str());
}

/// Copies all of @p src (on @p from) into @p dst (on @p to), GPU to GPU; see the pointer form.
/// @throws dsgd::error(errc::shape_mismatch) if the sizes differ.
template <class T>
void copy_peer(const cuda& from, const cuda::vector<T>& src, const cuda& to, cuda::vector<T>& dst) {
  if (src.size() != dst.size())
    throw error(errc::shape_mismatch, "copy_peer " + from.name() + " -> " + to.name() + ": " +
                                          std::to_string(src.size()) + " elements into " + std::to_string(dst.size()));
  copy_peer(from, thrust::raw_pointer_cast(src.data()), to, thrust::raw_pointer_cast(dst.data()), src.size());
}

}  // namespace dsgd::device
