// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The launcher's supervision: it starts this host's tasks, forwards their output, reaps them,
// acts on each exit (restart_policy.hpp), on signals (forwarded to every task; SIGUSR1 and
// SIGUSR2 grow and shrink an elastic job, elastic.hpp) and on its deadlines (--timeout, the ps
// tasks' grace once the workers are done, SIGKILL after --kill-grace), and says why it stopped.
#pragma once

#include "elastic.hpp"
#include "job.hpp"
#include "options.hpp"
#include "output.hpp"
#include "process.hpp"
#include "restart_policy.hpp"
#include "task.hpp"

#include <dsgd/error.hpp>

#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dsgd_launch {

inline constexpr int exit_usage = 2;      // bad command line, as getopt-style tools do
inline constexpr int exit_ps_stuck = 1;   // a ps task did not exit after the chief finished
inline constexpr int exit_timeout = 124;  // --timeout expired, as timeout(1) does

/// Why the launcher is stopping the cluster; the first reason decides the exit status.
enum class stop_reason { none, task_failed, ps_stuck, timeout, signalled };

class launcher {
 public:
  explicit launcher(options o) : opts_(std::move(o)) {}

  /// Runs the job to its end. @returns the launcher's exit status (usage_text() lists them)
  int run() {
    job_ = plan_job(opts_);
    start_signal_handling();
    start_tasks();
    return supervise();
  }

 private:
  void start_signal_handling() {
    sigset_t set;
    sigemptyset(&set);
    for (const int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) sigaddset(&set, sig);
    if (::sigprocmask(SIG_BLOCK, &set, &original_mask_) != 0) fail_errno("sigprocmask");
    signal_fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signal_fd_ < 0) fail_errno("signalfd");
    std::signal(SIGPIPE, SIG_IGN);
  }

  void start_tasks() {
    // A single-host job's tasks share one random token unless one is set: no cluster runs
    // with a secret anyone could read in the source. A job over several hosts needs the same
    // DSGD_CLUSTER_TOKEN given to every host's launcher (its tasks fail at start without one).
    if (opts_.nnodes == 1) {
      const char* given = std::getenv("DSGD_CLUSTER_TOKEN");
      if (given == nullptr || *given == '\0') job_.token = random_token();
    }
    for (auto& t : job_.tasks) {
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
    const spawned p = spawn(opts_.command, task_environment(job_, t, opts_), original_mask_);
    t.pid = p.pid;
    t.output.fd = p.out_fd;
    t.running = true;
    t.started = true;
    t.leaving = false;
    t.left = false;
    say(t.id.to_string() + " " + t.address + " pid " + std::to_string(p.pid));
  }

  static void signal_task(const task& t, int sig) {
    if (t.running) signal_group(t.pid, sig);
  }

  void stop(stop_reason why, int code, int sig = SIGTERM) {
    if (reason_ == stop_reason::none) {
      reason_ = why;
      exit_code_ = code;
    }
    for (const auto& t : job_.tasks) signal_task(t, sig);
    if (!kill_deadline_) kill_deadline_ = clock_type::now() + seconds(opts_.kill_grace_s);
  }

  static clock_type::duration seconds(double s) {
    return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(s));
  }

  void reap() {
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      for (auto& t : job_.tasks) {
        if (t.pid != pid || !t.running) continue;
        // The task's last lines come before the launcher's word on its exit.
        t.output.drain();
        t.running = false;
        t.status = status;
        on_exit(t);
      }
    }
  }

  void on_exit(task& t) {
    if (reason_ != stop_reason::none) {
      say(t.id.to_string() + " " + describe(t.status));
      return;
    }
    switch (judge_exit(t, opts_)) {
      case exit_verdict::departure:
        say(t.id.to_string() + " left (" + (t.leaving ? std::string("scaled down") : describe(t.status)) + "); " +
            workers_running(job_.tasks, opts_));
        t.leaving = false;
        t.left = true;
        ++departures_;
        return;
      case exit_verdict::restart: {
        // In place: same role, address and environment, so it rejoins through the recovery path
        // (a ps restores from the chief's checkpoint, a worker re-registers and resumes exactly
        // once).
        ++t.restarts;
        const double delay = restart_delay(t.restarts);
        t.restart_at = clock_type::now() + seconds(delay);
        say(t.id.to_string() + " " + describe(t.status) + "; restarting it in " + format_seconds(delay) +
            " s (restart " + std::to_string(t.restarts) + " of " + std::to_string(opts_.max_restarts) + ")");
        return;
      }
      case exit_verdict::failure:
        say(t.id.to_string() + " " + describe(t.status) +
            (opts_.max_restarts > 0
                 ? " after " + std::to_string(t.restarts) + " restart(s), the most --max-restarts allows"
                 : std::string()) +
            "; stopping the cluster");
        stop(stop_reason::task_failed, failure_code(t.status));
        return;
      case exit_verdict::success:
        break;
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
    return std::any_of(job_.tasks.begin(), job_.tasks.end(), [&](const task& t) { return t.restart_at && pred(t); });
  }

  template <class Pred>
  bool any_running(Pred pred) const {
    return std::any_of(job_.tasks.begin(), job_.tasks.end(), [&](const task& t) { return t.running && pred(t); });
  }

  // Restarts the tasks whose backoff is over; none once the cluster is stopping.
  void restart_due(clock_type::time_point now) {
    for (auto& t : job_.tasks) {
      if (!t.restart_at) continue;
      if (reason_ != stop_reason::none) {
        t.restart_at.reset();
        continue;
      }
      if (now < *t.restart_at) continue;
      t.restart_at.reset();
      if (t.output.fd >= 0) t.output.close();
      try {
        start(t);
      } catch (const dsgd::error& e) {
        say("cannot restart " + t.id.to_string() + ": " + e.what() + "; stopping the cluster");
        stop(stop_reason::task_failed, exit_internal);
      }
    }
  }

  // SIGUSR1: one more worker, in the slot elastic.hpp picks.
  void join_one() {
    if (opts_.min_workers == 0) {
      say("received SIGUSR1: not an elastic job (--workers MIN:MAX); ignored");
      return;
    }
    task* slot = slot_to_join(job_.tasks, opts_);
    if (!slot) {
      say("cannot add a worker: every one of the " + std::to_string(opts_.workers) +
          " worker slots is running (--workers " + std::to_string(opts_.min_workers) + ":" +
          std::to_string(opts_.workers) + ": MAX reached)");
      return;
    }
    if (slot->output.fd >= 0) slot->output.close();
    slot->restarts = 0;
    start(*slot);
    say(slot->id.to_string() + " joined; " + workers_running(job_.tasks, opts_));
  }

  // SIGUSR2: the worker elastic.hpp picks is stopped (SIGTERM) and leaves.
  void leave_one() {
    task* last = opts_.min_workers == 0 ? nullptr : worker_to_leave(job_.tasks, opts_);
    if (!last) {
      say("cannot remove a worker: " + (opts_.min_workers == 0 ? std::string("not an elastic job (--workers MIN:MAX)")
                                                               : workers_running(job_.tasks, opts_) + ", MIN reached"));
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
        for (const auto& t : job_.tasks) signal_task(t, SIGKILL);
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
      for (const auto& t : job_.tasks) {
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
      for (const auto& t : job_.tasks) {
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
    for (const auto& t : job_.tasks) consider(t.restart_at, reason_ == stop_reason::none);
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
      for (auto& t : job_.tasks) {
        if (t.output.fd >= 0) {
          fds.push_back({t.output.fd, POLLIN, 0});
          owners.push_back(&t);
        }
      }
      if (::poll(fds.data(), fds.size(), poll_timeout_ms()) < 0 && errno != EINTR) fail_errno("poll");
      for (std::size_t k = 1; k < fds.size(); ++k) {
        if (fds[k].revents != 0) owners[k]->output.drain();
      }
      if (fds[0].revents != 0) on_signal();
      reap();
      on_deadlines();
    }
    // Every task is reaped; print what is left in pipes that grandchildren may still hold.
    for (auto& t : job_.tasks) {
      t.output.drain();
      if (t.output.fd >= 0) t.output.close();
    }
    if (reason_ == stop_reason::none && departures_ == 0) say("every task exited with status 0");
    if (reason_ == stop_reason::none && departures_ > 0)
      say("every task exited with status 0 but the " + std::to_string(departures_) + " worker(s) that left the job");
    return exit_code_;
  }

  options opts_;
  job job_;
  sigset_t original_mask_{};
  int signal_fd_ = -1;
  stop_reason reason_ = stop_reason::none;
  int exit_code_ = 0;
  int departures_ = 0;  // workers that left an elastic job
  std::optional<clock_type::time_point> run_deadline_, ps_deadline_, kill_deadline_;
};

}  // namespace dsgd_launch
