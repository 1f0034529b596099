// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// TF_CONFIG: the JSON that TensorFlow and the Kubernetes training operators put in each
/// process's environment to give it the cluster and its own role.
///
/// @code
/// {"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"],
///              "ps": ["host3:2222"]},
///  "task": {"type": "worker", "index": 1},
///  "environment": "cloud"}                       // optional
/// @endcode
/// Both TF1 style (worker 0 is the chief) and TF2 style (a separate one-task "chief" job) are
/// understood; see is_chief(). An "evaluator" task may be absent from "cluster", as in TF.
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/error.hpp>

#include <nlohmann/json.hpp>

#include <climits>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace dsgd::cluster {

/// Looks up one environment variable: its value, or nullopt when it is not set.
///
/// Every function that reads the environment takes one, so tests can pass a map instead of
/// mutating the real environment (see env_from_map()).
using env_lookup = std::function<std::optional<std::string>(const std::string& name)>;

/// @returns an env_lookup over this process's environment (std::getenv).
inline env_lookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    if (const char* value = std::getenv(name.c_str())) return std::string(value);
    return std::nullopt;
  };
}

/// @returns an env_lookup over a fixed set of variables (for tests and for launchers that build
/// the environment of a child process).
inline env_lookup env_from_map(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

/// Whether task `t` of `cluster` is the chief, which initialises variables, writes checkpoints and
/// summaries. The rule, the same as TensorFlow's (Estimator RunConfig, multi_worker_util):
///  1. a "chief" job exists (TF2 style): its task 0 is the chief, and no other task is;
///  2. else a "master" job exists (older TF1 Estimator clusters): master 0 is the chief;
///  3. else (TF1 style): worker 0 is the chief.
/// An "evaluator" is never the chief of training (RunConfig's rule; TF's multi_worker_util calls
/// an evaluator the chief of its own, separate evaluation cluster).
inline bool is_chief(const cluster_spec& cluster, const task_id& t) {
  if (cluster.has_job("chief")) return t.job == "chief" && t.index == 0;
  if (cluster.has_job("master")) return t.job == "master" && t.index == 0;
  return t.job == "worker" && t.index == 0;
}

/// A parsed TF_CONFIG: the cluster, this process's task, and the optional extra fields.
struct tf_config {
  cluster_spec cluster;     ///< "cluster"
  task_id task;             ///< "task": {"type", "index"}
  std::string environment;  ///< "environment" ("cloud", "google"...), empty when absent
  std::string rpc_layer;    ///< "rpc_layer" ("grpc"...), empty when absent

  /// @returns whether this process is the chief (see cluster::is_chief()).
  bool is_chief() const { return cluster::is_chief(cluster, task); }

  /// @returns whether this process is TF's side-car evaluator (not part of training).
  bool is_evaluator() const { return task.job == "evaluator"; }

  /// Parses TF_CONFIG text.
  ///
  /// "task.index" defaults to 0 when absent and may be an integer or a string of digits, as TF's
  /// RunConfig accepts. Unknown top-level and "task" fields are ignored, as in TF.
  /// @param where names the source in messages ("TF_CONFIG", a file name...).
  /// @throws dsgd::error(errc::bad_cluster_spec) naming the offending field: malformed JSON (with
  ///         line, column and byte), a missing "cluster", "task" or "task.type", a "task.type"
  ///         that is not a job of the cluster, a "task.index" out of range for that job, more than
  ///         one "chief" or "evaluator" task, or any cluster_spec validation error.
  static tf_config parse(std::string_view text, std::string_view where = "TF_CONFIG") {
    const std::string at = std::string(where) + ": ";
    const nlohmann::json j = detail::parse_json(text, where);
    const auto bad = [&](const std::string& what) { return error(errc::bad_cluster_spec, at + what); };
    if (!j.is_object()) throw bad("expected a JSON object, got " + detail::json_type(j));

    tf_config out;
    const auto cluster = j.find("cluster");
    if (cluster == j.end()) throw bad("missing field \"cluster\"");
    out.cluster = cluster_spec::from_json(*cluster, at + "field \"cluster\"");
    for (const char* single : {"chief", "evaluator"}) {
      if (out.cluster.has_job(single) && out.cluster.num_tasks(single) > 1) {
        throw bad("field \"cluster." + std::string(single) + "\" has " + std::to_string(out.cluster.num_tasks(single)) +
                  " tasks; there may be at most one " + single);
      }
    }

    const auto task = j.find("task");
    if (task == j.end()) throw bad("missing field \"task\"");
    if (!task->is_object()) throw bad("field \"task\" must be an object, got " + detail::json_type(*task));
    const auto type = task->find("type");
    if (type == task->end()) throw bad("missing field \"task.type\"");
    if (!type->is_string()) throw bad("field \"task.type\" must be a string, got " + detail::json_type(*type));
    out.task.job = type->get<std::string>();
    out.task.index = read_index(*task, bad);

    if (out.cluster.has_job(out.task.job)) {
      const std::size_t n = out.cluster.num_tasks(out.task.job);
      if (static_cast<std::size_t>(out.task.index) >= n) {
        throw bad("field \"task.index\" is " + std::to_string(out.task.index) + ", out of range for job \"" +
                  out.task.job + "\", which has " + std::to_string(n) + " task(s)");
      }
    } else if (out.task.job == "evaluator") {
      // TF runs the evaluator outside the training cluster; there is exactly one.
      if (out.task.index != 0) throw bad("field \"task.index\" of the evaluator must be 0");
    } else {
      std::string known;
      for (const auto& name : out.cluster.jobs()) known += (known.empty() ? "" : ", ") + name;
      throw bad("field \"task.type\" is \"" + out.task.job +
                "\", which is not a job of the cluster (jobs: " + (known.empty() ? "none" : known) + ")");
    }

    out.environment = read_string(j, "environment", bad);
    out.rpc_layer = read_string(j, "rpc_layer", bad);
    return out;
  }

  /// Reads and parses the TF_CONFIG environment variable.
  /// @returns nullopt when TF_CONFIG is unset or blank (TF treats both as "not distributed").
  /// @throws dsgd::error(errc::bad_cluster_spec) as parse() does.
  static std::optional<tf_config> from_environment(const env_lookup& env = process_environment()) {
    const auto text = env("TF_CONFIG");
    if (!text || text->find_first_not_of(" \t\r\n") == std::string::npos) return std::nullopt;
    return parse(*text, "TF_CONFIG");
  }

  /// @returns the JSON form; parse(to_json().dump()) gives back an equal tf_config.
  nlohmann::json to_json() const {
    nlohmann::json j{{"cluster", cluster.to_json()}, {"task", {{"type", task.job}, {"index", task.index}}}};
    if (!environment.empty()) j["environment"] = environment;
    if (!rpc_layer.empty()) j["rpc_layer"] = rpc_layer;
    return j;
  }

  friend bool operator==(const tf_config&, const tf_config&) = default;

  /// Writes the compact JSON form.
  friend std::ostream& operator<<(std::ostream& os, const tf_config& c) { return os << c.to_json().dump(); }

 private:
  template <class Bad>
  static int read_index(const nlohmann::json& task, const Bad& bad) {
    const auto index = task.find("index");
    if (index == task.end()) return 0;
    if (index->is_number_integer()) {
      const auto v = index->get<long long>();
      if (v < 0) throw bad("field \"task.index\" is " + std::to_string(v) + "; it must be non-negative");
      if (v > INT_MAX) throw bad("field \"task.index\" is " + std::to_string(v) + ", which is too large");
      return static_cast<int>(v);
    }
    if (index->is_string()) {
      const auto s = index->get<std::string>();
      device::detail::parse_failure failure;
      if (auto v = device::detail::parse_index(s, 0, "task index", failure)) return *v;
      throw bad("field \"task.index\" is \"" + s + "\": " + failure.reason + " (at column " +
                std::to_string(failure.column) + ")");
    }
    throw bad("field \"task.index\" must be a non-negative integer, got " + detail::json_type(*index));
  }

  template <class Bad>
  static std::string read_string(const nlohmann::json& j, const char* field, const Bad& bad) {
    const auto it = j.find(field);
    if (it == j.end() || it->is_null()) return {};
    if (!it->is_string()) {
      throw bad("field \"" + std::string(field) + "\" must be a string, got " + detail::json_type(*it));
    }
    return it->get<std::string>();
  }
};

}  // namespace dsgd::cluster
