// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// embedding::any_admission: the AdmissionPolicy an admission_spec names, chosen at run time:
/// one type holding any of the shipped policies (embedding/admission.hpp), state included, so a
/// ps makes every table with one compiled row_table. It admits exactly the keys the policy it
/// holds admits, and reports that policy's bytes_used().
#pragma once

#include <dsgd/embedding/admission.hpp>
#include <dsgd/embedding/table_spec.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <variant>

namespace dsgd::embedding {

/// The admission policy an admission_spec names (AdmissionPolicy). Move-only, as
/// admission::by_count is.
///
/// @code
/// dsgd::embedding::any_admission a(dsgd::embedding::admission_spec::by_count(3));
/// a.admit(key, step);  // false, false, then true on the third sighting
/// @endcode
class any_admission {
 public:
  using variant_type = std::variant<admission::always, admission::by_count, admission::by_probability>;

  /// admission::always.
  any_admission() = default;
  /// The policy @p spec names, with its settings and empty state.
  /// @throws dsgd::error (errc::invalid_argument) naming the first bad setting.
  explicit any_admission(const admission_spec& spec) : admit_(make(spec)) {}
  /// Holds @p admit (and its state).
  template <class A>
  requires std::is_constructible_v<variant_type, A&&> &&
      (!std::is_same_v<std::remove_cvref_t<A>, any_admission>)explicit any_admission(A&& admit) noexcept
      : admit_(std::forward<A>(admit)) {}

  /// As the held policy's admit().
  bool admit(std::uint64_t key, std::uint64_t step) {
    return std::visit([&](auto& a) { return a.admit(key, step); }, admit_);
  }
  /// @returns the held policy's heap bytes.
  std::size_t bytes_used() const noexcept {
    return std::visit([](const auto& a) -> std::size_t { return a.bytes_used(); }, admit_);
  }
  /// The held policy's own validate(), where it has one (row_table calls it).
  /// @throws dsgd::error (errc::invalid_argument)
  void validate() const {
    std::visit(
        [](const auto& a) {
          if constexpr (requires { a.validate(); }) a.validate();
        },
        admit_);
  }

  /// @returns the spec of the held policy (its settings, not its state).
  admission_spec spec() const {
    return std::visit([](const auto& a) { return admission_spec::of(a); }, admit_);
  }
  /// @returns the held policy if it is an @p A, else nullptr (by_count's pending_count(),
  /// pending(), decays()).
  template <class A>
  const A* get_if() const noexcept {
    return std::get_if<A>(&admit_);
  }

 private:
  static variant_type make(const admission_spec& spec) {
    spec.validate();
    using kind = admission_spec::kind;
    switch (spec.admission) {
      case kind::by_count:
        return variant_type(std::in_place_type<admission::by_count>,
                            admission::by_count::options{.count = spec.count,
                                                         .max_pending = static_cast<std::size_t>(spec.max_pending)});
      case kind::by_probability:
        return admission::by_probability{spec.probability, spec.seed};
      case kind::always:
        break;
    }
    return admission::always{};
  }

  variant_type admit_;
};

static_assert(AdmissionPolicy<any_admission>);

}  // namespace dsgd::embedding
