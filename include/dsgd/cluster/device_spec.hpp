// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
/// @file
/// Full TensorFlow device strings: "/job:ps/task:0", "/job:worker/task:1/cpu:0",
/// "/job:worker/replica:0/task:1/device:CPU:0", and partial forms ("/job:ps", "/task:1", "/gpu:1").
///
/// The grammar follows TensorFlow's DeviceSpec:
/// @code
///   spec       := "" | ["/"] component ("/" component)*
///   component  := "job:" name | "replica:" index | "task:" index | device
///   device     := ["device:"] kind [":" index]          (see <dsgd/device/parse.hpp>)
///   name       := [A-Za-z][A-Za-z0-9_]*
/// @endcode
/// Each component may appear at most once, in any order. The empty string is the empty spec (no
/// constraint), as `tf.device("")` is. Errors are dsgd::error(errc::bad_device_string) with the
/// 0-based column of the offending character and a caret under it.
#pragma once

#include <dsgd/device/parse.hpp>
#include <dsgd/error.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace dsgd::cluster {

namespace detail {

/// @returns the column of the first character of `name` that breaks [A-Za-z][A-Za-z0-9_]*, or
/// npos when `name` is a valid job name (an empty name is invalid at column 0).
inline std::size_t invalid_job_name_char(std::string_view name) noexcept {
  if (name.empty() || !device::detail::is_alpha(name[0])) return 0;
  for (std::size_t i = 1; i < name.size(); ++i) {
    const char c = name[i];
    if (!device::detail::is_alpha(c) && !device::detail::is_digit(c) && c != '_') return i;
  }
  return std::string_view::npos;
}

}  // namespace detail

/// A possibly partial device placement: which job, replica, task and local device.
///
/// Unspecified fields are nullopt and mean "any" (or "decided later"): "/job:ps" pins a variable
/// to some ps task, and a replica setter then fills in the task through with_defaults().
struct device_spec {
  std::optional<std::string> job;      ///< job name, "ps" in "/job:ps"
  std::optional<int> replica;          ///< replica index (TF's in-graph replication)
  std::optional<int> task;             ///< task index within the job
  std::optional<device::spec> device;  ///< local device on that task

  /// Parses a device string (see the file comment).
  /// @throws dsgd::error with errc::bad_device_string naming the column of the offending
  ///         character: an unknown component ("/jb:ps"), a missing value ("/job:"), a
  ///         non-numeric index ("/task:x"), a duplicated component ("/job:a/job:b"), an empty
  ///         component ("/job:ps//task:0") or trailing garbage ("/task:0x", "/job:ps/").
  static device_spec parse(std::string_view text);

  /// @returns the canonical TF form of the specified fields, in the order job, replica, task,
  /// device: "/job:ps/task:0/device:CPU:0" (cuda devices print as "GPU", as TF does); "" when
  /// nothing is specified. It parses back to an equal spec.
  std::string to_string() const {
    std::string out;
    if (job) out += "/job:" + *job;
    if (replica) out += "/replica:" + std::to_string(*replica);
    if (task) out += "/task:" + std::to_string(*task);
    if (device) {
      out += device->type == device::spec::kind::cpu ? "/device:CPU:" : "/device:GPU:";
      out += std::to_string(device->index);
    }
    return out;
  }

  /// @returns true when no field is specified.
  bool empty() const noexcept { return !job && !replica && !task && !device; }

  /// TF's DeviceSpec.make_merged_spec: a copy of *this in which every field that `other`
  /// specifies is replaced by other's value. The device is merged as a whole.
  device_spec merged_with(const device_spec& other) const {
    device_spec out = *this;
    if (other.job) out.job = other.job;
    if (other.replica) out.replica = other.replica;
    if (other.task) out.task = other.task;
    if (other.device) out.device = other.device;
    return out;
  }

  /// A copy of *this whose unspecified fields come from `defaults`; what *this specifies wins.
  /// This is how replica_device_setter places a variable: an op pinned to "/device:GPU:0" with
  /// defaults "/job:ps/task:1" lands on "/job:ps/task:1/device:GPU:0".
  device_spec with_defaults(const device_spec& defaults) const { return defaults.merged_with(*this); }

  friend bool operator==(const device_spec&, const device_spec&) = default;

  /// Writes to_string().
  friend std::ostream& operator<<(std::ostream& os, const device_spec& s) { return os << s.to_string(); }
};

inline device_spec device_spec::parse(std::string_view text) {
  const auto fail = [text](std::size_t column, const std::string& reason) -> error {
    return error(errc::bad_device_string, device::detail::caret_message("bad device string", text, column, reason));
  };
  device_spec out;
  if (text.empty()) return out;

  // Columns where job, replica, task and device were first given, for duplicate messages.
  constexpr std::size_t unset = std::string_view::npos;
  std::array<std::size_t, 4> seen{unset, unset, unset, unset};
  static constexpr std::array<std::string_view, 4> names{"job", "replica", "task", "device"};
  const auto mark = [&](std::size_t slot, std::size_t column) {
    if (seen[slot] != unset) {
      throw fail(column, "duplicate \"" + std::string(names[slot]) + "\" component; the first is at column " +
                             std::to_string(seen[slot]));
    }
    seen[slot] = column;
  };

  std::size_t pos = text[0] == '/' ? 1 : 0;
  for (;;) {
    const std::size_t begin = pos;
    const std::size_t end = std::min(text.find('/', begin), text.size());
    const std::string_view comp = text.substr(begin, end - begin);
    if (comp.empty()) {
      throw fail(begin,
                 end == text.size() ? "trailing '/' with no component after it" : "empty component between two '/'");
    }
    const std::size_t colon = comp.find(':');
    const std::string_view name = comp.substr(0, colon);
    const std::size_t value_col = begin + name.size() + 1;

    std::size_t slot = unset;
    if (name == "job") slot = 0;
    else if (name == "replica") slot = 1;
    else if (name == "task") slot = 2;

    if (slot != unset) {
      if (colon == std::string_view::npos) {
        throw fail(begin + name.size(), "expected ':' and a value after \"" + std::string(name) + "\"");
      }
      const std::string_view value = comp.substr(colon + 1);
      if (value.empty()) throw fail(value_col, "missing value for \"" + std::string(name) + "\"");
      mark(slot, begin);
      if (slot == 0) {
        const std::size_t bad = detail::invalid_job_name_char(value);
        if (bad != std::string_view::npos) {
          throw fail(value_col + bad, "invalid character " + device::detail::describe_char(value[bad]) +
                                          " in job name; job names match [A-Za-z][A-Za-z0-9_]*");
        }
        out.job = std::string(value);
      } else {
        device::detail::parse_failure failure;
        const auto index = device::detail::parse_index(value, value_col, std::string(name) + " index", failure);
        if (!index) throw fail(failure.column, failure.reason);
        (slot == 1 ? out.replica : out.task) = *index;
      }
    } else if (name == "device" || device::detail::kind_from_name(name)) {
      if (name == "device" && colon == std::string_view::npos) {
        throw fail(begin + name.size(), "expected ':' and a device kind after \"device\"");
      }
      mark(3, begin);
      device::detail::parse_failure failure;
      out.device = device::detail::try_parse(comp, begin, failure);
      if (!out.device) throw fail(failure.column, failure.reason);
    } else {
      throw fail(begin, "unknown component \"" + std::string(name) +
                            "\"; expected job, replica, task, device or a device kind (cpu, gpu, cuda)");
    }
    if (end == text.size()) break;
    pos = end + 1;
  }
  return out;
}

}  // namespace dsgd::cluster
