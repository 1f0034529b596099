// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// compress::codec: any Compressor, the shipped ones or a user's, chosen at run time.
#pragma once

#include <dsgd/compress/concepts.hpp>
#include <dsgd/compress/none.hpp>

#include <concepts>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace dsgd::compress {

/// One Compressor, whichever type it is, as a value: what a selection holds per variable and
/// what the worker and the ps call. The choice is made once per message (one virtual call),
/// never per element: each compressor's loops are its own. Copies share the (immutable)
/// compressor. Default: compress::none.
/// @code
///   compress::codec c = compress::top_k{0.01f};  // or my_compressor{...}: any Compressor
///   c.describe();                                 // "top_k(0.01)"
/// @endcode
class codec {
 public:
  codec() : codec(none{}) {}

  /// Holds a copy of @p c.
  template <class C>
  requires(!std::same_as<std::remove_cvref_t<C>, codec> && Compressor<std::remove_cvref_t<C>>)
      codec(C&& c)  // NOLINT(google-explicit-constructor): a Compressor is a codec
      : held_(std::make_shared<const held<std::remove_cvref_t<C>>>(std::forward<C>(c))) {}

  /// A type that is no Compressor is refused here, with a message that names the concept (GCC
  /// says only "could not convert" when a constrained constructor does not apply).
  template <class C>
  requires(!std::same_as<std::remove_cvref_t<C>, codec> && !Compressor<std::remove_cvref_t<C>>)
      codec(C&&) {  // NOLINT(google-explicit-constructor)
    static_assert(Compressor<std::remove_cvref_t<C>>,
                  "this type does not satisfy dsgd::Compressor: it needs name, uses_residual, describe, max_bytes, "
                  "encode, check and decode_add (compress/concepts.hpp)");
  }

  /// @returns the Compressor's name ("top_k"), as it is registered.
  std::string_view name() const noexcept { return held_->name(); }
  /// @returns its name and parameters ("top_k(0.01)"), as registration compares them.
  std::string describe() const { return held_->describe(); }
  /// @returns whether it keeps an error-feedback residual (top_k, two_bit).
  bool uses_residual() const noexcept { return held_->uses_residual(); }
  /// @returns whether it is compress::none: a plain push, sent as the gradient's floats.
  bool is_none() const noexcept { return get_if<none>() != nullptr; }
  /// Compressor::max_bytes: the largest payload of @p n elements.
  std::size_t max_bytes(std::size_t n) const { return held_->max_bytes(n); }
  /// Compressor::encode.
  std::size_t encode(std::span<const float> grad, std::span<float> residual, std::span<std::byte> out) const {
    return held_->encode(grad, residual, out);
  }
  /// Compressor::check. @throws dsgd::error(errc::bad_frame) naming @p what
  void check(std::span<const std::byte> in, std::size_t n, std::string_view what) const { held_->check(in, n, what); }
  /// Compressor::decode_add (after check()).
  void decode_add(std::span<const std::byte> in, float* acc, std::size_t n) const { held_->decode_add(in, acc, n); }

  /// @returns the held compressor if it is a @p C, else null.
  template <Compressor C>
  const C* get_if() const noexcept {
    const auto* h = dynamic_cast<const held<C>*>(held_.get());
    return h ? &h->compressor : nullptr;
  }

 private:
  struct base {
    virtual ~base() = default;
    virtual std::string_view name() const noexcept = 0;
    virtual std::string describe() const = 0;
    virtual bool uses_residual() const noexcept = 0;
    virtual std::size_t max_bytes(std::size_t n) const = 0;
    virtual std::size_t encode(std::span<const float>, std::span<float>, std::span<std::byte>) const = 0;
    virtual void check(std::span<const std::byte>, std::size_t, std::string_view) const = 0;
    virtual void decode_add(std::span<const std::byte>, float*, std::size_t) const = 0;
  };
  template <class C>
  struct held final : base {
    template <class A>
    explicit held(A&& c) : compressor(std::forward<A>(c)) {}
    std::string_view name() const noexcept override { return C::name; }
    std::string describe() const override { return compressor.describe(); }
    bool uses_residual() const noexcept override { return C::uses_residual; }
    std::size_t max_bytes(std::size_t n) const override { return compressor.max_bytes(n); }
    std::size_t encode(std::span<const float> g, std::span<float> r, std::span<std::byte> out) const override {
      return compressor.encode(g, r, out);
    }
    void check(std::span<const std::byte> in, std::size_t n, std::string_view what) const override {
      compressor.check(in, n, what);
    }
    void decode_add(std::span<const std::byte> in, float* acc, std::size_t n) const override {
      compressor.decode_add(in, acc, n);
    }
    C compressor;
  };

  std::shared_ptr<const base> held_;
};

}  // namespace dsgd::compress
