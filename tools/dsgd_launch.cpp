// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// dsgd-launch: runs a whole cluster (ps tasks, workers, an optional chief) on one machine as
// local processes on free loopback ports, the way a cluster manager would on many machines.
//
//   dsgd-launch [options] -- PROGRAM [ARGS...]
//
// Every task gets TF_CONFIG (the JSON TensorFlow and the Kubernetes operators use), its output
// lines come back prefixed with its task ("[ps:0] ", "[worker:1] "), and when any task fails the
// others are stopped and the launcher exits non-zero. See docs/launching.md.
//
// Elastic jobs (--workers MIN:MAX): the cluster spec names MAX worker slots, MIN start; SIGUSR1
// to the launcher starts one more worker in the lowest free slot, SIGUSR2 stops the highest
// running one (never the chief); a worker that fails past --max-restarts leaves the job instead
// of stopping it. Every task gets DSGD_MIN_REPLICAS (server::serving_options::min_replicas).
//
// Linux only (prctl, signalfd, execvpe): on other systems run the tasks under a real cluster
// manager, which is what docs/launching.md describes for many machines anyway.

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/cluster/tf_config.hpp>
#include <dsgd/error.hpp>

#include "launch_options.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using clock_type = std::chrono::steady_clock;

constexpr int exit_usage = 2;          // bad command line, as getopt-style tools do
constexpr int exit_internal = 1;       // fork, pipe or port selection failed
constexpr int exit_ps_stuck = 1;       // a ps task did not exit after the chief finished
constexpr int exit_timeout = 124;      // --timeout expired, as timeout(1) does
constexpr int exit_exec_failed = 127;  // a task could not run the program, as a shell does

// Output lines longer than this are cut and emitted in pieces, so a task that never writes a
// newline cannot make the launcher's memory grow without bound.
constexpr std::size_t max_line_bytes = std::size_t{1} << 20;

using dsgd_launch::options;
using dsgd_launch::usage_error;

/// Writes all of `text` to fd 1. A closed stdout (EPIPE) is ignored: the cluster keeps running
/// and is still stopped and reaped properly.
void write_out(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

void say(const std::string& line) { write_out("[launcher] " + line + "\n"); }

/// Picks `count` distinct free TCP ports on `host` by binding port 0. All sockets stay open until
/// every port is chosen, so the kernel cannot hand out one port twice; they are closed before the
/// tasks start (another process could take a port in between: the tasks then fail to listen and
/// the launcher reports it, which is the best any port-0 scheme can do).
std::vector<int> pick_free_ports(const std::string& host, int count) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), "0", &hints, &found); rc != 0) {
    throw usage_error{"option --host: cannot resolve \"" + host + "\": " + ::gai_strerror(rc)};
  }
  std::vector<int> sockets, ports;
  std::string failure;
  for (int k = 0; k < count && failure.empty(); ++k) {
    const int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
    if (fd < 0) {
      failure = "socket: " + std::string(std::strerror(errno));
      break;
    }
    sockets.push_back(fd);
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
      failure = "bind to " + host + ": " + std::string(std::strerror(errno));
      break;
    }
    const in_port_t port = bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                       : reinterpret_cast<sockaddr_in*>(&bound)->sin_port;
    ports.push_back(ntohs(port));
  }
  for (const int fd : sockets) ::close(fd);
  ::freeaddrinfo(found);
  if (!failure.empty()) throw dsgd::error(dsgd::errc::invalid_argument, "cannot pick a free port: " + failure);
  return ports;
}

/// @returns 64 hex digits from the kernel's random source.
std::string random_token() {
  unsigned char bytes[32];
  std::size_t have = 0;
  while (have < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + have, sizeof bytes - have, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw dsgd::error(dsgd::errc::invalid_argument, "getrandom: " + std::string(std::strerror(errno)));
    }
    have += static_cast<std::size_t>(n);
  }
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (const unsigned char b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

/// @returns seconds as a person writes them: "5", "0.5".
std::string format_seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

std::string signal_name(int sig) {
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

/// One task: its process, its output pipe and the bytes of its unfinished line.
struct task {
  dsgd::cluster::task_id id;
  std::string address;
  std::string prefix;  // "[worker:1] "
  pid_t pid = -1;
  int out_fd = -1;      // read end of the task's stdout+stderr pipe; -1 once closed
  std::string partial;  // bytes after the last newline
  bool running = false;
  int status = 0;                                                   // waitpid status once !running
  int restarts = 0;                                                 // times restarted after a failure (--max-restarts)
  std::optional<std::chrono::steady_clock::time_point> restart_at;  // a restart is due then
  bool started = false;  // ever started (an elastic job's slots beyond MIN wait for a SIGUSR1)
  bool leaving = false;  // stopped by SIGUSR2: its exit is a departure, not a failure
  bool left = false;     // its worker left the job (a joiner may take the slot; not one that finished)

  bool is_ps() const { return id.job == "ps"; }
};

/// Why the launcher is stopping the cluster; the first reason decides the exit status.
enum class stop_reason { none, task_failed, ps_stuck, timeout, signalled };

class launcher {
 public:
  explicit launcher(options o) : opts_(std::move(o)) {}

  int run() {
    build_cluster();
    start_signal_handling();
    start_tasks();
    return supervise();
  }

 private:
  // The whole job's cluster, the same on every host's launcher; tasks_ gets this host's share.
  // Task k (ps first, then chief, then workers) runs on host k mod nnodes, on port base + k.
  void build_cluster() {
    const int total = opts_.ps + (opts_.chief ? 1 : 0) + opts_.workers;
    const std::vector<std::string> names = opts_.nnodes > 1 ? opts_.hosts : std::vector<std::string>{opts_.host};
    std::vector<std::string> hosts;
    for (const auto& name : names) {
      const std::string host = name.find(':') != std::string::npos ? "[" + name + "]" : name;
      // Validates each host the way every task will (bad characters, IPv6 brackets), before any
      // socket is opened on it.
      try {
        dsgd::cluster::task_address::parse(host + ":1");
      } catch (const dsgd::error& e) {
        throw usage_error{std::string(opts_.nnodes > 1 ? "option --hosts" : "option --host") + ": \"" + name +
                          "\" is not a valid host: " + e.what()};
      }
      hosts.push_back(host);
    }
    std::vector<int> ports;
    if (opts_.port_base == 0) {
      ports = pick_free_ports(opts_.host, total);
    } else {
      for (int k = 0; k < total; ++k) ports.push_back(opts_.port_base + k);
    }
    std::map<std::string, std::vector<std::string>> jobs;
    std::size_t next = 0;
    const auto add = [&](const std::string& job, int count) {
      for (int i = 0; i < count; ++i, ++next) {
        const std::size_t node = next % hosts.size();
        const std::string address = hosts[node] + ":" + std::to_string(ports[next]);
        jobs[job].push_back(address);
        if (static_cast<int>(node) != opts_.node_rank % static_cast<int>(hosts.size())) continue;
        task t;
        t.id = {job, i};
        t.address = address;
        t.prefix = "[" + t.id.to_string() + "] ";
        tasks_.push_back(std::move(t));
      }
    };
    // Start order is the order of tasks_: ps first, so workers find them listening early (the
    // library waits for a late ps anyway).
    add("ps", opts_.ps);
    if (opts_.chief) add("chief", 1);
    add("worker", opts_.workers);
    cluster_ = dsgd::cluster::cluster_spec(jobs);
    if (opts_.nnodes > 1) {
      std::string mine;
      for (const auto& t : tasks_) mine += (mine.empty() ? "" : ", ") + t.id.to_string();
      say("node " + std::to_string(opts_.node_rank) + " of " + std::to_string(opts_.nnodes) + " (" +
          opts_.hosts[static_cast<std::size_t>(opts_.node_rank)] + "): starting " + (mine.empty() ? "no task" : mine) +
          " of " + std::to_string(total));
    }
    // Tasks that share this host's cores get one compute thread each unless told otherwise:
    // OpenMP and BLAS threads of several tasks on the same cores only preempt each other.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    if (std::getenv("OMP_NUM_THREADS") == nullptr && !tasks_.empty()) {
      threads_ = std::to_string(std::max<std::size_t>(1, cores / tasks_.size()));
      say(std::to_string(tasks_.size()) + (tasks_.size() == 1 ? " task on" : " tasks share") + " this host's " +
          std::to_string(cores) + " cores: OMP_NUM_THREADS=" + threads_ + " per task (set OMP_NUM_THREADS to choose)");
    }
  }

  void start_signal_handling() {
    sigset_t set;
    sigemptyset(&set);
    for (const int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaddset(&set, sig);
    if (::sigprocmask(SIG_BLOCK, &set, &original_mask_) != 0) fail_errno("sigprocmask");
    signal_fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signal_fd_ < 0) fail_errno("signalfd");
    std::signal(SIGPIPE, SIG_IGN);
  }

  std::vector<std::string> task_environment(const task& t) const {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view entry(*e);
      if (entry.rfind("TF_CONFIG=", 0) == 0) continue;
      if (!token_.empty() && entry.rfind("DSGD_CLUSTER_TOKEN=", 0) == 0) continue;
      env.emplace_back(entry);
    }
    const dsgd::cluster::tf_config config{cluster_, t.id, {}, {}};
    env.push_back("TF_CONFIG=" + config.to_json().dump());
    if (!token_.empty()) env.push_back("DSGD_CLUSTER_TOKEN=" + token_);
    // The tasks share this machine's cores: OpenMP threads that spin between parallel regions
    // (libgomp's default) starve the other tasks, so they sleep instead unless told otherwise.
    if (std::getenv("OMP_WAIT_POLICY") == nullptr) env.push_back("OMP_WAIT_POLICY=passive");
    // An elastic job: the replicas (chief and workers) a sync step needs; the spec's are the slots.
    if (opts_.min_workers > 0)
      env.push_back("DSGD_MIN_REPLICAS=" + std::to_string(opts_.min_workers + (opts_.chief ? 1 : 0)));
    if (!threads_.empty()) {
      env.push_back("OMP_NUM_THREADS=" + threads_);
      if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) env.push_back("OPENBLAS_NUM_THREADS=" + threads_);
    }
    return env;
  }

  void start_tasks() {
    if (opts_.token_env) {
      const char* given = std::getenv("DSGD_CLUSTER_TOKEN");
      if (given == nullptr || *given == '\0') token_ = random_token();
    }
    for (auto& t : tasks_) {
      if (is_worker(t) && opts_.min_workers > 0 && t.id.index >= opts_.min_workers) continue;  // a free slot
      try {
        start(t);
      } catch (const dsgd::error& e) {
        // Stop the tasks already started rather than leave them to PR_SET_PDEATHSIG.
        say("cannot start " + t.id.to_string() + ": " + e.what() + "; stopping the cluster");
        stop(stop_reason::task_failed, exit_internal);
        return;
      }
    }
  }

  void start(task& t) {
    // Everything the child needs is prepared before fork, so the child only makes system calls.
    const std::vector<std::string> env_strings = task_environment(t);
    std::vector<char*> envp, argv;
    for (const auto& s : env_strings) envp.push_back(const_cast<char*>(s.c_str()));
    envp.push_back(nullptr);
    for (const auto& s : opts_.command) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    const std::string exec_failed = "dsgd-launch: cannot run \"" + opts_.command[0] + "\": ";

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
      ::sigprocmask(SIG_SETMASK, &original_mask_, nullptr);
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
    t.pid = pid;
    t.out_fd = fds[0];
    t.running = true;
    t.started = true;
    t.leaving = false;
    t.left = false;
    say(t.id.to_string() + " " + t.address + " pid " + std::to_string(pid));
  }

  [[noreturn]] static void fail_errno(const char* what) {
    throw dsgd::error(dsgd::errc::invalid_argument, std::string(what) + ": " + std::strerror(errno));
  }

  /// Reads what a task wrote and prints every complete line with its prefix, in one write per
  /// read so that lines of different tasks never mix inside a line.
  void drain(task& t) {
    char buffer[65536];
    while (t.out_fd >= 0) {
      const ssize_t n = ::read(t.out_fd, buffer, sizeof buffer);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN) close_output(t);
        return;
      }
      if (n == 0) {
        close_output(t);
        return;
      }
      t.partial.append(buffer, static_cast<std::size_t>(n));
      std::string out;
      std::size_t begin = 0;
      for (std::size_t nl; (nl = t.partial.find('\n', begin)) != std::string::npos; begin = nl + 1) {
        out.append(t.prefix).append(t.partial, begin, nl + 1 - begin);
      }
      t.partial.erase(0, begin);
      while (t.partial.size() >= max_line_bytes) {
        out.append(t.prefix).append(t.partial, 0, max_line_bytes).append("\n");
        t.partial.erase(0, max_line_bytes);
      }
      write_out(out);
    }
  }

  /// Closes a task's pipe and prints its unfinished last line, if any.
  void close_output(task& t) {
    if (!t.partial.empty()) write_out(t.prefix + t.partial + "\n");
    t.partial.clear();
    ::close(t.out_fd);
    t.out_fd = -1;
  }

  void signal_task(const task& t, int sig) {
    if (!t.running) return;
    if (::kill(-t.pid, sig) != 0) ::kill(t.pid, sig);
  }

  void stop(stop_reason why, int code, int sig = SIGTERM) {
    if (reason_ == stop_reason::none) {
      reason_ = why;
      exit_code_ = code;
    }
    for (const auto& t : tasks_) signal_task(t, sig);
    if (!kill_deadline_) kill_deadline_ = clock_type::now() + seconds(opts_.kill_grace_s);
  }

  static clock_type::duration seconds(double s) {
    return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(s));
  }

  static std::string describe(int status) {
    if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  }

  void reap() {
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      for (auto& t : tasks_) {
        if (t.pid != pid || !t.running) continue;
        // The task's last lines come before the launcher's word on its exit.
        drain(t);
        t.running = false;
        t.status = status;
        on_exit(t);
      }
    }
  }

  void on_exit(task& t) {
    const bool ok = WIFEXITED(t.status) && WEXITSTATUS(t.status) == 0;
    if (reason_ != stop_reason::none) {
      say(t.id.to_string() + " " + describe(t.status));
      return;
    }
    if (!ok && elastic_worker(t) && (t.leaving || t.restarts >= opts_.max_restarts)) {
      // A departure: the ps tasks average the steps over the workers still there.
      say(t.id.to_string() + " left (" + (t.leaving ? std::string("scaled down") : describe(t.status)) + "); " +
          workers_running());
      t.leaving = false;
      t.left = true;
      ++departures_;
      return;
    }
    if (!ok && t.restarts < opts_.max_restarts) {
      // In place: same role, address and environment, so it rejoins through the recovery path
      // (a ps restores from the chief's checkpoint, a worker re-registers and resumes exactly
      // once). The backoff keeps a task that fails at once from spinning.
      ++t.restarts;
      const double delay = std::min(30.0, static_cast<double>(1LL << std::min(t.restarts - 1, 5)));
      t.restart_at = clock_type::now() + seconds(delay);
      say(t.id.to_string() + " " + describe(t.status) + "; restarting it in " + format_seconds(delay) + " s (restart " +
          std::to_string(t.restarts) + " of " + std::to_string(opts_.max_restarts) + ")");
      return;
    }
    if (!ok) {
      say(t.id.to_string() + " " + describe(t.status) +
          (opts_.max_restarts > 0
               ? " after " + std::to_string(t.restarts) + " restart(s), the most --max-restarts allows"
               : std::string()) +
          "; stopping the cluster");
      const int code = WIFSIGNALED(t.status) ? 128 + WTERMSIG(t.status) : WEXITSTATUS(t.status);
      stop(stop_reason::task_failed, code);
      return;
    }
    say(t.id.to_string() + " exited with status 0");
    if (!ps_deadline_ && !t.is_ps() && !any_running([](const task& x) { return !x.is_ps(); }) &&
        !any_restarting([](const task& x) { return !x.is_ps(); }) &&
        any_running([](const task& x) { return x.is_ps(); })) {
      // Every worker and the chief are done: the ps tasks should follow once the chief shut
      // the cluster down.
      ps_deadline_ = clock_type::now() + seconds(opts_.ps_grace_s);
    }
  }

  template <class Pred>
  bool any_restarting(Pred pred) const {
    for (const auto& t : tasks_) {
      if (t.restart_at && pred(t)) return true;
    }
    return false;
  }

  // Restarts the tasks whose backoff is over; none once the cluster is stopping.
  void restart_due(clock_type::time_point now) {
    for (auto& t : tasks_) {
      if (!t.restart_at) continue;
      if (reason_ != stop_reason::none) {
        t.restart_at.reset();
        continue;
      }
      if (now < *t.restart_at) continue;
      t.restart_at.reset();
      if (t.out_fd >= 0) close_output(t);
      try {
        start(t);
      } catch (const dsgd::error& e) {
        say("cannot restart " + t.id.to_string() + ": " + e.what() + "; stopping the cluster");
        stop(stop_reason::task_failed, exit_internal);
      }
    }
  }

  template <class Pred>
  bool any_running(Pred pred) const {
    for (const auto& t : tasks_) {
      if (t.running && pred(t)) return true;
    }
    return false;
  }

  bool is_worker(const task& t) const { return t.id.job == "worker"; }
  bool is_chief(const task& t) const { return opts_.chief ? t.id.job == "chief" : is_worker(t) && t.id.index == 0; }
  // A worker of an elastic job that may join and leave: not the chief, which shuts the job down.
  bool elastic_worker(const task& t) const { return opts_.min_workers > 0 && is_worker(t) && !is_chief(t); }

  std::string workers_running() const {
    int n = 0;
    for (const auto& t : tasks_) n += is_worker(t) && t.running;
    return std::to_string(n) + (n == 1 ? " worker" : " workers") + " running (--workers " +
           std::to_string(opts_.min_workers) + ":" + std::to_string(opts_.workers) + ")";
  }

  // SIGUSR1: one more worker, in the lowest slot never started, else the lowest one a worker
  // left (a slot whose worker finished stays finished: the ps no longer waits for it).
  void join_one() {
    if (opts_.min_workers == 0) {
      say("received SIGUSR1: not an elastic job (--workers MIN:MAX); ignored");
      return;
    }
    task* slot = nullptr;
    for (const bool fresh : {true, false}) {
      for (auto& t : tasks_) {
        if (!slot && elastic_worker(t) && !t.running && !t.restart_at && (fresh ? !t.started : t.left)) slot = &t;
      }
    }
    if (!slot) {
      say("cannot add a worker: every one of the " + std::to_string(opts_.workers) +
          " worker slots is running (--workers " + std::to_string(opts_.min_workers) + ":" +
          std::to_string(opts_.workers) + ": MAX reached)");
      return;
    }
    if (slot->out_fd >= 0) close_output(*slot);
    slot->restarts = 0;
    start(*slot);
    say(slot->id.to_string() + " joined; " + workers_running());
  }

  // SIGUSR2: the highest running worker that is not the chief is stopped (SIGTERM) and leaves.
  void leave_one() {
    task* last = nullptr;
    int running = 0;
    for (auto& t : tasks_) {
      running += is_worker(t) && t.running;
      if (elastic_worker(t) && t.running && !t.leaving) last = &t;
    }
    if (opts_.min_workers == 0 || !last || running <= opts_.min_workers) {
      say("cannot remove a worker: " + (opts_.min_workers == 0 ? std::string("not an elastic job (--workers MIN:MAX)")
                                                               : workers_running() + ", MIN reached"));
      return;
    }
    last->leaving = true;
    signal_task(*last, SIGTERM);
  }

  void on_signal() {
    signalfd_siginfo info;
    while (::read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      const int sig = static_cast<int>(info.ssi_signo);
      if (sig == SIGCHLD) continue;  // reap() runs after every wake-up
      if (sig == SIGUSR1 || sig == SIGUSR2) {
        if (reason_ != stop_reason::none) continue;  // stopping: nothing joins or leaves
        try {
          sig == SIGUSR1 ? join_one() : leave_one();
        } catch (const dsgd::error& e) {
          say("cannot add a worker: " + std::string(e.what()));
        }
        continue;
      }
      if (reason_ == stop_reason::signalled) {
        say("received " + signal_name(sig) + " again; killing the cluster");
        for (const auto& t : tasks_) signal_task(t, SIGKILL);
        continue;
      }
      say("received " + signal_name(sig) + "; forwarding it to every task");
      reason_ = stop_reason::none;  // a signal overrides an earlier reason: the user asked
      stop(stop_reason::signalled, 128 + sig, sig);
    }
  }

  void on_deadlines() {
    const auto now = clock_type::now();
    restart_due(now);
    if (kill_deadline_ && now >= *kill_deadline_) {
      for (const auto& t : tasks_) {
        if (t.running) {
          say(t.id.to_string() + " still running " + format_seconds(opts_.kill_grace_s) +
              " s after it was told to stop; sending SIGKILL");
        }
        signal_task(t, SIGKILL);
      }
      kill_deadline_ = clock_type::time_point::max();  // once
    }
    if (run_deadline_ && now >= *run_deadline_ && reason_ == stop_reason::none) {
      say("the run exceeded --timeout " + format_seconds(opts_.timeout_s) + " s; stopping the cluster");
      stop(stop_reason::timeout, exit_timeout);
    }
    if (ps_deadline_ && now >= *ps_deadline_ && reason_ == stop_reason::none) {
      for (const auto& t : tasks_) {
        if (t.running && t.is_ps()) {
          say(t.id.to_string() + " did not exit after the chief finished (waited --ps-grace " +
              format_seconds(opts_.ps_grace_s) + " s); stopping it");
        }
      }
      stop(stop_reason::ps_stuck, exit_ps_stuck);
    }
  }

  int poll_timeout_ms() const {
    std::optional<clock_type::time_point> next;
    const auto consider = [&](const std::optional<clock_type::time_point>& d, bool active) {
      if (d && active && (!next || *d < *next)) next = d;
    };
    consider(kill_deadline_, kill_deadline_ != clock_type::time_point::max());
    consider(run_deadline_, reason_ == stop_reason::none);
    consider(ps_deadline_, reason_ == stop_reason::none);
    for (const auto& t : tasks_) consider(t.restart_at, reason_ == stop_reason::none);
    if (!next) return -1;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - clock_type::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, 60'000));
  }

  int supervise() {
    if (opts_.timeout_s > 0) run_deadline_ = clock_type::now() + seconds(opts_.timeout_s);
    while (any_running([](const task&) { return true; }) ||
           (reason_ == stop_reason::none && any_restarting([](const task&) { return true; }))) {
      std::vector<pollfd> fds{{signal_fd_, POLLIN, 0}};
      std::vector<task*> owners{nullptr};
      for (auto& t : tasks_) {
        if (t.out_fd >= 0) {
          fds.push_back({t.out_fd, POLLIN, 0});
          owners.push_back(&t);
        }
      }
      if (::poll(fds.data(), fds.size(), poll_timeout_ms()) < 0 && errno != EINTR) fail_errno("poll");
      for (std::size_t k = 1; k < fds.size(); ++k) {
        if (fds[k].revents != 0) drain(*owners[k]);
      }
      if (fds[0].revents != 0) on_signal();
      reap();
      on_deadlines();
    }
    // Every task is reaped; print what is left in pipes that grandchildren may still hold.
    for (auto& t : tasks_) {
      drain(t);
      if (t.out_fd >= 0) close_output(t);
    }
    if (reason_ == stop_reason::none && departures_ == 0) say("every task exited with status 0");
    if (reason_ == stop_reason::none && departures_ > 0)
      say("every task exited with status 0 but the " + std::to_string(departures_) + " worker(s) that left the job");
    return exit_code_;
  }

  options opts_;
  dsgd::cluster::cluster_spec cluster_;
  std::vector<task> tasks_;
  std::string threads_;  // OMP_NUM_THREADS given to every task; empty: the user's own setting
  std::string token_;
  sigset_t original_mask_{};
  int signal_fd_ = -1;
  stop_reason reason_ = stop_reason::none;
  int exit_code_ = 0;
  int departures_ = 0;  // workers that left an elastic job
  std::optional<clock_type::time_point> run_deadline_, ps_deadline_, kill_deadline_;
};

}  // namespace

int main(int argc, char** argv) {
  options opts;
  try {
    opts = dsgd_launch::parse_options(argc, argv);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dsgd-launch: %s\n\n%s", e.message.c_str(), dsgd_launch::usage_text().c_str());
    return exit_usage;
  }
  try {
    return launcher(std::move(opts)).run();
  } catch (const usage_error& e) {
    std::fprintf(stderr, "dsgd-launch: %s\n", e.message.c_str());
    return exit_usage;
  } catch (const dsgd::error& e) {
    std::fprintf(stderr, "dsgd-launch: %s\n", e.what());
    return exit_internal;
  }
}
