// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Fan-in of the ps: W workers push + pull one dense variable through P ps tasks over loopback
// TCP, against the same-run figure of a raw-socket server (one thread, epoll) that takes the
// same W connections and the same bytes in the same messages.
//
// Every server (each ps task, each raw server) is a process of its own, forked per
// configuration, so that its CPU time (/proc/PID/task/*/schedstat) and resident memory
// (/proc/PID/status VmRSS) are its own. The workers are ps_client connections held by client
// threads of this process: each thread holds W/threads of them and multiplexes them, sending
// every one's push before collecting the answers, then every one's pull (with W <= threads each
// thread is one worker doing push() then pull()). Per step each worker sends S bytes (the
// gradient; answered by a short reply) and receives S bytes (the values): the raw server gets
// the same two messages per step, {S bytes in, 8 out} and {0 in, S out}.
//
// Rules: async (each push applied on arrival: no barrier hides the ps's rate) and sync
// (sync_average over all W workers: each pull waits for the step). One repetition of every
// variant of a configuration runs before the next repetition of any, so that load from other
// processes falls on all variants alike. Prints one CSV row per repetition:
//   rule,variant,workers,ps,bytes,threads,rep,steps,seconds,server_cpu_s,rss_idle_kb,rss_connected_kb,rss_end_kb
// (server_cpu_s, rss_*: summed over the P servers; rss_idle: listening, before any connection)
// bench/fan_in/table.py turns the rows into medians and ratios; bench/fan_in/run.sh runs both.
//
//   dsgd_bench_fan_in [--workers=W,...] [--sizes=B,...] [--ps=P,...] [--rules=async,sync]
//                     [--variants=raw,dsgd_tcp,dsgd,dsgd_tcp_2t,...] [--threads=N] [--reps=N] [--warmup=N]
//                     [--bytes-per-rep=B] [--max-steps=N] [--smoke]
//
// Variants: raw (the baseline); dsgd_tcp (every payload on the socket, as between hosts);
// dsgd (the defaults: on loopback payloads through shared memory, 8 MiB of rings a connection);
// either with "_<N>t" (dsgd_tcp_2t): each ps serves its connections on N threads
// (serving_options::threads).
// RLIMIT_NOFILE is raised to its hard limit at start (a line on stderr says to what); a run that
// needs more descriptors than that fails with a message saying how many.
//
// Exits with status 1 when a pulled value or byte is wrong, or (--smoke) a row is not sane.
#include <dsgd/client/ps_client.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/partitioned.hpp>
#include <dsgd/server/parameter_server.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/sync_average.hpp>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <latch>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

// A power of two, so that values - k * learning_rate stays exact and checkable.
constexpr float learning_rate = 1.f / 1024.f;
constexpr int socket_buffer_bytes = 4 << 20;  // what tcp_options asks for by default

struct settings {
  std::vector<std::size_t> workers{1, 4, 16, 32};
  std::vector<std::size_t> sizes{4 << 10, 256 << 10, 4 << 20};
  std::vector<std::size_t> ps{1};
  std::vector<std::string> rules{"async", "sync"};
  std::vector<std::string> variants{"raw", "dsgd_tcp", "dsgd"};
  std::size_t threads = 32;  // client threads at most
  int reps = 5;
  int warmup = 1;
  std::size_t bytes_per_rep = std::size_t{128} << 20;  // S x W x steps, per direction
  std::size_t max_steps = 1000;
  std::size_t min_steps = 4;
  bool smoke = false;
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "dsgd_bench_fan_in: %s\n", what.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

void check_sys(long rc, const char* what) {
  if (rc < 0) fail(std::string(what) + ": " + std::strerror(errno));
}

// --- a server process and what it costs -------------------------------------------------------

// A forked server: its pid and the port it listens on (127.0.0.1).
struct server_process {
  pid_t pid = -1;
  std::uint16_t port = 0;
};

// Runs this program again as a server (`--serve=...` @p args, and the pipe it reports its port
// on) in a child process: a fresh image, whose memory is its own from the start rather than
// pages shared with this process, and which dies with this process (PR_SET_PDEATHSIG).
server_process fork_server(std::vector<std::string> args) {
  int fds[2];
  check_sys(::pipe(fds), "pipe");
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  check_sys(pid, "fork");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) std::_Exit(4);
    ::close(fds[0]);
    args.insert(args.begin(), "dsgd_bench_fan_in");
    args.push_back("--report-fd=" + std::to_string(fds[1]));
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv("/proc/self/exe", argv.data());
    std::_Exit(5);
  }
  ::close(fds[1]);
  server_process s{pid, 0};
  if (::read(fds[0], &s.port, sizeof s.port) != sizeof s.port) fail("a server process died before listening");
  ::close(fds[0]);
  return s;
}

// A server's side of fork_server(): tells the parent the port it listens on.
void report_port(int fd, std::uint16_t port) {
  if (::write(fd, &port, sizeof port) != sizeof port) std::_Exit(3);
  ::close(fd);
}

// CPU seconds every thread of @p pid has run (schedstat: nanoseconds, not clock ticks).
double cpu_seconds(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (!d) fail("cannot read " + dir);
  double ns = 0;
  while (auto* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(dir + "/" + e->d_name + "/schedstat");
    double run = 0;
    if (f >> run) ns += run;
  }
  ::closedir(d);
  return ns * 1e-9;
}

// Resident set of @p pid in KiB.
long rss_kb(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
  fail("no VmRSS for pid " + std::to_string(pid));
}

double cpu_seconds(const std::vector<server_process>& ps) {
  double s = 0;
  for (const auto& p : ps) s += cpu_seconds(p.pid);
  return s;
}

long rss_kb(const std::vector<server_process>& ps) {
  long s = 0;
  for (const auto& p : ps) s += rss_kb(p.pid);
  return s;
}

void reap(const std::vector<server_process>& ps, bool kill) {
  for (const auto& p : ps) {
    if (kill) ::kill(p.pid, SIGTERM);
    int status = 0;
    check_sys(::waitpid(p.pid, &status, 0), "waitpid");
    if (!kill && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
      fail("a ps process ended with status " + std::to_string(status));
  }
}

// --- raw sockets: the baseline ------------------------------------------------------------------

void tune(int fd) {
  int one = 1;
  check_sys(::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), "TCP_NODELAY");
  int bytes = socket_buffer_bytes;
  check_sys(::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes), "SO_SNDBUF");
  check_sys(::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes), "SO_RCVBUF");
}

// The byte the raw server sends at offset i of a reply, checked by the client.
std::byte pattern(std::size_t i) { return std::byte(i * 131 % 251); }

// One thread, epoll: per message reads a 16-byte header {in, out}, then `in` bytes (into a
// scratch buffer: a sink), then writes `out` bytes of a fixed source buffer. The ps's work
// without the ps: the same messages, the same bytes, the same single thread.
void raw_server(std::size_t max_bytes, int report_fd) {
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  check_sys(listener, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check_sys(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), "bind");
  check_sys(::listen(listener, 4096), "listen");
  socklen_t len = sizeof addr;
  check_sys(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), "getsockname");
  const int ep = ::epoll_create1(0);
  check_sys(ep, "epoll_create1");
  epoll_event ev{.events = EPOLLIN, .data = {.fd = listener}};
  check_sys(::epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev), "epoll_ctl");
  std::vector<std::byte> source(max_bytes + 8), sink(std::max<std::size_t>(max_bytes, 1 << 16));
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = pattern(i);
  struct conn {
    std::uint64_t header[2]{};
    std::size_t header_got = 0, in_left = 0, out_left = 0, out_at = 0;
  };
  std::vector<conn> conns;
  report_port(report_fd, ntohs(addr.sin_port));
  std::vector<epoll_event> events(256);
  while (true) {
    const int n = ::epoll_wait(ep, events.data(), int(events.size()), -1);
    if (n < 0 && errno == EINTR) continue;
    check_sys(n, "epoll_wait");
    for (int e = 0; e < n; ++e) {
      const int fd = events[e].data.fd;
      if (fd == listener) {
        while (true) {
          int c = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK);
          if (c < 0) break;
          tune(c);
          if (std::size_t(c) >= conns.size()) conns.resize(c + 1);
          conns[c] = {};
          epoll_event ce{.events = EPOLLIN, .data = {.fd = c}};
          check_sys(::epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce), "epoll_ctl");
        }
        continue;
      }
      auto& s = conns[fd];
      bool closed = false;
      // Reads as far as the socket has bytes, then writes as far as it takes them.
      while (!closed && s.out_left == 0) {
        ssize_t k;
        if (s.header_got < sizeof s.header) {
          k = ::recv(fd, reinterpret_cast<char*>(s.header) + s.header_got, sizeof s.header - s.header_got, 0);
          if (k > 0 && (s.header_got += std::size_t(k)) == sizeof s.header) {
            s.in_left = s.header[0];
            if (s.in_left == 0) s.out_left = s.header[1], s.out_at = 0;
          }
        } else {
          k = ::recv(fd, sink.data(), std::min(s.in_left, sink.size()), 0);
          if (k > 0 && (s.in_left -= std::size_t(k)) == 0) s.out_left = s.header[1], s.out_at = 0;
        }
        if (k == 0) closed = true;
        if (k < 0) {
          if (errno != EAGAIN && errno != EWOULDBLOCK) closed = true;
          break;
        }
      }
      while (!closed && s.out_left > 0) {
        const ssize_t k = ::send(fd, source.data() + s.out_at, s.out_left, MSG_NOSIGNAL);
        if (k < 0) {
          if (errno != EAGAIN && errno != EWOULDBLOCK) closed = true;
          break;
        }
        s.out_at += std::size_t(k);
        s.out_left -= std::size_t(k);
        if (s.out_left == 0) s.header_got = 0;  // the next message
      }
      if (closed) {
        ::epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
        ::close(fd);
        continue;
      }
      epoll_event ce{.events = std::uint32_t(s.out_left > 0 ? EPOLLOUT : EPOLLIN), .data = {.fd = fd}};
      check_sys(::epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ce), "epoll_ctl");
    }
  }
}

void send_all(int fd, const void* data, std::size_t n) {
  auto p = static_cast<const char*>(data);
  while (n > 0) {
    auto k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    check_sys(k, "send");
    p += k;
    n -= std::size_t(k);
  }
}

void recv_all(int fd, void* data, std::size_t n) {
  auto p = static_cast<char*>(data);
  while (n > 0) {
    auto k = ::recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    check_sys(k, "recv");
    if (k == 0) fail("a raw server closed a connection");
    p += k;
    n -= std::size_t(k);
  }
}

// --- the workers ----------------------------------------------------------------------------------

// One configuration's servers and its W workers.
class fleet {
 public:
  virtual ~fleet() = default;
  virtual const std::vector<server_process>& servers() const = 0;
  // Connects the workers (after every server of the configuration is forked, so that no server
  // inherits another's client sockets or shared-memory rings).
  virtual void connect() = 0;
  // Runs @p steps steps of the workers [first, last) on the calling thread.
  virtual void run(std::size_t first, std::size_t last, std::size_t steps) = 0;
  virtual void finish() = 0;
  virtual std::size_t workers() const = 0;
};

// W workers, each with one socket to each of P raw servers, S/P bytes to each.
class raw_fleet final : public fleet {
 public:
  raw_fleet(std::size_t w, std::size_t p, std::size_t bytes) : bytes_(bytes / p), w_(w) {
    for (std::size_t i = 0; i < p; ++i)
      servers_.push_back(fork_server({"--serve=raw", "--bytes=" + std::to_string(bytes_)}));
  }
  void connect() override {
    out_.assign(bytes_, std::byte{1});
    in_.resize(w_);
    for (std::size_t i = 0; i < w_; ++i) {
      in_[i].resize(bytes_);
      for (const auto& s : servers_) {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        check_sys(fd, "socket");
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(s.port);
        check_sys(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), "connect");
        tune(fd);
        fds_.push_back(fd);
      }
    }
  }
  const std::vector<server_process>& servers() const override { return servers_; }
  std::size_t workers() const override { return w_; }
  void run(std::size_t first, std::size_t last, std::size_t steps) override {
    const std::size_t p = servers_.size();
    const std::uint64_t push_header[2]{bytes_, 8}, pull_header[2]{0, bytes_};
    std::uint64_t ack = 0;
    for (std::size_t step = 0; step < steps; ++step) {
      // The push: every worker's gradient to every server, then every short answer.
      for (std::size_t i = first; i < last; ++i)
        for (std::size_t j = 0; j < p; ++j) {
          send_all(fds_[i * p + j], push_header, sizeof push_header);
          send_all(fds_[i * p + j], out_.data(), bytes_);
        }
      for (std::size_t i = first; i < last; ++i)
        for (std::size_t j = 0; j < p; ++j) recv_all(fds_[i * p + j], &ack, sizeof ack);
      // The pull: every request, then every worker's values.
      for (std::size_t i = first; i < last; ++i)
        for (std::size_t j = 0; j < p; ++j) send_all(fds_[i * p + j], pull_header, sizeof pull_header);
      for (std::size_t i = first; i < last; ++i)
        for (std::size_t j = 0; j < p; ++j) {
          recv_all(fds_[i * p + j], in_[i].data(), bytes_);
          if (in_[i].front() != pattern(0) || in_[i].back() != pattern(bytes_ - 1))
            fail("a raw server sent other bytes");
        }
    }
  }
  void finish() override {
    for (int fd : fds_) ::close(fd);
    fds_.clear();
    reap(servers_, true);
  }

 private:
  std::size_t bytes_, w_;
  std::vector<server_process> servers_;
  std::vector<int> fds_;  // worker i, server j at i * P + j
  std::vector<std::byte> out_;
  std::vector<std::vector<std::byte>> in_;
};

// A ps process (`--serve=async|sync`): ps task @p index of @p p, for @p w workers. A spec names
// fixed ports: it takes one the system reports free; task addresses no one dials are distinct
// placeholder ports (a spec has no duplicates).
template <class Rule>
void serve_ps(std::size_t w, std::size_t p, std::size_t index, bool shared_memory, std::size_t threads, int report_fd) {
  typename dsgd::server::parameter_server<Rule, dsgd::optim::sgd>::options o;
  o.serving.threads = threads;
  o.connection.token = "bench";
  o.optimizer = {learning_rate};
  o.connection.shared_memory.enabled = shared_memory;
  o.connection.checksum_payloads = dsgd::transport::payload_checksums::never;
  o.connection.log = [](std::string_view) {};
  o.serving.chief_timeout = std::chrono::milliseconds(0);
  std::uint16_t port = 0;
  {
    boost::asio::io_context ctx;
    boost::asio::ip::tcp::acceptor a(ctx, {boost::asio::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }
  std::vector<std::string> ps, workers;
  for (std::size_t k = 0; k < p; ++k) ps.push_back("127.0.0.1:" + std::to_string(k == index ? port : 2 + w + k));
  for (std::size_t i = 0; i < w; ++i) workers.push_back("127.0.0.1:" + std::to_string(1 + i));
  dsgd::server::parameter_server<Rule, dsgd::optim::sgd> server(
      dsgd::cluster::cluster_spec({{"ps", ps}, {"worker", workers}}), int(index), o);
  report_port(report_fd, server.local_endpoint().port());
  server.join();
}

// W workers as ps_clients of P ps tasks holding one variable of S bytes cut into P slices.
template <class Rule>
class ps_fleet final : public fleet {
 public:
  ps_fleet(std::size_t w, std::size_t p, std::size_t bytes, bool shared_memory, std::size_t ps_threads)
      : floats_(bytes / sizeof(float)), shared_memory_(shared_memory), grad_(floats_, 1.f), values_(w), steps_(w, 0) {
    const std::string rule = std::same_as<Rule, dsgd::update::sync_average> ? "sync" : "async";
    for (std::size_t j = 0; j < p; ++j)
      servers_.push_back(fork_server({"--serve=" + rule, "--workers=" + std::to_string(w), "--ps=" + std::to_string(p),
                                      "--index=" + std::to_string(j), "--shm=" + std::to_string(int(shared_memory)),
                                      "--ps-threads=" + std::to_string(ps_threads)}));
  }

  void connect() override {
    const std::size_t w = values_.size(), p = servers_.size();
    std::vector<std::string> addresses, workers;
    for (const auto& s : servers_) addresses.push_back("127.0.0.1:" + std::to_string(s.port));
    for (std::size_t i = 0; i < w; ++i) workers.push_back("127.0.0.1:" + std::to_string(1 + i));
    const dsgd::cluster::cluster_spec spec({{"ps", addresses}, {"worker", workers}});
    plan_ = dsgd::placement::partitioned::fixed_size(p).place({{"v", dsgd::shape{floats_}}}, p);
    dsgd::client::client_options c;
    c.connection.token = "bench";
    c.connection.shared_memory.enabled = shared_memory_;
    c.connection.checksum_payloads = dsgd::transport::payload_checksums::never;
    c.connection.log = [](std::string_view) {};
    for (std::size_t i = 0; i < w; ++i) {
      clients_.push_back(std::make_unique<dsgd::client::ps_client>(spec, dsgd::cluster::task_id{"worker", int(i)}, c));
      clients_.back()->connect();
      clients_.back()->register_worker(plan_, i, i == 0);
      values_[i].assign(floats_, 0.f);
    }
    std::vector<std::span<const float>> init{std::span<const float>(values_[0])};
    clients_[0]->initialize(plan_, init);
    for (auto& cl : clients_) cl->wait_ready();
  }

  const std::vector<server_process>& servers() const override { return servers_; }
  std::size_t workers() const override { return clients_.size(); }

  void run(std::size_t first, std::size_t last, std::size_t steps) override {
    constexpr bool sync = std::same_as<Rule, dsgd::update::sync_average>;
    std::vector<std::span<const float>> g{std::span<const float>(grad_)};
    std::vector<dsgd::client::push_operation> pushes(last - first);
    std::vector<dsgd::client::pull_operation> pulls(last - first);
    std::vector<std::vector<std::span<float>>> dst(last - first);
    for (std::size_t i = first; i < last; ++i) dst[i - first] = {std::span<float>(values_[i])};
    for (std::size_t step = 0; step < steps; ++step) {
      if (last - first == 1) {
        auto& cl = *clients_[first];
        cl.push(plan_, sync ? steps_[first] : 0, g);
        cl.pull(plan_, sync ? steps_[first] + 1 : 0, dst[0]);
      } else {
        // Every worker's push goes out before any answer is awaited, then every pull.
        for (std::size_t i = first; i < last; ++i) {
          pushes[i - first] = clients_[i]->start_push(plan_, sync ? steps_[i] : 0, g);
          clients_[i]->push_variable(pushes[i - first], 0);
          clients_[i]->flush();
        }
        for (std::size_t i = first; i < last; ++i) clients_[i]->finish_push(pushes[i - first]);
        for (std::size_t i = first; i < last; ++i)
          pulls[i - first] = clients_[i]->start_pull(plan_, sync ? steps_[i] + 1 : 0, dst[i - first]);
        for (std::size_t i = first; i < last; ++i) clients_[i]->wait(pulls[i - first]);
      }
      for (std::size_t i = first; i < last; ++i) {
        ++steps_[i];
        check(i, sync);
      }
    }
  }

  void finish() override {
    constexpr bool sync = std::same_as<Rule, dsgd::update::sync_average>;
    if (!sync) {
      // Every push is applied: the values are minus all of them, times the learning rate.
      std::uint64_t total = 0;
      for (auto s : steps_) total += s;
      std::vector<std::span<float>> dst{std::span<float>(values_[0])};
      clients_[0]->pull(plan_, 0, dst);
      const float expected = -float(total) * learning_rate;
      for (std::size_t at : {std::size_t{0}, floats_ / 2, floats_ - 1})
        if (values_[0][at] != expected)
          fail("async: value[" + std::to_string(at) + "] is " + std::to_string(values_[0][at]) + " after " +
               std::to_string(total) + " pushes, expected " + std::to_string(expected));
    }
    for (std::size_t i = 1; i < clients_.size(); ++i) clients_[i]->finish();
    clients_[0]->finish();
    clients_[0]->shutdown_cluster();
    clients_.clear();
    reap(servers_, false);
  }

 private:
  // Sync: after step t every worker's values are -(t+1) x rate exactly (the mean of W ones per
  // step). Async: at least this worker's own pushes are in them.
  void check(std::size_t i, bool sync) const {
    const auto& v = values_[i];
    const float own = -float(steps_[i]) * learning_rate;
    for (std::size_t at : {std::size_t{0}, floats_ / 2, floats_ - 1})
      if (sync ? v[at] != own : v[at] > own)
        fail(std::string(sync ? "sync" : "async") + ": worker " + std::to_string(i) + " pulled " +
             std::to_string(v[at]) + " at [" + std::to_string(at) + "] after " + std::to_string(steps_[i]) +
             " steps, expected " + (sync ? "" : "at most ") + std::to_string(own));
  }

  std::size_t floats_;
  bool shared_memory_;
  std::vector<float> grad_;
  std::vector<std::vector<float>> values_;
  std::vector<std::uint64_t> steps_;
  std::vector<server_process> servers_;
  dsgd::placement::plan plan_;
  std::vector<std::unique_ptr<dsgd::client::ps_client>> clients_;
};

// Runs @p steps steps of every worker on @p threads threads; @returns the seconds from the
// first thread's start to the last one's end (each thread times itself: the caller may be
// scheduled out while they run).
double timed_steps(fleet& f, std::size_t threads, std::size_t steps) {
  const std::size_t w = f.workers();
  std::latch go{std::ptrdiff_t(threads)};
  std::vector<clock_type::time_point> starts(threads), ends(threads);
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      go.arrive_and_wait();
      starts[t] = clock_type::now();
      try {
        f.run(w * t / threads, w * (t + 1) / threads, steps);
      } catch (const std::exception& e) {
        fail(e.what());
      }
      ends[t] = clock_type::now();
    });
  for (auto& th : pool) th.join();
  return std::chrono::duration<double>(*std::max_element(ends.begin(), ends.end()) -
                                       *std::min_element(starts.begin(), starts.end()))
      .count();
}

// A dsgd variant's name: dsgd_tcp or dsgd, and with "_<N>t" a ps on N threads
// (serving_options::threads; 1 without). @returns {base, N}, or N = 0 when the name is neither.
std::pair<std::string, std::size_t> split_variant(const std::string& v) {
  std::string base = v;
  std::size_t threads = 1;
  if (auto u = v.rfind('_');
      u != std::string::npos && v.size() > u + 2 && v.back() == 't' &&
      std::all_of(v.begin() + std::ptrdiff_t(u) + 1, v.end() - 1, [](char c) { return c >= '0' && c <= '9'; })) {
    base = v.substr(0, u);
    threads = std::stoull(v.substr(u + 1, v.size() - u - 2));
  }
  if ((base != "dsgd_tcp" && base != "dsgd") || threads < 1 || threads > 1024) return {base, 0};
  return {base, threads};
}

std::unique_ptr<fleet> make_fleet(const std::string& rule, const std::string& variant, std::size_t w, std::size_t p,
                                  std::size_t bytes) {
  if (variant == "raw") return std::make_unique<raw_fleet>(w, p, bytes);
  const auto [base, ps_threads] = split_variant(variant);
  const bool shm = base == "dsgd";
  if (rule == "sync") return std::make_unique<ps_fleet<dsgd::update::sync_average>>(w, p, bytes, shm, ps_threads);
  return std::make_unique<ps_fleet<dsgd::update::async>>(w, p, bytes, shm, ps_threads);
}

std::size_t rows_printed = 0;

void configuration(const settings& s, const std::string& rule, std::size_t w, std::size_t p, std::size_t bytes) {
  const std::size_t threads = std::min(w, s.threads);
  const std::size_t steps =
      std::clamp<std::size_t>(s.bytes_per_rep / (w * bytes), s.min_steps, std::max(s.min_steps, s.max_steps));
  struct running {
    std::string variant;
    std::unique_ptr<fleet> f;
    long idle = 0, connected = 0;
  };
  std::vector<running> all;
  // The raw server has no rule: under sync its rows are its async figure measured again.
  for (const auto& v : s.variants) {
    all.push_back({v, make_fleet(rule, v, w, p, bytes)});
    all.back().idle = rss_kb(all.back().f->servers());  // listening, before any connection
  }
  for (auto& r : all) {
    r.f->connect();
    r.connected = rss_kb(r.f->servers());
  }
  for (int rep = -s.warmup; rep < s.reps; ++rep)
    for (auto& r : all) {
      const double cpu0 = cpu_seconds(r.f->servers());
      const double t = timed_steps(*r.f, threads, steps);
      const double cpu = cpu_seconds(r.f->servers()) - cpu0;
      if (rep < 0) continue;
      const long end = rss_kb(r.f->servers());
      if (s.smoke && !(t > 0 && cpu > 0 && end > 0 && r.connected > 0))
        fail("smoke: a row is not sane (" + r.variant + ": seconds " + std::to_string(t) + ", server CPU " +
             std::to_string(cpu) + ", RSS " + std::to_string(end) + " KiB)");
      std::printf("%s,%s,%zu,%zu,%zu,%zu,%d,%zu,%.9f,%.9f,%ld,%ld,%ld\n", rule.c_str(), r.variant.c_str(), w, p, bytes,
                  threads, rep, steps, t, cpu, r.idle, r.connected, end);
      std::fflush(stdout);
      ++rows_printed;
    }
  for (auto& r : all) r.f->finish();
}

template <class T>
std::vector<T> parse_list(const std::string& flag, const std::string& list) {
  std::vector<T> out;
  std::size_t at = 0;
  while (at <= list.size()) {
    auto comma = list.find(',', at);
    auto item = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if constexpr (std::is_same_v<T, std::string>) {
      out.push_back(item);
    } else {
      std::size_t used = 0;
      unsigned long long n = 0;
      try {
        n = std::stoull(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != item.size() || n == 0)
        throw std::invalid_argument(flag + ": '" + item + "' is not a positive number");
      out.push_back(T(n));
    }
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

// Raises the soft descriptor limit to the hard one; fails when even that is short of @p need.
void raise_nofile(std::size_t need) {
  rlimit r{};
  check_sys(::getrlimit(RLIMIT_NOFILE, &r), "getrlimit");
  if (r.rlim_cur < r.rlim_max) {
    const auto was = r.rlim_cur;
    r.rlim_cur = r.rlim_max;
    check_sys(::setrlimit(RLIMIT_NOFILE, &r), "setrlimit");
    std::fprintf(stderr, "dsgd_bench_fan_in: RLIMIT_NOFILE raised from %llu to %llu\n", (unsigned long long)was,
                 (unsigned long long)r.rlim_cur);
  }
  if (r.rlim_cur != RLIM_INFINITY && need > r.rlim_cur)
    fail("needs about " + std::to_string(need) + " file descriptors, RLIMIT_NOFILE allows " +
         std::to_string(r.rlim_cur) + " (raise the hard limit: ulimit -Hn)");
}

}  // namespace

int main(int argc, char** argv) {
  // OpenMP threads of a ps that spin between its applies would count as its CPU: run them
  // passive unless told otherwise (libgomp reads this when it loads, hence the exec).
  if (!std::getenv("OMP_WAIT_POLICY")) {
    ::setenv("OMP_WAIT_POLICY", "passive", 1);
    ::execv("/proc/self/exe", argv);
    fail(std::string("cannot re-execute itself with OMP_WAIT_POLICY=passive: ") + std::strerror(errno));
  }
  if (argc > 1 && std::string_view(argv[1]).starts_with("--serve=")) {
    // A server process started by fork_server(): --serve=raw|async|sync and its parameters.
    std::map<std::string, std::string> a;
    for (int i = 1; i < argc; ++i) {
      std::string_view arg = argv[i];
      const auto eq = arg.find('=');
      if (eq == std::string_view::npos) fail("server: bad argument " + std::string(arg));
      a[std::string(arg.substr(2, eq - 2))] = std::string(arg.substr(eq + 1));
    }
    auto num = [&](const char* k) { return std::size_t(std::stoull(a.at(k))); };
    try {
      const int fd = int(num("report-fd"));
      if (a.at("serve") == "raw") raw_server(num("bytes"), fd);
      else if (a.at("serve") == "sync")
        serve_ps<dsgd::update::sync_average>(num("workers"), num("ps"), num("index"), num("shm") != 0,
                                             num("ps-threads"), fd);
      else
        serve_ps<dsgd::update::async>(num("workers"), num("ps"), num("index"), num("shm") != 0, num("ps-threads"), fd);
    } catch (const std::exception& e) {
      fail(std::string("server: ") + e.what());
    }
    return 0;
  }
  settings s;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&](const char* flag) { return a.substr(std::strlen(flag)); };
      if (a == "--smoke") {
        s.smoke = true;
        s.workers = {1, 4};
        s.sizes = {4 << 10, 64 << 10};
        s.ps = {1, 2};
        s.reps = 2;
        s.warmup = 1;
        s.min_steps = 2;
        s.max_steps = 8;
      } else if (a.starts_with("--workers=")) {
        s.workers = parse_list<std::size_t>("--workers", value("--workers="));
      } else if (a.starts_with("--sizes=")) {
        s.sizes = parse_list<std::size_t>("--sizes", value("--sizes="));
      } else if (a.starts_with("--ps=")) {
        s.ps = parse_list<std::size_t>("--ps", value("--ps="));
      } else if (a.starts_with("--rules=")) {
        s.rules = parse_list<std::string>("--rules", value("--rules="));
      } else if (a.starts_with("--variants=")) {
        s.variants = parse_list<std::string>("--variants", value("--variants="));
      } else if (a.starts_with("--threads=")) {
        s.threads = parse_list<std::size_t>("--threads", value("--threads=")).at(0);
      } else if (a.starts_with("--reps=")) {
        s.reps = std::stoi(value("--reps="));
      } else if (a.starts_with("--warmup=")) {
        s.warmup = std::stoi(value("--warmup="));
      } else if (a.starts_with("--bytes-per-rep=")) {
        s.bytes_per_rep = parse_list<std::size_t>("--bytes-per-rep", value("--bytes-per-rep=")).at(0);
      } else if (a.starts_with("--max-steps=")) {
        s.max_steps = parse_list<std::size_t>("--max-steps", value("--max-steps=")).at(0);
      } else {
        throw std::invalid_argument("unknown argument '" + a + "'");
      }
    }
    if (s.reps < 1 || s.warmup < 0) throw std::invalid_argument("--reps must be at least 1, --warmup at least 0");
    for (const auto& r : s.rules)
      if (r != "async" && r != "sync") throw std::invalid_argument("--rules: '" + r + "' is not async or sync");
    for (const auto& v : s.variants)
      if (v != "raw" && split_variant(v).second == 0)
        throw std::invalid_argument(
            "--variants: '" + v +
            "' is not raw, dsgd_tcp or dsgd (each with _<N>t, 1 <= N <= 1024, for a ps on N threads)");
    for (auto b : s.sizes)
      for (auto p : s.ps)
        if (b % (sizeof(float) * p) != 0)
          throw std::invalid_argument("--sizes: " + std::to_string(b) + " bytes do not cut into " + std::to_string(p) +
                                      " slices of whole floats");
  } catch (const std::exception& e) {
    std::fprintf(
        stderr,
        "dsgd_bench_fan_in: %s\nusage: dsgd_bench_fan_in [--workers=W,...] [--sizes=B,...] [--ps=P,...] "
        "[--rules=async,sync] [--variants=raw,dsgd_tcp,dsgd,dsgd_tcp_2t,...] [--threads=N] [--reps=N] [--warmup=N] "
        "[--bytes-per-rep=B] [--max-steps=N] [--smoke]\n",
        e.what());
    return 2;
  }
  // This process holds every variant's client sockets (W x P each, and a few more per
  // ps_client for its io_context): raise the limit before the first one.
  const std::size_t max_w = *std::max_element(s.workers.begin(), s.workers.end());
  const std::size_t max_p = *std::max_element(s.ps.begin(), s.ps.end());
  raise_nofile(s.variants.size() * max_w * (max_p + 4) + 64);
  std::printf(
      "rule,variant,workers,ps,bytes,threads,rep,steps,seconds,server_cpu_s,rss_idle_kb,rss_connected_kb,"
      "rss_end_kb\n");
  try {
    for (const auto& rule : s.rules)
      for (auto p : s.ps)
        for (auto w : s.workers)
          for (auto bytes : s.sizes) configuration(s, rule, w, p, bytes);
  } catch (const std::exception& e) {
    fail(e.what());
  }
  if (s.smoke) {
    const std::size_t expected =
        s.rules.size() * s.ps.size() * s.workers.size() * s.sizes.size() * s.variants.size() * std::size_t(s.reps);
    if (rows_printed != expected)
      fail("smoke: " + std::to_string(rows_printed) + " rows, expected " + std::to_string(expected));
    std::fprintf(stderr, "dsgd_bench_fan_in: smoke ok, %zu rows\n", rows_printed);
  }
  return 0;
}
