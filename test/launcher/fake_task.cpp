// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// A stand-in for a dsgd program, run by dsgd-launch in launcher_test. It reads its role from
// TF_CONFIG and then runs the steps its arguments give for that role:
//
//   fake_task [ROLE=STEP,STEP,...]...
//
// ROLE is "*", a job ("worker") or a task ("worker:1"); the most specific rule wins, and a task
// with no rule just exits 0. Steps:
//   config          print "role R" and "tf_config JSON"
//   bind            bind and listen on the task's own address, then close it, and print
//                   "bound ADDRESS" or "bind failed ADDRESS: REASON"
//   say:TEXT        print TEXT
//   token           print "token VALUE" (or "token (unset)") for DSGD_CLUSTER_TOKEN
//   env:NAME        print "env NAME=VALUE" (or "env NAME (unset)")
//   fail-first:N:F  print "run K" (K counted per task in file F.<role>) and exit 3 while K <= N
//   lines:N         print N numbered lines, alternately on stdout and stderr, each written in
//                   several pieces so that a launcher that mixed lines would be caught
//   partial:TEXT    write TEXT with no newline
//   sleep:S         sleep S seconds
//   hang            sleep until killed
//   ignore-term     ignore SIGTERM from now on
//   trap            on SIGINT or SIGTERM print "got signal N" and exit 0
//   spawn-child     fork a child that sleeps forever, print "child PID"
//   exit:N          exit with status N
//   kill:SIG        send itself signal SIG
// Writes go straight to fds 1 and 2 (no stdio buffer), so nothing is lost when a task is killed.

#include <dsgd/cluster/tf_config.hpp>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sched.h>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

void emit(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n <= 0) return;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

void print(const std::string& line) { emit(STDOUT_FILENO, line + "\n"); }

extern "C" void on_trapped_signal(int sig) {
  char text[32];
  const int n = std::snprintf(text, sizeof text, "got signal %d\n", sig);
  [[maybe_unused]] const auto ignored = ::write(STDOUT_FILENO, text, static_cast<std::size_t>(n));
  ::_exit(0);
}

std::string try_bind(const dsgd::cluster::task_address& address) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  if (const int rc = ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return "bind failed " + address.to_string() + ": " + ::gai_strerror(rc);
  }
  std::string result = "bound " + address.to_string();
  const int fd = ::socket(found->ai_family, found->ai_socktype, found->ai_protocol);
  if (fd < 0 || ::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, 1) != 0) {
    result = "bind failed " + address.to_string() + ": " + std::strerror(errno);
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(found);
  return result;
}

void print_lines(const std::string& role, int count) {
  // The body repeats the task's own name, so a piece of another task's line inside it shows.
  std::string body;
  while (body.size() < 300) body += role + ";";
  for (int k = 0; k < count; ++k) {
    const int fd = k % 2 == 0 ? STDOUT_FILENO : STDERR_FILENO;
    const std::string head = role + " line " + std::to_string(k) + " ";
    emit(fd, head);
    sched_yield();
    emit(fd, body);
    sched_yield();
    emit(fd, " end\n");
  }
}

int run_step(const std::string& step, const dsgd::cluster::tf_config& config) {
  const std::string role = config.task.to_string();
  const auto colon = step.find(':');
  const std::string name = step.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : step.substr(colon + 1);
  if (name == "config") {
    print("role " + role);
    print("tf_config " + std::string(std::getenv("TF_CONFIG")));
  } else if (name == "bind") {
    print(try_bind(config.cluster.address(config.task)));
  } else if (name == "say") {
    print(arg);
  } else if (name == "token") {
    const char* token = std::getenv("DSGD_CLUSTER_TOKEN");
    print("token " + std::string(token != nullptr ? token : "(unset)"));
  } else if (name == "env") {
    const char* value = std::getenv(arg.c_str());
    print("env " + arg + (value != nullptr ? "=" + std::string(value) : std::string(" (unset)")));
  } else if (name == "fail-first") {
    const auto second = arg.find(':');
    const int n = std::stoi(arg.substr(0, second));
    const std::string file = arg.substr(second + 1) + "." + role;
    int runs = 0;
    if (std::ifstream in(file); in) in >> runs;
    std::ofstream(file) << runs + 1;
    print("run " + std::to_string(runs + 1));
    if (runs < n) return 3;
  } else if (name == "lines") {
    print_lines(role, std::stoi(arg));
  } else if (name == "partial") {
    emit(STDOUT_FILENO, arg);
  } else if (name == "sleep") {
    std::this_thread::sleep_for(std::chrono::duration<double>(std::stod(arg)));
  } else if (name == "hang") {
    for (;;) ::pause();
  } else if (name == "ignore-term") {
    std::signal(SIGTERM, SIG_IGN);
  } else if (name == "trap") {
    std::signal(SIGTERM, on_trapped_signal);
    std::signal(SIGINT, on_trapped_signal);
  } else if (name == "spawn-child") {
    const pid_t child = ::fork();
    if (child == 0) {
      for (;;) ::pause();
    }
    print("child " + std::to_string(child));
  } else if (name == "exit") {
    return std::stoi(arg);
  } else if (name == "kill") {
    ::raise(std::stoi(arg));
  } else {
    print("fake_task: unknown step \"" + step + "\"");
    return 99;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const auto config = dsgd::cluster::tf_config::from_environment();
    if (!config) {
      print("fake_task: TF_CONFIG is not set");
      return 98;
    }
    std::map<std::string, std::string> rules;
    for (int i = 1; i < argc; ++i) {
      const std::string rule = argv[i];
      const auto eq = rule.find('=');
      if (eq == std::string::npos) {
        print("fake_task: bad rule \"" + rule + "\"; expected ROLE=STEPS");
        return 97;
      }
      rules[rule.substr(0, eq)] = rule.substr(eq + 1);
    }
    std::string steps;
    for (const std::string& key : {std::string("*"), config->task.job, config->task.to_string()}) {
      if (auto it = rules.find(key); it != rules.end()) steps = it->second;
    }
    std::size_t begin = 0;
    while (begin < steps.size()) {
      std::size_t end = steps.find(',', begin);
      if (end == std::string::npos) end = steps.size();
      if (const int code = run_step(steps.substr(begin, end - begin), *config); code >= 0) return code;
      begin = end + 1;
    }
    return 0;
  } catch (const std::exception& e) {
    print(std::string("fake_task: ") + e.what());
    return 96;
  }
}
