// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// cluster_spec: the jobs of a cluster ("ps", "worker", ...), each a list of task addresses.
///
/// The counterpart of TensorFlow's ClusterSpec. It is built in code, from JSON in TF's format
/// (`{"worker": ["host:port", ...], "ps": [...]}`), or from a JSON file, and it is validated on
/// construction: job names match [A-Za-z][A-Za-z0-9_]*, no job is empty, every address is
/// "host:port" (IPv6 as "[::1]:2222") with a port in 1-65535, and no two tasks share an address.
/// Any violation throws dsgd::error(errc::bad_cluster_spec) naming the job, the task index and,
/// for a bad address, the column of the offending character.
#pragma once

#include <dsgd/cluster/device_spec.hpp>
#include <dsgd/device/parse.hpp>
#include <dsgd/error.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace dsgd::cluster {

/// The network address a task listens on.
struct task_address {
  std::string host;        ///< host name, IPv4 address, or IPv6 address without brackets
  std::uint16_t port = 0;  ///< TCP port, 1-65535

  /// @returns "host:port", with brackets around an IPv6 host ("[::1]:2222").
  std::string to_string() const {
    const bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
  }

  /// Parses "host:port" or "[v6]:port".
  /// @throws dsgd::error(errc::bad_cluster_spec) with the column of the offending character.
  static task_address parse(std::string_view text);

  friend bool operator==(const task_address&, const task_address&) = default;

  /// Writes to_string().
  friend std::ostream& operator<<(std::ostream& os, const task_address& a) { return os << a.to_string(); }
};

/// One task of a cluster: a job name and an index into that job.
struct task_id {
  std::string job;  ///< "ps", "worker", "chief", ...
  int index = 0;    ///< position in the job's address list

  /// @returns the short form "ps:0".
  std::string to_string() const { return job + ":" + std::to_string(index); }

  /// @returns the device-string form "/job:ps/task:0" (see <dsgd/cluster/device_spec.hpp>).
  std::string device_string() const { return "/job:" + job + "/task:" + std::to_string(index); }

  /// @returns the device_spec naming this task, with no replica and no local device.
  device_spec to_device_spec() const { return device_spec{job, std::nullopt, index, std::nullopt}; }

  friend auto operator<=>(const task_id&, const task_id&) = default;

  /// Writes to_string().
  friend std::ostream& operator<<(std::ostream& os, const task_id& t) { return os << t.to_string(); }
};

namespace detail {

/// Non-throwing address parser; on failure fills `failure` (column into `text`).
inline std::optional<task_address> try_parse_address(std::string_view text, device::detail::parse_failure& failure) {
  using device::detail::describe_char;
  using device::detail::is_alpha;
  using device::detail::is_digit;
  const auto fail = [&](std::size_t column, std::string reason) {
    failure = {column, std::move(reason)};
    return std::nullopt;
  };
  if (text.empty()) return fail(0, "empty address; expected \"host:port\"");
  std::string_view host;
  std::size_t port_begin = 0;
  if (text[0] == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) return fail(text.size(), "missing ']' after the IPv6 address");
    host = text.substr(1, close - 1);
    if (host.empty()) return fail(1, "empty host between '[' and ']'");
    for (std::size_t i = 0; i < host.size(); ++i) {
      const char c = host[i];
      if (!is_digit(c) && !is_alpha(c) && c != ':' && c != '.' && c != '%') {
        return fail(1 + i, "invalid character " + describe_char(c) + " in IPv6 address");
      }
    }
    if (close + 1 >= text.size()) return fail(close + 1, "missing port; expected \":port\" after ']'");
    if (text[close + 1] != ':') {
      return fail(close + 1, "expected ':' after ']', got " + describe_char(text[close + 1]));
    }
    port_begin = close + 2;
  } else {
    const std::size_t colon = text.find(':');
    if (colon == std::string_view::npos) return fail(text.size(), "missing port; expected \"host:port\"");
    if (text.find(':', colon + 1) != std::string_view::npos) {
      return fail(0, "an IPv6 address needs brackets, as in \"[::1]:2222\"");
    }
    host = text.substr(0, colon);
    if (host.empty()) return fail(0, "empty host before ':'");
    for (std::size_t i = 0; i < host.size(); ++i) {
      const char c = host[i];
      if (!is_digit(c) && !is_alpha(c) && c != '.' && c != '-' && c != '_') {
        return fail(i, "invalid character " + describe_char(c) + " in host name");
      }
    }
    port_begin = colon + 1;
  }
  const std::string_view port = text.substr(port_begin);
  if (port.empty()) return fail(port_begin, "missing port after ':'");
  unsigned long value = 0;
  for (std::size_t i = 0; i < port.size(); ++i) {
    if (!is_digit(port[i])) {
      return fail(port_begin + i, "invalid character " + describe_char(port[i]) + " in port; expected digits");
    }
    if (value <= 65535) value = value * 10 + static_cast<unsigned long>(port[i] - '0');
  }
  if (value == 0) return fail(port_begin, "port 0 is not allowed; every task needs a fixed port");
  if (value > 65535) return fail(port_begin, "port " + std::string(port) + " is out of range 1-65535");
  return task_address{std::string(host), static_cast<std::uint16_t>(value)};
}

/// @returns `host` in lower case, so "LocalHost:1" and "localhost:1" count as one address.
inline std::string lower_host(std::string host) {
  for (char& c : host) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return host;
}

/// @returns a JSON value's type for a message ("number", "object", ...).
inline std::string json_type(const nlohmann::json& j) { return j.type_name(); }

/// Parses JSON text; malformed JSON throws dsgd::error(errc::bad_cluster_spec) naming `where`
/// and the line, column (both counted as in an editor: line from 1, column from 0) and byte offset.
inline nlohmann::json parse_json(std::string_view text, std::string_view where) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann reports the byte count read when it failed (1-based); show line and column too.
    const std::size_t offset = e.byte == 0 ? 0 : std::min<std::size_t>(e.byte - 1, text.size());
    std::size_t line = 1, column = 0;
    for (std::size_t i = 0; i < offset; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 0;
      } else {
        ++column;
      }
    }
    // Keep nlohmann's explanation, not its own (1-based) position, so one convention is shown.
    std::string why = e.what();
    if (const auto p = why.find("parse error"); p != std::string::npos) {
      if (const auto colon = why.find(": ", p); colon != std::string::npos) why.erase(0, colon + 2);
    }
    throw error(errc::bad_cluster_spec, std::string(where) + ": malformed JSON at line " + std::to_string(line) +
                                            ", column " + std::to_string(column) + " (byte " + std::to_string(offset) +
                                            "): " + why);
  } catch (const nlohmann::json::exception& e) {
    // Well-formed but unrepresentable, such as a number beyond a double's range ("1e400").
    throw error(errc::bad_cluster_spec, std::string(where) + ": unusable JSON: " + e.what());
  }
}

}  // namespace detail

inline task_address task_address::parse(std::string_view text) {
  device::detail::parse_failure failure;
  if (auto a = detail::try_parse_address(text, failure)) return *a;
  throw error(errc::bad_cluster_spec,
              device::detail::caret_message("bad address", text, failure.column, failure.reason));
}

/// The jobs of a cluster and the address of every task, validated (see the file comment).
///
/// @code
/// dsgd::cluster::cluster_spec cluster({{"ps", {"localhost:2222"}},
///                                      {"worker", {"localhost:2223", "localhost:2224"}}});
/// cluster.num_tasks("worker");          // 2
/// cluster.address("ps", 0).to_string(); // "localhost:2222"
/// @endcode
/// Jobs are kept sorted by name, as TF's ClusterSpec does; tasks keep their order.
class cluster_spec {
 public:
  /// An empty cluster: no jobs (one process, nothing to connect to).
  cluster_spec() = default;

  /// Builds a cluster from job name -> "host:port" list.
  /// @throws dsgd::error(errc::bad_cluster_spec) naming the bad job, task and address.
  explicit cluster_spec(const std::map<std::string, std::vector<std::string>>& jobs)
      : cluster_spec(jobs, "cluster spec") {}

  /// Builds a cluster from TF's JSON form, an object of job name -> array of "host:port".
  /// @param where names the source in error messages ("cluster spec file \"c.json\"").
  /// @throws dsgd::error(errc::bad_cluster_spec) naming the JSON field at fault.
  static cluster_spec from_json(const nlohmann::json& j, std::string_view where = "cluster spec") {
    if (!j.is_object()) {
      throw error(errc::bad_cluster_spec, std::string(where) +
                                              ": expected a JSON object of job -> "
                                              "[\"host:port\", ...], got " +
                                              detail::json_type(j));
    }
    std::map<std::string, std::vector<std::string>> jobs;
    for (const auto& [job, tasks] : j.items()) {
      const std::string field = std::string(where) + ": job \"" + job + "\"";
      if (!tasks.is_array()) {
        throw error(errc::bad_cluster_spec, field + ": expected an array of \"host:port\" strings, got " +
                                                detail::json_type(tasks) +
                                                (tasks.is_object() ? " (sparse task maps are not supported)" : ""));
      }
      auto& list = jobs[job];
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        if (!tasks[i].is_string()) {
          throw error(errc::bad_cluster_spec, field + " task " + std::to_string(i) +
                                                  ": expected a \"host:port\" string, got " +
                                                  detail::json_type(tasks[i]));
        }
        list.push_back(tasks[i].get<std::string>());
      }
    }
    return cluster_spec(jobs, where);
  }

  /// Parses JSON text (see from_json(const nlohmann::json&)).
  /// @throws dsgd::error(errc::bad_cluster_spec); malformed JSON is reported with its line,
  ///         column and byte offset.
  static cluster_spec from_json_string(std::string_view text, std::string_view where = "cluster spec") {
    return from_json(detail::parse_json(text, where), where);
  }

  /// Reads a JSON cluster file.
  /// @throws dsgd::error(errc::not_found) if the file cannot be opened,
  ///         dsgd::error(errc::bad_cluster_spec) if its content is malformed.
  static cluster_spec from_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw error(errc::not_found, "cluster spec file \"" + path + "\" cannot be opened");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return from_json_string(text, "cluster spec file \"" + path + "\"");
  }

  /// @returns TF's JSON form; from_json(to_json()) == *this.
  nlohmann::json to_json() const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [job, tasks] : jobs_) {
      auto& list = j[job] = nlohmann::json::array();
      for (const auto& a : tasks) list.push_back(a.to_string());
    }
    return j;
  }

  /// @returns the job names, sorted.
  std::vector<std::string> jobs() const {
    std::vector<std::string> out;
    for (const auto& entry : jobs_) out.push_back(entry.first);
    return out;
  }

  /// @returns whether the cluster has a job of that name.
  bool has_job(std::string_view job) const { return jobs_.find(job) != jobs_.end(); }

  /// @returns the addresses of a job's tasks, in task order.
  /// @throws dsgd::error(errc::not_found) naming the job and the jobs there are.
  const std::vector<task_address>& tasks(std::string_view job) const { return find(job); }

  /// @returns how many tasks a job has.
  /// @throws dsgd::error(errc::not_found) if there is no such job.
  std::size_t num_tasks(std::string_view job) const { return find(job).size(); }

  /// @returns the number of tasks of all jobs together.
  std::size_t size() const noexcept {
    std::size_t n = 0;
    for (const auto& entry : jobs_) n += entry.second.size();
    return n;
  }

  /// @returns true when there are no jobs.
  bool empty() const noexcept { return jobs_.empty(); }

  /// @returns every task, by job name then index.
  std::vector<task_id> task_ids() const {
    std::vector<task_id> out;
    for (const auto& [job, tasks] : jobs_) {
      for (std::size_t i = 0; i < tasks.size(); ++i) out.push_back({job, static_cast<int>(i)});
    }
    return out;
  }

  /// @returns whether `t` names a task of this cluster.
  bool contains(const task_id& t) const {
    auto it = jobs_.find(t.job);
    return it != jobs_.end() && t.index >= 0 && static_cast<std::size_t>(t.index) < it->second.size();
  }

  /// @returns the address of task `index` of `job`.
  /// @throws dsgd::error(errc::not_found) for an unknown job, dsgd::error(errc::invalid_argument)
  ///         for an index outside the job, naming the job and its size.
  const task_address& address(std::string_view job, int index) const {
    const auto& tasks = find(job);
    if (index < 0 || static_cast<std::size_t>(index) >= tasks.size()) {
      throw error(errc::invalid_argument, "task index " + std::to_string(index) + " is out of range for job \"" +
                                              std::string(job) + "\", which has " + std::to_string(tasks.size()) +
                                              " task(s)");
    }
    return tasks[static_cast<std::size_t>(index)];
  }

  /// @returns the address of task `t` (see address(std::string_view, int)).
  const task_address& address(const task_id& t) const { return address(t.job, t.index); }

  friend bool operator==(const cluster_spec&, const cluster_spec&) = default;

  /// Writes the compact JSON form.
  friend std::ostream& operator<<(std::ostream& os, const cluster_spec& c) { return os << c.to_json().dump(); }

 private:
  cluster_spec(const std::map<std::string, std::vector<std::string>>& jobs, std::string_view where) {
    const std::string prefix = std::string(where) + ": ";
    std::map<std::pair<std::string, std::uint16_t>, task_id> owners;
    for (const auto& [job, addresses] : jobs) {
      const std::size_t bad = detail::invalid_job_name_char(job);
      if (bad != std::string_view::npos) {
        throw error(errc::bad_cluster_spec,
                    prefix + device::detail::caret_message(
                                 "bad job name", job, bad,
                                 job.empty() ? "empty job name"
                                             : "invalid character " + device::detail::describe_char(job[bad]) +
                                                   "; job names match [A-Za-z][A-Za-z0-9_]*"));
      }
      if (addresses.empty()) {
        throw error(errc::bad_cluster_spec, prefix + "job \"" + job + "\" has no tasks");
      }
      auto& tasks = jobs_[job];
      for (std::size_t i = 0; i < addresses.size(); ++i) {
        const task_id here{job, static_cast<int>(i)};
        device::detail::parse_failure failure;
        auto a = detail::try_parse_address(addresses[i], failure);
        if (!a) {
          throw error(errc::bad_cluster_spec,
                      prefix + "job \"" + job + "\" task " + std::to_string(i) + ": " +
                          device::detail::caret_message("bad address", addresses[i], failure.column, failure.reason));
        }
        auto [it, inserted] = owners.try_emplace({detail::lower_host(a->host), a->port}, here);
        if (!inserted) {
          throw error(errc::bad_cluster_spec, prefix + "duplicate address " + a->to_string() + ": used by both " +
                                                  it->second.to_string() + " and " + here.to_string());
        }
        tasks.push_back(std::move(*a));
      }
    }
  }

  const std::vector<task_address>& find(std::string_view job) const {
    auto it = jobs_.find(job);
    if (it == jobs_.end()) {
      std::string known;
      for (const auto& entry : jobs_) known += (known.empty() ? "" : ", ") + entry.first;
      throw error(errc::not_found, "no job \"" + std::string(job) +
                                       "\" in the cluster (jobs: " + (known.empty() ? "none" : known) + ")");
    }
    return it->second;
  }

  // Sorted by job name with heterogeneous lookup, so tasks("ps") does not allocate.
  std::map<std::string, std::vector<task_address>, std::less<>> jobs_;
};

}  // namespace dsgd::cluster
