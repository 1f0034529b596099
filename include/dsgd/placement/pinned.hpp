// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// placement::pinned: variables pinned to ps tasks by device string, as TensorFlow's
/// `with tf.device('/job:ps/task:0'):` does; a fallback placement places the rest.
///
/// Named `pinned` for what it does to a variable (pins it to a task, TF's own word for an op
/// given a device), not after device strings: `device::` is already the compute device family,
/// and a `by_device` would read as one more of those.
#pragma once

#include <dsgd/cluster/device_spec.hpp>
#include <dsgd/placement/concepts.hpp>
#include <dsgd/placement/round_robin.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dsgd::placement {

/// One rule of placement::pinned: which variables, and the ps task that holds them.
struct pin {
  /// A variable's exact name ("softmax/weights"), or a scope: a prefix ending in '/' ("emb/")
  /// that matches every variable whose name begins with it. A name without a trailing '/' is
  /// never a prefix, so "w" does not catch "w_1", nor "dense" catch "dense0/kernel".
  std::string name;
  /// The task, as TF writes it: "/job:ps/task:1", or "/task:1" (job ps understood). Replica 0
  /// and a local device ("/job:ps/task:1/device:CPU:0") are allowed and ignored: the ps task
  /// holds the variable wherever its server keeps it.
  std::string device;

  /// @returns true when the rule ends in '/' and so matches by prefix.
  bool is_scope() const noexcept { return !name.empty() && name.back() == '/'; }

  /// @returns true when this rule applies to a variable called @p variable.
  bool matches(std::string_view variable) const noexcept {
    if (is_scope()) return variable.size() > name.size() && variable.starts_with(name);
    return variable == name;
  }

  friend bool operator==(const pin&, const pin&) = default;
};

/// Variables pinned by name to ps tasks; every other variable where @p Fallback puts it.
///
/// @code
/// dsgd::placement::pinned<dsgd::placement::greedy_by_bytes> p{
///     .pins = {{"softmax/weights", "/job:ps/task:1"}, {"emb/", "/job:ps/task:0"}}, .fallback = {}};
/// @endcode
///
/// Which rule decides a variable: a rule naming it exactly wins over every scope; among the
/// scopes that match, the longest wins (as the innermost of nested `tf.device` blocks does).
/// The order of the rules does not matter. A pinned variable is held whole by its task, even
/// when the fallback (placement::partitioned) would cut it into slices.
///
/// The fallback places *all* the variables over all the ps tasks, pinned ones included, and the
/// pinned ones are then moved to their tasks; that is what TF's replica_device_setter does (its
/// ps_strategy is asked for every variable, and an explicit task then overrides the answer). So
/// pinning a variable never moves another: the rest sit exactly where the fallback alone would
/// put them, and a balancing fallback (greedy_by_bytes) counts a pinned variable where it would
/// have put it, not where it is.
///
/// Every rule is checked, used or not: its device string must parse, name job ps (or no job),
/// replica 0 (or none) and a task below the number of ps tasks; otherwise place() throws
/// dsgd::error (errc::bad_device_string for a string that does not parse, errc::invalid_argument
/// for the rest) naming the variable (or the rule when it decides none), the device string and
/// the number of ps tasks. Two rules of the same name that name different tasks are an error.
/// A rule that decides no variable is otherwise ignored, as TF ignores a device scope around no
/// variable; unused() lists them, to log.
///
/// The plan is a pure function of the variables, the ps count and the rules: every worker
/// computes the same plan and fingerprint.
template <Placement Fallback = round_robin>
struct pinned {
  std::vector<pin> pins;  ///< the rules, in any order
  Fallback fallback{};    ///< places the variables no rule decides

  /// @returns the index in `pins` of the rule that decides variable @p name, or nullopt.
  std::optional<std::size_t> rule_for(std::string_view name) const noexcept {
    std::optional<std::size_t> scope;
    for (std::size_t k = 0; k < pins.size(); ++k) {
      if (!pins[k].matches(name)) continue;
      if (!pins[k].is_scope()) return k;  // exact wins; equal duplicates name the same task
      if (!scope || pins[k].name.size() > pins[*scope].name.size()) scope = k;
    }
    return scope;
  }

  /// @returns the rules that decide none of @p variables (shadowed ones included), in order.
  std::vector<pin> unused(const std::vector<variable_info>& variables) const {
    std::vector<bool> used(pins.size(), false);
    for (const auto& v : variables)
      if (auto k = rule_for(v.name)) used[*k] = true;
    std::vector<pin> out;
    for (std::size_t k = 0; k < pins.size(); ++k)
      if (!used[k]) out.push_back(pins[k]);
    return out;
  }

  /// @returns the ps task each rule names, in the order of `pins`.
  /// @throws dsgd::error as the class comment says.
  std::vector<std::size_t> tasks(const std::vector<variable_info>& variables, std::size_t ps_tasks) const {
    std::vector<std::size_t> out;
    out.reserve(pins.size());
    for (std::size_t k = 0; k < pins.size(); ++k) out.push_back(task_of(k, variables, ps_tasks));
    for (std::size_t k = 0; k < pins.size(); ++k)
      for (std::size_t j = k + 1; j < pins.size(); ++j)
        if (pins[k].name == pins[j].name && out[k] != out[j])
          throw error(errc::invalid_argument, "placement::pinned: the rule \"" + pins[k].name +
                                                  "\" is given twice, pinned to \"" + pins[k].device + "\" and to \"" +
                                                  pins[j].device + "\"; keep one");
    return out;
  }

  plan place(const std::vector<variable_info>& variables, std::size_t ps_tasks) const {
    detail::check_ps_tasks(ps_tasks, "placement::pinned");
    const auto task = tasks(variables, ps_tasks);
    const plan base = fallback.place(variables, ps_tasks);
    std::vector<std::vector<shard>> by_variable(variables.size());
    for (const auto& s : base.shards())
      if (s.variable < variables.size()) by_variable[s.variable].push_back(s);
    std::vector<shard> shards;
    shards.reserve(base.shards().size());
    for (std::size_t i = 0; i < variables.size(); ++i) {
      if (auto k = rule_for(variables[i].name)) {
        shards.push_back({i, task[*k], 0, variables[i].shape.elements()});
      } else {
        shards.insert(shards.end(), by_variable[i].begin(), by_variable[i].end());
      }
    }
    return plan(variables, ps_tasks, std::move(shards));
  }

 private:
  // Validates rule k against a cluster of ps_tasks ps tasks; returns its task.
  std::size_t task_of(std::size_t k, const std::vector<variable_info>& variables, std::size_t ps_tasks) const {
    const pin& p = pins[k];
    const auto fail = [&](errc e, const std::string& problem, const std::string& detail = {}) {
      std::string who;
      for (const auto& v : variables) {
        if (rule_for(v.name) != k) continue;
        who = "variable \"" + v.name + "\"";
        if (p.is_scope()) who += " (by the rule \"" + p.name + "\")";
        break;
      }
      if (who.empty()) who = "the rule \"" + p.name + "\" (which pins no variable)";
      const std::string last = "\"/job:ps/task:" + std::to_string(ps_tasks - 1) + "\"";
      const std::string holds =
          ps_tasks == 1 ? "1 ps task, " + last : std::to_string(ps_tasks) + " ps tasks, \"/job:ps/task:0\" to " + last;
      return error(e, "placement::pinned: " + who + " is pinned to \"" + p.device + "\", " + problem +
                          "; this cluster has " + holds + (detail.empty() ? "" : "\n" + detail));
    };
    if (p.name.empty())
      throw error(errc::invalid_argument, "placement::pinned: a rule pinning to \"" + p.device +
                                              "\" has an empty name; give a variable's name or a scope such as "
                                              "\"emb/\"");
    cluster::device_spec spec;
    try {
      spec = cluster::device_spec::parse(p.device);
    } catch (const error& e) {
      throw fail(errc::bad_device_string, "which does not parse", e.what());
    }
    if (spec.job && *spec.job != "ps")
      throw fail(errc::invalid_argument, "which names job \"" + *spec.job + "\", not ps (variables live on ps tasks)");
    if (spec.replica && *spec.replica != 0)
      throw fail(errc::invalid_argument,
                 "which names replica " + std::to_string(*spec.replica) + "; a dsgd cluster has replica 0 only");
    if (!spec.task) throw fail(errc::invalid_argument, "which names no task; write \"/job:ps/task:k\"");
    if (*spec.task < 0 || static_cast<std::size_t>(*spec.task) >= ps_tasks)
      throw fail(errc::invalid_argument, "which names task " + std::to_string(*spec.task));
    return static_cast<std::size_t>(*spec.task);
  }
};

static_assert(Placement<pinned<>>);

}  // namespace dsgd::placement
