// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The job every host's launcher derives alike from the options: the cluster spec (task k, ps
// first, then the chief, then the workers, on host k mod nnodes at port base + k, or on free
// ports), this host's share of the tasks, and the environment each task is started with.
#pragma once

#include "options.hpp"
#include "output.hpp"
#include "task.hpp"

#include <dsgd/cluster/cluster_spec.hpp>
#include <dsgd/cluster/tf_config.hpp>
#include <dsgd/error.hpp>

#include <netdb.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

extern char** environ;

namespace dsgd_launch {

/// Picks `count` distinct free TCP ports on `host` by binding port 0. All sockets stay open until
/// every port is chosen, so the kernel cannot hand out one port twice; they are closed before the
/// tasks start (another process could take a port in between: the tasks then fail to listen and
/// the launcher reports it, which is the best any port-0 scheme can do).
inline std::vector<int> pick_free_ports(const std::string& host, int count) {
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
inline std::string random_token() {
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

/// The whole job's cluster and this host's share of its tasks.
struct job {
  dsgd::cluster::cluster_spec cluster;
  std::vector<task> tasks;  // in start order: ps first, so workers find them listening early
  std::string threads;      // OMP_NUM_THREADS given to every task; empty: the user's own setting
  std::string token;        // DSGD_CLUSTER_TOKEN given to every task (--token-env); empty: none
};

/// The job of `o`, the same on every host's launcher; says what this host starts.
/// @throws usage_error for a host that is not valid, dsgd::error when no free port is found
inline job plan_job(const options& o) {
  job j;
  const int total = o.ps + (o.chief ? 1 : 0) + o.workers;
  const std::vector<std::string> names = o.nnodes > 1 ? o.hosts : std::vector<std::string>{o.host};
  std::vector<std::string> hosts;
  for (const auto& name : names) {
    const std::string host = name.find(':') != std::string::npos ? "[" + name + "]" : name;
    // Validates each host the way every task will (bad characters, IPv6 brackets), before any
    // socket is opened on it.
    try {
      dsgd::cluster::task_address::parse(host + ":1");
    } catch (const dsgd::error& e) {
      throw usage_error{std::string(o.nnodes > 1 ? "option --hosts" : "option --host") + ": \"" + name +
                        "\" is not a valid host: " + e.what()};
    }
    hosts.push_back(host);
  }
  std::vector<int> ports;
  if (o.port_base == 0) {
    ports = pick_free_ports(o.host, total);
  } else {
    for (int k = 0; k < total; ++k) ports.push_back(o.port_base + k);
  }
  std::map<std::string, std::vector<std::string>> jobs;
  std::size_t next = 0;
  const auto add = [&](const std::string& name, int count) {
    for (int i = 0; i < count; ++i, ++next) {
      const std::size_t node = next % hosts.size();
      const std::string address = hosts[node] + ":" + std::to_string(ports[next]);
      jobs[name].push_back(address);
      if (static_cast<int>(node) != o.node_rank % static_cast<int>(hosts.size())) continue;
      task t;
      t.id = {name, i};
      t.address = address;
      t.output.prefix = "[" + t.id.to_string() + "] ";
      j.tasks.push_back(std::move(t));
    }
  };
  // Start order is the order of tasks: ps first, so workers find them listening early (the
  // library waits for a late ps anyway).
  add("ps", o.ps);
  if (o.chief) add("chief", 1);
  add("worker", o.workers);
  j.cluster = dsgd::cluster::cluster_spec(jobs);
  if (o.nnodes > 1) {
    std::string mine;
    for (const auto& t : j.tasks) mine += (mine.empty() ? "" : ", ") + t.id.to_string();
    say("node " + std::to_string(o.node_rank) + " of " + std::to_string(o.nnodes) + " (" +
        o.hosts[static_cast<std::size_t>(o.node_rank)] + "): starting " + (mine.empty() ? "no task" : mine) + " of " +
        std::to_string(total));
  }
  // Tasks that share this host's cores get one compute thread each unless told otherwise:
  // OpenMP and BLAS threads of several tasks on the same cores only preempt each other.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (std::getenv("OMP_NUM_THREADS") == nullptr && !j.tasks.empty()) {
    j.threads = std::to_string(std::max<std::size_t>(1, cores / j.tasks.size()));
    say(std::to_string(j.tasks.size()) + (j.tasks.size() == 1 ? " task on" : " tasks share") + " this host's " +
        std::to_string(cores) + " cores: OMP_NUM_THREADS=" + j.threads + " per task (set OMP_NUM_THREADS to choose)");
  }
  return j;
}

/// The environment `t` is started with: the launcher's own, with the task's TF_CONFIG and what
/// the job gives every task.
inline std::vector<std::string> task_environment(const job& j, const task& t, const options& o) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.rfind("TF_CONFIG=", 0) == 0) continue;
    if (!j.token.empty() && entry.rfind("DSGD_CLUSTER_TOKEN=", 0) == 0) continue;
    env.emplace_back(entry);
  }
  const dsgd::cluster::tf_config config{j.cluster, t.id, {}, {}};
  env.push_back("TF_CONFIG=" + config.to_json().dump());
  if (!j.token.empty()) env.push_back("DSGD_CLUSTER_TOKEN=" + j.token);
  // The tasks share this machine's cores: OpenMP threads that spin between parallel regions
  // (libgomp's default) starve the other tasks, so they sleep instead unless told otherwise.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) env.push_back("OMP_WAIT_POLICY=passive");
  // An elastic job: the replicas (chief and workers) a sync step needs; the spec's are the slots.
  if (o.min_workers > 0) env.push_back("DSGD_MIN_REPLICAS=" + std::to_string(o.min_workers + (o.chief ? 1 : 0)));
  if (!j.threads.empty()) {
    env.push_back("OMP_NUM_THREADS=" + j.threads);
    if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) env.push_back("OPENBLAS_NUM_THREADS=" + j.threads);
  }
  return env;
}

}  // namespace dsgd_launch
