// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// An allocator that adds every byte it allocates to a counter and subtracts what it frees: the
/// tables report their memory from it (bytes_used), measured rather than estimated.
// IWYU pragma: private, include <dsgd/dsgd.hpp>
#pragma once

#include <cstddef>
#include <memory>

namespace dsgd::embedding::detail {

/// std::allocator<T> that keeps `*counter` equal to the bytes it holds. Allocators that share a
/// counter compare equal. Not thread-safe: the counter is a plain integer, like the table that
/// owns it.
template <class T>
class counting_allocator {
 public:
  using value_type = T;

  explicit counting_allocator(std::size_t* counter) noexcept : counter_{counter} {}
  template <class U>
  counting_allocator(const counting_allocator<U>& other) noexcept : counter_{other.counter()} {}

  T* allocate(std::size_t n) {
    T* p = std::allocator<T>{}.allocate(n);
    *counter_ += n * sizeof(T);
    return p;
  }
  void deallocate(T* p, std::size_t n) noexcept {
    std::allocator<T>{}.deallocate(p, n);
    *counter_ -= n * sizeof(T);
  }

  std::size_t* counter() const noexcept { return counter_; }

  template <class U>
  friend bool operator==(const counting_allocator& a, const counting_allocator<U>& b) noexcept {
    return a.counter() == b.counter();
  }

 private:
  std::size_t* counter_;
};

}  // namespace dsgd::embedding::detail
