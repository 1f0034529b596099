// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Test support for the fault tests: a cluster of real processes on 127.0.0.1, each started
// with its own TF_CONFIG, whose output the test reads line by line as it comes, and which the
// test can kill (SIGKILL), stall (SIGSTOP/SIGCONT) and restart. Every wait takes a timeout and
// wakes on the event itself (a line printed, a process exiting), never by polling on a sleep.
//
// Linux only (fork, prctl(PR_SET_PDEATHSIG)).
#pragma once

#include <dsgd/cluster/cluster_spec.hpp>

#include <support/exec_array.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

extern char** environ;

namespace dsgd::test {

using clock_type = std::chrono::steady_clock;

/// "exit 3", "signal 9" for a wait status.
inline std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

/// Whether process @p pid exists and is not a zombie (a killed process may not be reaped yet).
inline bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!stat || !std::getline(stat, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z' && line[close + 2] != 'X';
}

/// The lines of @p text.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

/// How many lines of @p text start with @p prefix.
inline std::size_t count_lines_starting(const std::string& text, std::string_view prefix) {
  std::size_t n = 0;
  for (const auto& l : lines_of(text)) n += l.rfind(prefix, 0) == 0;
  return n;
}

/// The first line of @p text that starts with @p prefix, or "".
inline std::string line_starting(const std::string& text, std::string_view prefix) {
  for (const auto& l : lines_of(text))
    if (l.rfind(prefix, 0) == 0) return l;
  return {};
}

/// @p ps ps tasks and @p workers worker tasks on 127.0.0.1, on distinct free ports: every
/// port is held open until all are chosen, so two tasks never get the same one (a port may
/// still be taken by another program before its task binds it, which loopback tests accept).
inline cluster::cluster_spec distinct_loopback_cluster(std::size_t ps, std::size_t workers) {
  boost::asio::io_context ctx;
  std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> held;
  auto port = [&] {
    held.push_back(std::make_unique<boost::asio::ip::tcp::acceptor>(
        ctx, boost::asio::ip::tcp::endpoint{boost::asio::ip::make_address("127.0.0.1"), 0}));
    return "127.0.0.1:" + std::to_string(held.back()->local_endpoint().port());
  };
  std::map<std::string, std::vector<std::string>> jobs;
  for (std::size_t i = 0; i < ps; ++i) jobs["ps"].push_back(port());
  for (std::size_t i = 0; i < workers; ++i) jobs["worker"].push_back(port());
  return cluster::cluster_spec(jobs);
}

/// One child process, its stdout and stderr read by a thread of its own into a string.
class child_process {
 public:
  /// Starts @p args (args[0] is the program's path) with this process's environment, less
  /// TF_CONFIG, plus @p extra_env ("NAME=value", which win). The child runs in its own process
  /// group and gets SIGKILL if the test process dies.
  child_process(std::string name, const std::vector<std::string>& args, const std::vector<std::string>& extra_env)
      : name_(std::move(name)) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string entry(*e);
      auto eq = entry.find('=');
      std::string key = entry.substr(0, eq);
      bool replaced = key == "TF_CONFIG" || std::any_of(extra_env.begin(), extra_env.end(), [&](const std::string& x) {
                        return x.rfind(key + "=", 0) == 0;
                      });
      if (!replaced) env.push_back(std::move(entry));
    }
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    std::vector<std::string> argv_copy = args;
    const auto argv = exec_array(argv_copy), envp = exec_array(env);

    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2: " + std::string(std::strerror(errno)));
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork: " + std::string(std::strerror(errno)));
    if (pid_ == 0) {
      // The child: only async-signal-safe calls until execve.
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(126);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) ::signal(sig, SIG_DFL);
      ::dup2(fds[1], STDOUT_FILENO);
      ::dup2(fds[1], STDERR_FILENO);
      ::execve(argv[0], argv.data(), envp.data());
      static const char msg[] = "child_process: execve failed\n";
      [[maybe_unused]] auto ignored = ::write(STDERR_FILENO, msg, sizeof msg - 1);
      ::_exit(127);
    }
    ::close(fds[1]);
    started_ = clock_type::now();
    reader_ = std::thread([this, fd = fds[0]] { read_all(fd); });
  }

  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  /// Kills the process (and its group) if it still runs and reaps it.
  ~child_process() {
    if (!exited()) {
      ::kill(-pid_, SIGKILL);
      ::kill(pid_, SIGKILL);
    }
    reader_.join();
  }

  const std::string& name() const noexcept { return name_; }
  pid_t pid() const noexcept { return pid_; }

  /// Sends @p sig to the process (not its group).
  void signal(int sig) const { ::kill(pid_, sig); }

  /// @returns everything it printed so far.
  std::string output() const {
    std::lock_guard lock(mutex_);
    return output_;
  }

  /// Waits until @p done(output) holds; false if @p timeout passes or the output ends first.
  template <class Pred>
  bool wait_for_output(Pred done, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, timeout, [&] { return done(output_) || eof_; });
    return done(output_);
  }

  /// Waits until a line starting with @p prefix was printed.
  bool wait_for_line(std::string_view prefix, std::chrono::milliseconds timeout) const {
    return wait_for_output(
        [&](const std::string& out) {
          return out.rfind(prefix, 0) == 0 || out.find("\n" + std::string(prefix)) != std::string::npos;
        },
        timeout);
  }

  /// Waits until @p n lines starting with @p prefix were printed.
  bool wait_for_lines(std::string_view prefix, std::size_t n, std::chrono::milliseconds timeout) const {
    return wait_for_output([&](const std::string& out) { return count_lines_starting(out, prefix) >= n; }, timeout);
  }

  /// Waits for the process to exit. @returns its wait status, or nullopt at the timeout.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, timeout, [&] { return status_.has_value(); });
    return status_;
  }

  /// Seconds from the start to the exit (or to now while it runs).
  double seconds_run() const {
    std::lock_guard lock(mutex_);
    return std::chrono::duration<double>((status_ ? ended_ : clock_type::now()) - started_).count();
  }

  /// @returns when it exited (after wait_exit() returned a status).
  clock_type::time_point ended_at() const {
    std::lock_guard lock(mutex_);
    return ended_;
  }

  bool exited() const {
    std::lock_guard lock(mutex_);
    return status_.has_value();
  }

 private:
  // The reader thread: the output until the pipe closes (the process is gone: nothing else
  // holds the pipe), then the process's status.
  void read_all(int fd) {
    char buffer[65536];
    for (;;) {
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      std::lock_guard lock(mutex_);
      output_.append(buffer, static_cast<std::size_t>(n));
      cv_.notify_all();
    }
    ::close(fd);
    {
      std::lock_guard lock(mutex_);
      eof_ = true;
      cv_.notify_all();
    }
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    std::lock_guard lock(mutex_);
    status_ = status;
    ended_ = clock_type::now();
    cv_.notify_all();
  }

  std::string name_;
  pid_t pid_ = -1;
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  std::string output_;
  bool eof_ = false;
  std::optional<int> status_;
  clock_type::time_point started_;
  clock_type::time_point ended_;
  std::thread reader_;
};

/// A cluster of @p ps ps tasks and @p workers worker tasks of one program on free loopback
/// ports. Tasks are started explicitly (ps first, usually), each with the common arguments
/// plus its own; a task can be started again after it died (a restart: the same TF_CONFIG).
class process_cluster {
 public:
  process_cluster(std::string program, std::size_t ps, std::size_t workers, std::vector<std::string> common_args,
                  std::vector<std::string> env = {})
      : program_(std::move(program)),
        spec_(distinct_loopback_cluster(ps, workers)),
        args_(std::move(common_args)),
        env_(std::move(env)) {}

  const cluster::cluster_spec& spec() const noexcept { return spec_; }

  /// The TF_CONFIG of task @p job:@p index.
  std::string tf_config(const std::string& job, int index) const {
    nlohmann::json j;
    j["cluster"] = spec_.to_json();
    j["task"] = {{"type", job}, {"index", index}};
    return j.dump();
  }

  /// Starts (or, once the previous one exited, restarts) task @p job:@p index.
  child_process& start(const std::string& job, int index, const std::vector<std::string>& extra_args = {}) {
    const std::string name = job + ":" + std::to_string(index);
    auto& slot = tasks_[name];
    if (slot && !slot->exited()) throw std::logic_error(name + " is still running");
    if (slot) retired_.push_back(std::move(slot));
    std::vector<std::string> args{program_};
    args.insert(args.end(), args_.begin(), args_.end());
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    std::vector<std::string> env = env_;
    env.push_back("TF_CONFIG=" + tf_config(job, index));
    slot = std::make_unique<child_process>(name, args, env);
    return *slot;
  }

  /// Starts every ps task, then every worker.
  void start_all() {
    for (int i = 0; i < int(spec_.num_tasks("ps")); ++i) start("ps", i);
    for (int i = 0; i < int(spec_.num_tasks("worker")); ++i) start("worker", i);
  }

  child_process& task(const std::string& job, int index) { return *tasks_.at(job + ":" + std::to_string(index)); }
  child_process& ps(int i) { return task("ps", i); }
  child_process& worker(int i) { return task("worker", i); }

  /// The output of every process started, earlier incarnations first, each line prefixed with
  /// its task: for failure messages.
  std::string transcript() const {
    std::string out;
    auto add = [&](const child_process& p) {
      std::string state = p.exited() ? describe_status(*p.wait_exit(std::chrono::milliseconds(0))) : "running";
      out += "---- " + p.name() + " (pid " + std::to_string(p.pid()) + ", " + state + ")\n";
      for (const auto& l : lines_of(p.output())) out += "[" + p.name() + "] " + l + "\n";
    };
    for (const auto& p : retired_) add(*p);
    for (const auto& [name, p] : tasks_) add(*p);
    return out;
  }

  /// The output of every incarnation of every worker, concatenated (for counting acks).
  std::string all_worker_output() const {
    std::string out;
    for (const auto& p : retired_)
      if (p->name().rfind("worker:", 0) == 0) out += p->output() + "\n";
    for (const auto& [name, p] : tasks_)
      if (name.rfind("worker:", 0) == 0) out += p->output() + "\n";
    return out;
  }

 private:
  std::string program_;
  cluster::cluster_spec spec_;
  std::vector<std::string> args_;
  std::vector<std::string> env_;
  std::map<std::string, std::unique_ptr<child_process>> tasks_;
  std::vector<std::unique_ptr<child_process>> retired_;
};

}  // namespace dsgd::test
