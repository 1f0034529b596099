// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// embedding::any_initializer: the RowInitializer a table_spec names, chosen at run time: one
/// type holding any of the shipped initializers (embedding/initializer.hpp), so a ps makes
/// every table with one compiled row_table. Its rows are bit for bit those of the initializer
/// it holds; the choice costs one switch per row, none per element.
#pragma once

#include <dsgd/embedding/initializer.hpp>
#include <dsgd/embedding/table_spec.hpp>

#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <variant>

namespace dsgd::embedding {

/// The initializer an initializer_spec names (RowInitializer).
///
/// @code
/// dsgd::embedding::any_initializer init(dsgd::embedding::initializer_spec::uniform(-0.1f, 0.1f, 7));
/// init(key, row);  // == initializer::uniform{-0.1f, 0.1f, 7}(key, row)
/// @endcode
class any_initializer {
 public:
  using variant_type =
      std::variant<initializer::zeros, initializer::constant, initializer::uniform, initializer::truncated_normal>;

  /// initializer::zeros.
  any_initializer() = default;
  /// The initializer @p spec names, with its settings.
  /// @throws dsgd::error (errc::invalid_argument) naming the first bad setting (validate()).
  explicit any_initializer(const initializer_spec& spec) : init_(make(spec)) {}
  /// Holds @p init.
  template <class I>
  requires std::is_constructible_v<variant_type, I>
  explicit any_initializer(I init) noexcept : init_(std::move(init)) {}

  /// Writes the initial row of @p key to @p row, as the held initializer does.
  void operator()(std::uint64_t key, std::span<float> row) const {
    std::visit([&](const auto& i) { i(key, row); }, init_);
  }
  /// @returns element @p column of the initial row of @p key.
  float at(std::uint64_t key, std::uint64_t column) const {
    return std::visit([&](const auto& i) { return i.at(key, column); }, init_);
  }

  /// @returns the spec of the held initializer.
  initializer_spec spec() const {
    return std::visit([](const auto& i) { return initializer_spec::of(i); }, init_);
  }
  /// @returns the held initializer if it is an @p I, else nullptr.
  template <class I>
  const I* get_if() const noexcept {
    return std::get_if<I>(&init_);
  }

 private:
  static variant_type make(const initializer_spec& spec) {
    spec.validate();
    using kind = initializer_spec::kind;
    switch (spec.initializer) {
      case kind::constant:
        return initializer::constant{spec.value};
      case kind::uniform:
        return initializer::uniform{spec.low, spec.high, spec.seed};
      case kind::truncated_normal:
        return initializer::truncated_normal{spec.mean, spec.stddev, spec.seed};
      case kind::zeros:
        break;
    }
    return initializer::zeros{};
  }

  variant_type init_;
};

static_assert(RowInitializer<any_initializer>);

}  // namespace dsgd::embedding
