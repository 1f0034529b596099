// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// What train::worker does with a set of variable views (tensor/view.hpp): checks it against
/// the placement of create_variables() and hands the client the views' own memory.
#pragma once

#include <dsgd/error.hpp>
#include <dsgd/placement/plan.hpp>
#include <dsgd/tensor/view.hpp>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::train::detail {

/// The variables placement sees for @p views: their names ("var<i>" for none) and shapes.
/// @throws dsgd::error as check_view() for a view without values or with sizes that disagree
inline std::vector<placement::variable_info> infos_of(variable_views views, std::string_view call) {
  std::vector<placement::variable_info> info;
  info.reserve(views.size());
  for (std::size_t i = 0; i < views.size(); ++i) {
    check_view(views[i], i, call);
    info.push_back({views[i].name.empty() ? "var" + std::to_string(i) : views[i].name, views[i].shape});
  }
  return info;
}

/// Checks that @p views are still the variables @p placed (count, names, sizes), for @p call;
/// with @p need_gradients, that each not skipped by @p skip has its gradients.
/// @throws dsgd::error errc::shape_mismatch naming the call, the variable, what was placed and
///         what is found; errc::invalid_argument (check_view()) for a null or empty buffer
template <class Skip>
void check_placed(const std::vector<placement::variable_info>& placed, variable_views views, std::string_view call,
                  bool need_gradients, Skip skip) {
  if (views.size() != placed.size()) {
    std::string names;
    for (const auto& p : placed) names += (names.empty() ? "" : ", ") + p.name;
    throw error(errc::shape_mismatch, std::string(call) + ": " + std::to_string(views.size()) + " views for the " +
                                          std::to_string(placed.size()) + " variables placed by create_variables() (" +
                                          names + ")");
  }
  for (std::size_t i = 0; i < views.size(); ++i) {
    const auto& v = views[i];
    check_view(v, i, call, need_gradients && !skip(i));
    const auto& p = placed[i];
    if (!v.name.empty() && v.name != p.name)
      throw error(errc::shape_mismatch, std::string(call) + ": view " + std::to_string(i) + " is named '" + v.name +
                                            "', but the variable placed there is '" + p.name +
                                            "' (views in another order?)");
    if (v.values.size() != p.shape.elements())
      throw error(errc::shape_mismatch, std::string(call) + ": " + dsgd::detail::view_name(v, i) + " has " +
                                            std::to_string(v.values.size()) + " values; it was placed with shape " +
                                            p.shape.to_string() + " (" + std::to_string(p.shape.elements()) +
                                            " elements)");
  }
}

/// The views' values as the spans a pull writes (an empty one for a variable @p skip names).
template <class Skip>
std::span<const std::span<float>> value_spans(variable_views views, std::vector<std::span<float>>& out, Skip skip) {
  out.resize(views.size());
  for (std::size_t v = 0; v < views.size(); ++v) out[v] = skip(v) ? std::span<float>() : views[v].values;
  return out;
}

/// The views' gradients as the spans a push reads (an empty one for a variable @p skip names).
template <class Skip>
std::span<const std::span<const float>> gradient_spans(variable_views views, std::vector<std::span<const float>>& out,
                                                       Skip skip) {
  out.resize(views.size());
  for (std::size_t v = 0; v < views.size(); ++v) out[v] = skip(v) ? std::span<const float>() : views[v].gradients;
  return out;
}

}  // namespace dsgd::train::detail
