// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// What the launcher prints: its own lines ("[launcher] ..."), and each task's output forwarded
// as whole lines behind the task's prefix ("[worker:1] ...").
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace dsgd_launch {

// Output lines longer than this are cut and emitted in pieces, so a task that never writes a
// newline cannot make the launcher's memory grow without bound.
inline constexpr std::size_t max_line_bytes = std::size_t{1} << 20;

/// Writes all of `text` to fd 1. A closed stdout (EPIPE) is ignored: the cluster keeps running
/// and is still stopped and reaped properly.
inline void write_out(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

/// One line of the launcher's own.
inline void say(const std::string& line) { write_out("[launcher] " + line + "\n"); }

/// @returns seconds as a person writes them: "5", "0.5".
inline std::string format_seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

/// The read end of a task's stdout+stderr pipe, and the bytes of its unfinished line.
struct task_output {
  std::string prefix;   // "[worker:1] "
  int fd = -1;          // -1 once closed
  std::string partial;  // bytes after the last newline

  /// Reads what the task wrote and prints every complete line with its prefix, in one write per
  /// read so that lines of different tasks never mix inside a line.
  void drain() {
    char buffer[65536];
    while (fd >= 0) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN) close();
        return;
      }
      if (n == 0) {
        close();
        return;
      }
      partial.append(buffer, static_cast<std::size_t>(n));
      std::string out;
      std::size_t begin = 0;
      for (std::size_t nl; (nl = partial.find('\n', begin)) != std::string::npos; begin = nl + 1) {
        out.append(prefix).append(partial, begin, nl + 1 - begin);
      }
      partial.erase(0, begin);
      while (partial.size() >= max_line_bytes) {
        out.append(prefix).append(partial, 0, max_line_bytes).append("\n");
        partial.erase(0, max_line_bytes);
      }
      write_out(out);
    }
  }

  /// Closes the pipe and prints the unfinished last line, if any.
  void close() {
    if (!partial.empty()) write_out(prefix + partial + "\n");
    partial.clear();
    ::close(fd);
    fd = -1;
  }
};

}  // namespace dsgd_launch
