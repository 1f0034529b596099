// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The allocation tracker and failure report of fuzz_support.hpp. Under a sanitizer the
// tracker uses the sanitizer's malloc hook (the sanitizer owns operator new); otherwise it
// replaces the global operator new, which also refuses any single allocation above a hard cap
// with std::bad_alloc, so that a decoder that trusts a length field fails here, visibly,
// instead of paging in gigabytes.
#include "fuzz_support.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DSGD_FUZZ_SANITIZER_HOOKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define DSGD_FUZZ_SANITIZER_HOOKS 1
#endif
#endif

#ifdef DSGD_FUZZ_SANITIZER_HOOKS
#if __has_include(<sanitizer/allocator_interface.h>)
#include <sanitizer/allocator_interface.h>
#else
// GCC's runtimes export the hook but GCC ships no header declaring it.
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, std::size_t),
                                                         void (*free_hook)(const volatile void*));
#endif
#endif

namespace dsgd::fuzz {

// Records one allocation of @p size bytes (called from the hooks below, so never allocates).
void note(std::size_t size) noexcept;

namespace {

std::atomic<std::size_t> largest{0};
std::span<const std::uint8_t> current;

void print_input() {
  std::fprintf(stderr, "input (%zu bytes):", current.size());
  for (std::size_t i = 0; i < current.size(); ++i)
    std::fprintf(stderr, "%s%02x", i % 32 == 0 ? "\n  " : " ", current[i]);
  std::fprintf(stderr, "\n");
}

#ifdef DSGD_FUZZ_SANITIZER_HOOKS
void on_malloc(const volatile void*, std::size_t size) { note(size); }
void on_free(const volatile void*) {}
[[maybe_unused]] const bool hooks_installed = [] {
  __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
  return true;
}();
#endif

}  // namespace

void note(std::size_t size) noexcept {
  auto seen = largest.load(std::memory_order_relaxed);
  while (size > seen && !largest.compare_exchange_weak(seen, size, std::memory_order_relaxed)) {
  }
}

void fail(std::string_view what) {
  std::fprintf(stderr, "dsgd fuzz: invariant broken: %.*s\n", static_cast<int>(what.size()), what.data());
  print_input();
  std::abort();
}

void begin_input(std::span<const std::uint8_t> input) {
  current = input;
  largest.store(0, std::memory_order_relaxed);
}

void end_input(std::size_t fixed_bytes, std::size_t per_input_byte) {
  const auto limit = fixed_bytes + per_input_byte * current.size();
  const auto seen = largest.load(std::memory_order_relaxed);
  if (seen > limit)
    fail("one allocation of " + std::to_string(seen) + " bytes for an input of " + std::to_string(current.size()) +
         " bytes (allowed: " + std::to_string(limit) + ")");
}

}  // namespace dsgd::fuzz

#ifndef DSGD_FUZZ_SANITIZER_HOOKS
// Replacements of the global allocation and deallocation functions (all forms, so that each
// block is freed by the function that matches its allocation).
namespace {

constexpr std::size_t hard_cap = std::size_t{256} << 20;

void* allocate(std::size_t size, std::size_t align, bool nothrow) {
  dsgd::fuzz::note(size);
  if (size > hard_cap) {
    if (nothrow) return nullptr;
    throw std::bad_alloc();
  }
  if (size == 0) size = 1;
  void* p = align <= alignof(std::max_align_t) ? std::malloc(size)
                                               : std::aligned_alloc(align, (size + align - 1) / align * align);
  if (p == nullptr && !nothrow) throw std::bad_alloc();
  return p;
}

constexpr std::size_t plain = alignof(std::max_align_t);

}  // namespace

void* operator new(std::size_t n) { return allocate(n, plain, false); }
void* operator new[](std::size_t n) { return allocate(n, plain, false); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, plain, true); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, plain, true); }
void* operator new(std::size_t n, std::align_val_t a) { return allocate(n, static_cast<std::size_t>(a), false); }
void* operator new[](std::size_t n, std::align_val_t a) { return allocate(n, static_cast<std::size_t>(a), false); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a), true);
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, static_cast<std::size_t>(a), true);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
#endif
