// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// A task's process: started with its environment in a process group of its own, its stdout and
// stderr into one pipe, dying with the launcher; signalled as a group; its exit described.
#pragma once

#include <dsgd/error.hpp>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

namespace dsgd_launch {

inline constexpr int exit_internal = 1;       // fork, pipe or port selection failed
inline constexpr int exit_exec_failed = 127;  // a task could not run the program, as a shell does

[[noreturn]] inline void fail_errno(const char* what) {
  throw dsgd::error(dsgd::errc::invalid_argument, std::string(what) + ": " + std::strerror(errno));
}

/// A started process and the read end (non-blocking) of its output pipe.
struct spawned {
  pid_t pid;
  int out_fd;
};

/// Starts `command` with exactly `env`; the child gets `mask` as its signal mask back.
/// @throws dsgd::error when pipe or fork fails; a program that cannot run exits 127 instead
inline spawned spawn(const std::vector<std::string>& command, const std::vector<std::string>& env,
                     const sigset_t& mask) {
  // Everything the child needs is prepared before fork, so the child only makes system calls.
  std::vector<char*> envp, argv;
  for (const auto& s : env) envp.push_back(const_cast<char*>(s.c_str()));
  envp.push_back(nullptr);
  for (const auto& s : command) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  const std::string exec_failed = "dsgd-launch: cannot run \"" + command[0] + "\": ";

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) fail_errno("pipe");
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) fail_errno("fork");
  if (pid == 0) {
    // A task dies with the launcher, even when the launcher is killed with SIGKILL; the
    // getppid() check closes the window where the launcher died before prctl ran.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(exit_internal);
    // Its own process group: a terminal's Ctrl-C reaches the launcher only, which forwards it
    // once; and stopping a task also stops whatever it started.
    ::setpgid(0, 0);
    ::sigprocmask(SIG_SETMASK, &mask, nullptr);
    std::signal(SIGPIPE, SIG_DFL);
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::execvpe(argv[0], argv.data(), envp.data());
    const std::string message = exec_failed + std::strerror(errno) + "\n";
    [[maybe_unused]] const auto ignored = ::write(STDERR_FILENO, message.data(), message.size());
    ::_exit(exit_exec_failed);
  }
  ::setpgid(pid, pid);  // also in the parent, so kill(-pid) works before the child ran
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  return {pid, fds[0]};
}

/// Sends `sig` to the process group of `pid` (to the process alone if the group is gone).
inline void signal_group(pid_t pid, int sig) {
  if (::kill(-pid, sig) != 0) ::kill(pid, sig);
}

/// "exited with status 1", "killed by signal 9".
inline std::string describe(int status) {
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

inline std::string signal_name(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGKILL:
      return "SIGKILL";
    default:
      return "signal " + std::to_string(sig);
  }
}

}  // namespace dsgd_launch
