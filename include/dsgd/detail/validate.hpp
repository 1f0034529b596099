// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Helpers for the validate() of each options struct: a bad field is reported by its whole
/// path from the struct the user filled in ("trainer_options.connection.chunk_bytes"), before
/// any I/O starts (CUTLASS's can_implement, done once).
#pragma once

#include <dsgd/error.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace dsgd::detail {

/// Throws errc::invalid_argument naming @p path.field and what it must be.
[[noreturn]] inline void bad_option(std::string_view path, std::string_view field, std::string_view must) {
  throw error(errc::invalid_argument, std::string(path) + "." + std::string(field) + ": " + std::string(must));
}

/// Requires @p value > 0 (sizes, counts).
template <class T>
void require_positive(T value, std::string_view path, std::string_view field) {
  if (!(value > T{})) bad_option(path, field, "must be greater than 0");
}

/// Requires a deadline > 0: every wait has one (a zero or negative deadline would fail at once).
template <class Rep, class Period>
void require_deadline(std::chrono::duration<Rep, Period> d, std::string_view path, std::string_view field) {
  if (d.count() <= 0) bad_option(path, field, "must be a positive duration (every wait has a deadline)");
}

}  // namespace dsgd::detail
