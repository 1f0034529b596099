// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Tests for tools/dsgd-launch. Each case runs the launcher as a child process on fake_task (see
// fake_task.cpp for its steps), reads everything it prints and checks its exit status, its
// output and that no task outlives it.

#include <support/exec_array.hpp>

#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using clock_type = std::chrono::steady_clock;

const std::string launch_path = DSGD_LAUNCH_PATH;
const std::string fake_task_path = DSGD_FAKE_TASK_PATH;

clock_type::time_point deadline_after(double seconds) {
  return clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(seconds));
}

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

/// The launcher as a child process whose stdout and stderr the test reads.
class launcher_process {
 public:
  /// Starts `dsgd-launch options... -- fake_task rules...` with the test's environment, less
  /// TF_CONFIG and DSGD_CLUSTER_TOKEN, plus `extra_env` ("NAME=VALUE"; "-NAME" removes NAME).
  launcher_process(const std::vector<std::string>& options, const std::vector<std::string>& rules,
                   const std::vector<std::string>& extra_env = {}, bool with_program = true) {
    std::vector<std::string> args{launch_path};
    args.insert(args.end(), options.begin(), options.end());
    if (with_program) {
      args.push_back("--");
      args.push_back(fake_task_path);
      args.insert(args.end(), rules.begin(), rules.end());
    }
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry(*e);
      if (entry.rfind("TF_CONFIG=", 0) == 0 || entry.rfind("DSGD_CLUSTER_TOKEN=", 0) == 0) continue;
      env.push_back(entry);
    }
    for (const auto& e : extra_env) {
      // "NAME=VALUE" replaces the test's own NAME (the first of two entries would win); "-NAME"
      // removes it.
      const bool removes = !e.empty() && e[0] == '-';
      const std::string prefix = (removes ? e.substr(1) : e.substr(0, e.find('='))) + "=";
      std::erase_if(env, [&](const std::string& x) { return x.rfind(prefix, 0) == 0; });
      if (!removes) env.push_back(e);
    }
    const auto argv = dsgd::test::exec_array(args), envp = dsgd::test::exec_array(env);

    int fds[2];
    BOOST_REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Whatever the test runner did with signals, the launcher starts with the defaults.
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (const int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&defaults, sig);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    const int rc = ::posix_spawn(&pid_, argv[0], &actions, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    ::close(fds[1]);
    fd_ = fds[0];
    BOOST_REQUIRE_MESSAGE(rc == 0, "posix_spawn " << launch_path << ": " << std::strerror(rc));
    start_ = clock_type::now();
  }

  launcher_process(const launcher_process&) = delete;
  launcher_process& operator=(const launcher_process&) = delete;

  ~launcher_process() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (fd_ >= 0) ::close(fd_);
  }

  pid_t pid() const { return pid_; }
  const std::string& output() const { return output_; }

  /// Reads output until `done(output())` holds; false if `timeout_s` passes first or the
  /// launcher closes its output.
  template <class Pred>
  bool read_until(Pred done, double timeout_s) {
    const auto deadline = deadline_after(timeout_s);
    while (!done(output_)) {
      if (fd_ < 0 || clock_type::now() >= deadline) return false;
      read_some(deadline);
    }
    return true;
  }

  /// Reads to the end of the output and waits for the launcher to exit.
  /// @returns its wait status; fails the test (and kills it) if it runs past `timeout_s`.
  int wait(double timeout_s = 60) {
    const auto deadline = deadline_after(timeout_s);
    while (fd_ >= 0 && clock_type::now() < deadline) read_some(deadline);
    while (!status_ && clock_type::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        status_ = status;
        elapsed_ = seconds_since(start_);
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    BOOST_REQUIRE_MESSAGE(status_.has_value(), "dsgd-launch still running after " << timeout_s << " s; output so far:\n"
                                                                                  << output_);
    return *status_;
  }

  /// Seconds from start to exit (after wait()).
  double elapsed() const { return elapsed_; }

 private:
  void read_some(clock_type::time_point deadline) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - clock_type::now()).count();
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::max<long long>(left, 0))) <= 0) return;
    char buffer[65536];
    const ssize_t n = ::read(fd_, buffer, sizeof buffer);
    if (n > 0) {
      output_.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      ::close(fd_);
      fd_ = -1;
    }
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string output_;
  std::optional<int> status_;
  clock_type::time_point start_;
  double elapsed_ = 0;
};

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// A task as the launcher announced it: "[launcher] ps:0 127.0.0.1:40001 pid 1234".
struct started_task {
  std::string address;
  int port = 0;
  pid_t pid = 0;
};

std::map<std::string, started_task> started_tasks(const std::string& output) {
  static const std::regex pattern(R"(\[launcher\] (\w+:\d+) (\S+):(\d+) pid (\d+))");
  std::map<std::string, started_task> out;
  for (const auto& line : split_lines(output)) {
    std::smatch m;
    if (std::regex_match(line, m, pattern)) {
      out[m[1]] = {m[2].str() + ":" + m[3].str(), std::stoi(m[3]), static_cast<pid_t>(std::stoi(m[4]))};
    }
  }
  return out;
}

/// The lines a task printed, without their prefix.
std::vector<std::string> lines_of(const std::string& output, const std::string& task) {
  const std::string prefix = "[" + task + "] ";
  std::vector<std::string> out;
  for (const auto& line : split_lines(output)) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line.substr(prefix.size()));
  }
  return out;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Whether a process is alive: it exists and is not a zombie waiting to be reaped.
bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!stat || !std::getline(stat, line)) return false;
  const auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  const char state = line[close + 2];
  return state != 'Z' && state != 'X';
}

/// Waits up to `timeout_s` for every pid to be gone; @returns those still alive.
std::vector<pid_t> survivors(const std::vector<pid_t>& pids, double timeout_s) {
  const auto deadline = deadline_after(timeout_s);
  for (;;) {
    std::vector<pid_t> left;
    for (const pid_t p : pids) {
      if (alive(p)) left.push_back(p);
    }
    if (left.empty() || clock_type::now() >= deadline) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<pid_t> pids_of(const std::map<std::string, started_task>& tasks) {
  std::vector<pid_t> out;
  for (const auto& [name, t] : tasks) out.push_back(t.pid);
  return out;
}

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status); }

/// Counts the "[launcher] job:i ... pid N" lines seen so far.
auto started_at_least(std::size_t n) {
  return [n](const std::string& output) { return started_tasks(output).size() >= n; };
}

/// Whether every one of `tasks` printed `line`.
auto each_printed(std::vector<std::string> tasks, std::string line) {
  return [tasks = std::move(tasks), line = std::move(line)](const std::string& output) {
    for (const auto& t : tasks) {
      const auto lines = lines_of(output, t);
      if (std::find(lines.begin(), lines.end(), line) == lines.end()) return false;
    }
    return true;
  };
}

/// Checks one task's TF_CONFIG against the launcher's announced addresses.
void check_tf_config(const std::string& output, const std::string& task,
                     const std::map<std::string, started_task>& started, const std::map<std::string, int>& job_sizes) {
  const auto lines = lines_of(output, task);
  BOOST_TEST_CONTEXT("task " << task) {
    BOOST_TEST(std::count(lines.begin(), lines.end(), "role " + task) == 1);
    const auto json_line =
        std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("tf_config ", 0) == 0; });
    BOOST_REQUIRE(json_line != lines.end());
    const auto j = nlohmann::json::parse(json_line->substr(10));
    BOOST_TEST(j.size() == 2u);  // exactly "cluster" and "task"
    const auto colon = task.find(':');
    BOOST_TEST(j.at("task").at("type") == task.substr(0, colon));
    BOOST_TEST(j.at("task").at("index").is_number_integer());
    BOOST_TEST(j.at("task").at("index").get<int>() == std::stoi(task.substr(colon + 1)));
    const auto& cluster = j.at("cluster");
    BOOST_TEST(cluster.size() == job_sizes.size());
    for (const auto& [job, size] : job_sizes) {
      BOOST_REQUIRE(cluster.contains(job));
      BOOST_TEST(cluster.at(job).size() == static_cast<std::size_t>(size));
      for (int i = 0; i < size; ++i) {
        const std::string name = job + ":" + std::to_string(i);
        BOOST_REQUIRE(started.count(name) == 1);
        BOOST_TEST(cluster.at(job).at(static_cast<std::size_t>(i)).get<std::string>() == started.at(name).address);
      }
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(launcher)

BOOST_AUTO_TEST_CASE(every_task_gets_tf_config_with_its_role_and_distinct_free_ports) {
  launcher_process l({"--ps", "2", "--workers", "3"}, {"*=config,bind"});
  const int status = l.wait();
  BOOST_TEST_INFO("output:\n" << l.output());
  BOOST_TEST(exit_code(status) == 0);
  const auto started = started_tasks(l.output());
  BOOST_TEST(started.size() == 5u);
  std::set<int> ports;
  for (const auto& [name, t] : started) {
    ports.insert(t.port);
    BOOST_TEST(t.address.rfind("127.0.0.1:", 0) == 0u);
    BOOST_TEST(t.port > 0);
    const auto lines = lines_of(l.output(), name);
    BOOST_TEST(std::count(lines.begin(), lines.end(), "bound " + t.address) == 1, name << " could listen on its port");
    check_tf_config(l.output(), name, started, {{"ps", 2}, {"worker", 3}});
  }
  BOOST_TEST(ports.size() == 5u);
  BOOST_TEST(contains(l.output(), "[launcher] every task exited with status 0"));
}

BOOST_AUTO_TEST_CASE(chief_option_adds_a_one_task_chief_job_and_ps_0_leaves_out_the_ps_job) {
  {
    launcher_process l({"--chief", "--workers", "2"}, {"*=config,bind"});
    BOOST_TEST(exit_code(l.wait()) == 0, l.output());
    const auto started = started_tasks(l.output());
    BOOST_TEST(started.size() == 4u);
    for (const auto& [name, t] : started) {
      check_tf_config(l.output(), name, started, {{"ps", 1}, {"chief", 1}, {"worker", 2}});
    }
  }
  {
    launcher_process l({"--ps", "0", "--workers", "2"}, {"*=config"});
    BOOST_TEST(exit_code(l.wait()) == 0, l.output());
    const auto started = started_tasks(l.output());
    BOOST_TEST(started.size() == 2u);
    for (const auto& [name, t] : started) check_tf_config(l.output(), name, started, {{"worker", 2}});
  }
}

BOOST_AUTO_TEST_CASE(one_launcher_per_host_starts_its_share_of_one_cluster) {
  // Three "hosts" on loopback addresses of this machine (127.0.0.1-3 all reach it); each launcher
  // is told the same job and its own --node-rank, and starts tasks k with k mod 3 = rank.
  const std::vector<std::string> job{"--nnodes",    "3",     "--hosts", "127.0.0.1,127.0.0.2,127.0.0.3",
                                     "--port-base", "24600", "--ps",    "2",
                                     "--workers",   "3"};
  std::vector<std::unique_ptr<launcher_process>> hosts;
  for (int rank = 0; rank < 3; ++rank) {
    auto options = job;
    options.insert(options.end(), {"--node-rank", std::to_string(rank)});
    hosts.push_back(std::make_unique<launcher_process>(options, std::vector<std::string>{"*=config"}));
  }
  // Task k: ps:0 ps:1 worker:0 worker:1 worker:2 -> nodes 0 1 2 0 1, ports 24600 + k.
  const std::vector<std::vector<std::string>> expected{{"ps:0", "worker:1"}, {"ps:1", "worker:2"}, {"worker:0"}};
  const std::vector<std::string> addresses{"127.0.0.1:24600", "127.0.0.2:24601", "127.0.0.3:24602", "127.0.0.1:24603",
                                           "127.0.0.2:24604"};
  std::set<std::string> clusters;
  for (int rank = 0; rank < 3; ++rank) {
    auto& l = *hosts[static_cast<std::size_t>(rank)];
    BOOST_TEST_CONTEXT("node " << rank << ", output:\n" << l.output()) {
      BOOST_TEST(exit_code(l.wait()) == 0);
      const auto started = started_tasks(l.output());
      std::vector<std::string> names;
      for (const auto& [name, t] : started) names.push_back(name);
      BOOST_TEST(names == expected[static_cast<std::size_t>(rank)], boost::test_tools::per_element());
      BOOST_TEST(contains(l.output(), "node " + std::to_string(rank) + " of 3"));
      for (const auto& name : names) {
        const auto lines = lines_of(l.output(), name);
        const auto json_line = std::find_if(lines.begin(), lines.end(),
                                            [](const std::string& x) { return x.rfind("tf_config ", 0) == 0; });
        BOOST_REQUIRE(json_line != lines.end());
        const auto j = nlohmann::json::parse(json_line->substr(10));
        clusters.insert(j.at("cluster").dump());
        const auto& cluster = j.at("cluster");
        BOOST_TEST(cluster.at("ps").at(1).get<std::string>() == addresses[1]);
        BOOST_TEST(cluster.at("worker").at(2).get<std::string>() == addresses[4]);
        BOOST_TEST(started.at(name).address == cluster.at(name.substr(0, name.find(':')))
                                                   .at(std::stoul(name.substr(name.find(':') + 1)))
                                                   .get<std::string>());
      }
    }
  }
  BOOST_TEST(clusters.size() == 1u);  // every host derived the same cluster
}

BOOST_AUTO_TEST_CASE(tasks_sharing_the_cores_get_one_compute_thread_each_unless_told) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::string each = std::to_string(std::max(1u, cores / 4));
  {
    launcher_process l({"--ps", "2", "--workers", "2"}, {"*=env:OMP_NUM_THREADS"}, {"-OMP_NUM_THREADS"});
    BOOST_TEST(exit_code(l.wait()) == 0, l.output());
    BOOST_TEST(contains(l.output(), "4 tasks share this host's " + std::to_string(cores) +
                                        " cores: OMP_NUM_THREADS=" + each + " per task"),
               l.output());
    for (const auto& t : {"ps:0", "ps:1", "worker:0", "worker:1"})
      BOOST_TEST(contains(l.output(), std::string("[") + t + "] env OMP_NUM_THREADS=" + each), l.output());
  }
  {
    launcher_process l({"--ps", "1", "--workers", "1"}, {"*=env:OMP_NUM_THREADS"}, {"OMP_NUM_THREADS=3"});
    BOOST_TEST(exit_code(l.wait()) == 0, l.output());
    BOOST_TEST(!contains(l.output(), "per task (set OMP_NUM_THREADS"), l.output());  // the user's choice stands
    BOOST_TEST(contains(l.output(), "[worker:0] env OMP_NUM_THREADS=3"), l.output());
  }
}

BOOST_AUTO_TEST_CASE(max_restarts_restarts_a_failed_task_in_place_with_backoff) {
  const auto dir = std::filesystem::temp_directory_path() / ("dsgd-restarts-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string counter = (dir / "runs").string();
  {
    // worker:1 fails twice, then succeeds: two restarts, after 1 s and 2 s, same address.
    launcher_process l({"--ps", "1", "--workers", "2", "--max-restarts", "3", "--port-base", "24700"},
                       {"*=config", "worker:1=fail-first:2:" + counter + ",config"});
    const int status = l.wait(60);
    BOOST_TEST_INFO("output:\n" << l.output());
    BOOST_TEST(exit_code(status) == 0);
    BOOST_TEST(contains(l.output(), "[launcher] worker:1 exited with status 3; restarting it in 1 s (restart 1 of 3)"));
    BOOST_TEST(contains(l.output(), "[launcher] worker:1 exited with status 3; restarting it in 2 s (restart 2 of 3)"));
    BOOST_TEST(contains(l.output(), "[worker:1] run 3"));
    const auto lines = lines_of(l.output(), "worker:1");
    BOOST_TEST(std::count(lines.begin(), lines.end(), "role worker:1") == 1);  // config ran on the good run only
    BOOST_TEST(std::count_if(lines.begin(), lines.end(), [](const std::string& x) {
                 return x.find("\"127.0.0.1:24702\"") != std::string::npos;
               }) == 1);  // the same address as before (task 2 of the job: port base + 2)
    BOOST_TEST(contains(l.output(), "[launcher] every task exited with status 0"));
    BOOST_TEST(l.elapsed() >= 3.0);  // the backoff was waited
  }
  {
    // A task that keeps failing stops the cluster once its restarts are spent, with its status.
    launcher_process l({"--ps", "1", "--workers", "1", "--max-restarts", "1"}, {"ps:0=hang", "worker:0=exit:4"});
    const int status = l.wait(60);
    BOOST_TEST_INFO("output:\n" << l.output());
    BOOST_TEST(exit_code(status) == 4);
    BOOST_TEST(contains(l.output(), "worker:0 exited with status 4; restarting it in 1 s (restart 1 of 1)"));
    BOOST_TEST(contains(l.output(),
                        "worker:0 exited with status 4 after 1 restart(s), the most --max-restarts allows; "
                        "stopping the cluster"));
    BOOST_TEST(survivors(pids_of(started_tasks(l.output())), 5).empty());
  }
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(an_elastic_job_starts_min_workers_and_takes_joins_and_leaves_by_signal) {
  // --workers 2:3: a spec of 3 worker slots, 2 started. SIGUSR1 starts worker:2, a second one is
  // refused (MAX); SIGUSR2 stops the highest worker, a second one is refused (MIN); worker:1
  // failing leaves the job instead of stopping it.
  launcher_process l({"--ps", "1", "--workers", "2:3"},
                     {"*=config", "ps:0=sleep:10", "worker:0=env:DSGD_MIN_REPLICAS,sleep:9", "worker:1=sleep:6,exit:5",
                      "worker:2=config,hang"});
  BOOST_TEST_INFO("output:\n" << l.output());
  BOOST_REQUIRE(l.read_until(started_at_least(3), 20));
  BOOST_REQUIRE(
      l.read_until([](const std::string& o) { return contains(o, "[worker:0] env DSGD_MIN_REPLICAS=2"); }, 20));
  BOOST_TEST(!started_tasks(l.output()).contains("worker:2"));
  ::kill(l.pid(), SIGUSR1);
  BOOST_REQUIRE(l.read_until(
      [](const std::string& o) {
        return contains(o, "[launcher] worker:2 joined; 3 workers running (--workers 2:3)") &&
               contains(o, "[worker:2] tf_config ");
      },
      20));
  ::kill(l.pid(), SIGUSR1);
  BOOST_REQUIRE(l.read_until(
      [](const std::string& o) {
        return contains(
            o,
            "[launcher] cannot add a worker: every one of the 3 worker slots is running (--workers 2:3: MAX reached)");
      },
      20));
  ::kill(l.pid(), SIGUSR2);
  BOOST_REQUIRE(l.read_until(
      [](const std::string& o) {
        return contains(o, "[launcher] worker:2 left (scaled down); 2 workers running (--workers 2:3)");
      },
      20));
  ::kill(l.pid(), SIGUSR2);
  BOOST_REQUIRE(l.read_until(
      [](const std::string& o) {
        return contains(o, "[launcher] cannot remove a worker: 2 workers running (--workers 2:3), MIN reached");
      },
      20));
  const int status = l.wait(60);
  BOOST_TEST(exit_code(status) == 0);
  BOOST_TEST(contains(l.output(), "[launcher] worker:1 left (exited with status 5); 1 worker running (--workers 2:3)"));
  BOOST_TEST(contains(l.output(), "[launcher] every task exited with status 0 but the 2 worker(s) that left the job"));
  const auto started = started_tasks(l.output());
  check_tf_config(l.output(), "worker:2", started, {{"ps", 1}, {"worker", 3}});  // the spec names every slot
}

BOOST_AUTO_TEST_CASE(port_base_gives_consecutive_ports_in_start_order) {
  launcher_process l({"--chief", "--ps", "1", "--workers", "2", "--port-base", "23456"}, {"*=config"});
  BOOST_TEST(exit_code(l.wait()) == 0, l.output());
  const auto started = started_tasks(l.output());
  BOOST_TEST(started.at("ps:0").port == 23456);
  BOOST_TEST(started.at("chief:0").port == 23457);
  BOOST_TEST(started.at("worker:0").port == 23458);
  BOOST_TEST(started.at("worker:1").port == 23459);
  for (const auto& [name, t] : started) {
    check_tf_config(l.output(), name, started, {{"ps", 1}, {"chief", 1}, {"worker", 2}});
  }
  // The announcements come in start order: ps tasks first.
  BOOST_TEST(l.output().find("] ps:0 ") < l.output().find("] worker:0 "));
}

BOOST_AUTO_TEST_CASE(every_output_line_is_prefixed_whole_and_in_order) {
  constexpr int lines_per_task = 3000;
  launcher_process l({"--ps", "1", "--workers", "3"},
                     {"*=lines:" + std::to_string(lines_per_task) + ",partial:unterminated"});
  BOOST_TEST(exit_code(l.wait()) == 0);
  const auto lines = split_lines(l.output());
  static const std::regex prefixed(R"(\[(\w+:\d+)\] (.*))");
  std::map<std::string, int> next;  // per task, the number of the next expected line
  std::map<std::string, bool> tail;
  int bad = 0;
  for (const auto& line : lines) {
    if (line.rfind("[launcher] ", 0) == 0) continue;
    std::smatch m;
    if (!std::regex_match(line, m, prefixed)) {
      if (++bad <= 5) BOOST_ERROR("line without a task prefix: " << line.substr(0, 120));
      continue;
    }
    const std::string task = m[1], text = m[2];
    if (text == "unterminated") {
      tail[task] = true;
      continue;
    }
    std::string body;
    while (body.size() < 300) body += task + ";";
    const std::string expected = task + " line " + std::to_string(next[task]) + " " + body + " end";
    if (text != expected) {
      if (++bad <= 5) BOOST_ERROR("mixed or out-of-order line of " << task << ": " << text.substr(0, 160));
    }
    ++next[task];
  }
  BOOST_TEST(bad == 0);
  BOOST_TEST(next.size() == 4u);
  for (const std::string task : {"ps:0", "worker:0", "worker:1", "worker:2"}) {
    BOOST_TEST(next[task] == lines_per_task, task);
    BOOST_TEST(tail[task], task << "'s unterminated last line was printed");
  }
}

BOOST_AUTO_TEST_CASE(a_failing_worker_stops_the_cluster_quickly_with_its_status) {
  launcher_process l({"--ps", "1", "--workers", "3"}, {"*=hang", "worker:1=sleep:0.3,exit:3"});
  const int status = l.wait();
  BOOST_TEST_INFO("output:\n" << l.output());
  BOOST_TEST(exit_code(status) == 3);
  BOOST_TEST(l.elapsed() < 10.0);
  BOOST_TEST(contains(l.output(), "[launcher] worker:1 exited with status 3; stopping the cluster"));
  const auto started = started_tasks(l.output());
  BOOST_TEST(started.size() == 4u);
  BOOST_TEST(survivors(pids_of(started), 5).empty());
}

BOOST_AUTO_TEST_CASE(a_task_killed_by_a_signal_gives_128_plus_the_signal) {
  launcher_process l({"--ps", "1", "--workers", "2"}, {"*=hang", "worker:0=sleep:0.2,kill:9"});
  const int status = l.wait();
  BOOST_TEST_INFO("output:\n" << l.output());
  BOOST_TEST(exit_code(status) == 128 + 9);
  BOOST_TEST(contains(l.output(), "[launcher] worker:0 killed by signal 9; stopping the cluster"));
  BOOST_TEST(survivors(pids_of(started_tasks(l.output())), 5).empty());
}

BOOST_AUTO_TEST_CASE(a_task_that_ignores_sigterm_is_killed_after_the_kill_grace) {
  launcher_process l({"--ps", "1", "--workers", "2"},
                     {"*=ignore-term,say:ready,hang", "worker:1=ignore-term,say:ready,sleep:0.5,exit:2"});
  const int status = l.wait();
  BOOST_TEST_INFO("output:\n" << l.output());
  BOOST_TEST(exit_code(status) == 2);
  BOOST_TEST(contains(l.output(), "still running 5 s after it was told to stop; sending SIGKILL"));
  BOOST_TEST(l.elapsed() >= 5.0);  // the default grace of 5 s was given
  BOOST_TEST(l.elapsed() < 15.0);
  BOOST_TEST(survivors(pids_of(started_tasks(l.output())), 5).empty());
}

BOOST_AUTO_TEST_CASE(a_ps_that_outlives_the_workers_is_stopped_after_the_ps_grace) {
  launcher_process l({"--ps", "2", "--workers", "2", "--ps-grace", "1"},
                     {"ps:0=hang", "ps:1=sleep:0.2", "worker=sleep:0.4"});
  const int status = l.wait();
  BOOST_TEST_INFO("output:\n" << l.output());
  BOOST_TEST(exit_code(status) != 0);
  BOOST_TEST(contains(l.output(), "[launcher] ps:0 did not exit after the chief finished"));
  BOOST_TEST(!contains(l.output(), "ps:1 did not exit"));
  BOOST_TEST(l.elapsed() < 10.0);
  BOOST_TEST(survivors(pids_of(started_tasks(l.output())), 5).empty());
}

BOOST_AUTO_TEST_CASE(ps_tasks_that_exit_after_the_workers_make_a_successful_run) {
  launcher_process l({"--ps", "2", "--workers", "2"}, {"ps=sleep:1", "worker=exit:0"});
  const int status = l.wait();
  BOOST_TEST_INFO("output:\n" << l.output());
  BOOST_TEST(exit_code(status) == 0);
  BOOST_TEST(l.elapsed() >= 1.0);  // the launcher waited for the ps tasks
  BOOST_TEST(!contains(l.output(), "did not exit"));
}

BOOST_AUTO_TEST_CASE(sigterm_to_the_launcher_stops_every_task_and_their_children) {
  launcher_process l({"--ps", "1", "--workers", "2"}, {"*=say:ready,hang", "worker:0=spawn-child,say:ready,hang"});
  BOOST_REQUIRE_MESSAGE(l.read_until(each_printed({"ps:0", "worker:0", "worker:1"}, "ready"), 30), l.output());
  const auto started = started_tasks(l.output());
  auto pids = pids_of(started);
  static const std::regex child_line(R"(\[worker:0\] child (\d+))");
  std::smatch m;
  BOOST_REQUIRE(std::regex_search(l.output(), m, child_line));
  const pid_t grandchild = std::stoi(m[1]);
  pids.push_back(grandchild);
  BOOST_REQUIRE(survivors(pids, 0).size() == pids.size());  // all alive before the signal

  ::kill(l.pid(), SIGTERM);
  const int status = l.wait(30);
  BOOST_TEST_INFO("output:\n" << l.output());
  BOOST_TEST(exit_code(status) == 128 + SIGTERM);
  BOOST_TEST(contains(l.output(), "[launcher] received SIGTERM"));
  BOOST_TEST(survivors(pids, 5).empty());
}

BOOST_AUTO_TEST_CASE(sigint_to_the_launcher_is_forwarded_to_every_task) {
  launcher_process l({"--ps", "1", "--workers", "2"}, {"*=trap,say:ready,hang"});
  BOOST_REQUIRE_MESSAGE(l.read_until(each_printed({"ps:0", "worker:0", "worker:1"}, "ready"), 30), l.output());
  ::kill(l.pid(), SIGINT);
  const int status = l.wait(30);
  BOOST_TEST_INFO("output:\n" << l.output());
  BOOST_TEST(exit_code(status) == 128 + SIGINT);
  BOOST_TEST(each_printed({"ps:0", "worker:0", "worker:1"}, "got signal " + std::to_string(SIGINT))(l.output()));
}

BOOST_AUTO_TEST_CASE(killing_the_launcher_with_sigkill_takes_its_tasks_down) {
  launcher_process l({"--ps", "1", "--workers", "2"}, {"*=say:ready,hang"});
  BOOST_REQUIRE_MESSAGE(l.read_until(each_printed({"ps:0", "worker:0", "worker:1"}, "ready"), 30), l.output());
  const auto pids = pids_of(started_tasks(l.output()));
  BOOST_REQUIRE(pids.size() == 3u);
  ::kill(l.pid(), SIGKILL);
  l.wait(30);
  BOOST_TEST(survivors(pids, 10).empty(), "tasks orphaned by a killed launcher:\n" << l.output());
}

BOOST_AUTO_TEST_CASE(the_timeout_stops_the_cluster_with_status_124) {
  launcher_process l({"--ps", "1", "--workers", "1", "--timeout", "1"}, {"*=hang"});
  const int status = l.wait();
  BOOST_TEST_INFO("output:\n" << l.output());
  BOOST_TEST(exit_code(status) == 124);
  BOOST_TEST(contains(l.output(), "[launcher] the run exceeded --timeout 1 s; stopping the cluster"));
  BOOST_TEST(l.elapsed() >= 1.0);
  BOOST_TEST(l.elapsed() < 10.0);
  BOOST_TEST(survivors(pids_of(started_tasks(l.output())), 5).empty());
}

// A single-host job's tasks share one random token unless one is set (--token-env, which used
// to ask for it, is now what every such job does).
BOOST_AUTO_TEST_CASE(every_task_gets_one_random_token_unless_one_is_set) {
  const auto tokens = [](const std::string& output) {
    std::set<std::string> out;
    for (const std::string task : {"ps:0", "worker:0", "worker:1"}) {
      for (const auto& line : lines_of(output, task)) {
        if (line.rfind("token ", 0) == 0) out.insert(line.substr(6));
      }
    }
    return out;
  };
  launcher_process first({"--token-env"}, {"*=token"});
  launcher_process second({"--token-env"}, {"*=token"});
  launcher_process given({"--token-env"}, {"*=token"}, {"DSGD_CLUSTER_TOKEN=given-secret"});
  launcher_process without_option({}, {"*=token"});
  for (auto* l : {&first, &second, &given, &without_option}) BOOST_TEST(exit_code(l->wait()) == 0, l->output());

  const auto a = tokens(first.output()), b = tokens(second.output());
  BOOST_REQUIRE(a.size() == 1u);  // one token shared by every task
  BOOST_REQUIRE(b.size() == 1u);
  BOOST_TEST(std::regex_match(*a.begin(), std::regex("[0-9a-f]{64}")), *a.begin());
  BOOST_TEST(*a.begin() != *b.begin());
  BOOST_TEST(tokens(given.output()) == (std::set<std::string>{"given-secret"}));
  const auto c = tokens(without_option.output());
  BOOST_REQUIRE(c.size() == 1u);
  BOOST_TEST(std::regex_match(*c.begin(), std::regex("[0-9a-f]{64}")), *c.begin());
  BOOST_TEST(*c.begin() != *a.begin());
}

BOOST_AUTO_TEST_CASE(bad_options_give_a_usage_error_naming_the_option) {
  struct bad_case {
    std::vector<std::string> options;
    bool with_program;
    std::string named;
  };
  const std::vector<bad_case> cases{
      {{"--ps", "x"}, true, "--ps"},
      {{"--ps", "-1"}, true, "--ps"},
      {{"--workers", "0"}, true, "--workers"},
      {{"--bogus"}, true, "--bogus"},
      {{"--timeout", "soon"}, true, "--timeout"},
      {{"--ps-grace", "-2"}, true, "--ps-grace"},
      {{"--port-base", "65535"}, true, "--port-base"},
      {{"--chief=yes"}, true, "--chief"},
      {{"--host", "bad host!"}, true, "--host"},
      {{"--nnodes", "2", "--hosts", "a"}, true, "--hosts"},
      {{"--nnodes", "2", "--hosts", "a,b"}, true, "--port-base"},
      {{"--nnodes", "2", "--node-rank", "2", "--hosts", "a,b", "--port-base", "3000"}, true, "--node-rank"},
      {{"--hosts", "a,b"}, true, "without --nnodes"},
      {{"--nnodes", "0"}, true, "--nnodes"},
      {{"--max-restarts", "-1"}, true, "--max-restarts"},
      {{"--workers", "3:2"}, true, "--workers 3:2: MIN must be from 1 to MAX (2)"},
      {{"--workers", "0:2"}, true, "--workers"},
      {{"--workers", "1:x"}, true, "--workers"},
      {{"--workers", "2:3", "--nnodes", "2", "--hosts", "a,b", "--port-base", "3000"}, true, "one host"},
      {{"--ps"}, false, "--ps"},
      {{}, false, "no program"},
  };
  for (const auto& c : cases) {
    launcher_process l(c.options, {"*=config"}, {}, c.with_program);
    const int status = l.wait();
    BOOST_TEST_CONTEXT("options " << (c.options.empty() ? "(none)" : c.options[0]) << ", output:\n" << l.output()) {
      BOOST_TEST(exit_code(status) == 2);
      BOOST_TEST(contains(l.output(), c.named));
      BOOST_TEST(contains(l.output(), "usage: dsgd-launch") == (c.named != "--host"));
      BOOST_TEST(started_tasks(l.output()).empty());  // nothing was launched
    }
  }
}

BOOST_AUTO_TEST_CASE(a_program_that_cannot_run_is_reported_and_stops_the_cluster) {
  const std::string missing = "./no-such-program-for-dsgd-launch";
  std::vector<std::string> args{"--ps", "1", "--workers", "1", "--", missing};
  launcher_process l(args, {}, {}, false);
  const int status = l.wait();
  BOOST_TEST_INFO("output:\n" << l.output());
  BOOST_TEST(exit_code(status) == 127);
  BOOST_TEST(contains(l.output(), "cannot run \"" + missing + "\""));
  BOOST_TEST(contains(l.output(), "exited with status 127; stopping the cluster"));
}

BOOST_AUTO_TEST_SUITE_END()
