// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// Push + pull of one dense variable between one worker and one ps over loopback TCP, against a
// raw-socket ping-pong of the same bytes measured in the same run; the small-message round trip;
// and the ps's local work per push+pull (the SGD update and one CRC-32C pass),
// so that the gap to raw can be accounted for.
//
// Everything runs in this process: the raw echo server, every ps task and every client are
// threads, and one repetition of every variant runs before the next repetition of any, so that
// load from other processes falls on all variants alike. Prints one CSV row per measurement:
//   workload,variant,bytes,seconds,rep,chunk_bytes,checksum
// bench/push_pull/table.py turns the rows into medians and ratios; bench/push_pull/run.sh runs both.
//
//   dsgd_bench_push_pull [--sizes=B,B,...] [--reps=N] [--warmup=N] [--latency-iters=N] [--smoke] [--tls]
//                        [--ps-netns=NAME --ps-address=IP]
//
// --tls adds variants over TLS (dsgd_tls, dsgd_pull_tls), with certificates made at start-up.
// --ps-netns puts every server (the ps tasks and the raw echo server) in network namespace NAME
// (/run/netns/NAME; needs root), listening on its address IP, while the clients stay in this
// process's namespace: run under `ip netns exec` of another host (bench/hosts/push_pull.sh), the
// bytes cross a veth link between two hosts, where no shared memory is used.
//
// Exits with status 1 when a pulled value or an echoed byte is wrong.
#include <dsgd/client/ps_client.hpp>
#include <dsgd/detail/crc32c.hpp>
#include <dsgd/device/cpu.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/parameter_server.hpp>
#include <dsgd/update/async.hpp>

#include "../../test/support/tls_certs.hpp"  // certificates for --tls, made at run time

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
using async_ps = dsgd::server::parameter_server<dsgd::update::async, dsgd::optim::sgd>;

// A power of two, so that values - k * learning_rate * 1.0 stays exact and checkable.
constexpr float learning_rate = 1.f / 1024.f;
// The socket buffers the transport asks for (tcp_options::socket_buffer_bytes).
constexpr int socket_buffer_bytes = 4 << 20;

struct settings {
  std::vector<std::size_t> sizes{std::size_t{1} << 20, std::size_t{8} << 20, std::size_t{100} << 20};
  int reps = 7;
  int warmup = 2;
  int latency_iters = 2000;
  bool tls = false;
  std::string ps_netns;                  // empty: the servers share the clients' namespace
  std::string ps_address = "127.0.0.1";  // where the servers listen
};

// Where the servers run (settings::ps_netns, ps_address), set once by main().
settings servers_at;

// TLS settings for ps:0 and worker:0, from a CA made on first use (removed at exit).
dsgd::transport::tls_options bench_tls(const std::string& task) {
  static const auto dir = [] {
    auto d = std::make_unique<dsgd::test::cert_dir>();
    d->add_ca("ca");
    d->add_cert("ps0", "ca", "ps:0");
    d->add_cert("worker0", "ca", "worker:0");
    return d;
  }();
  static const auto ps = dsgd::transport::tls_options{
      .ca_file = dir->cert("ca"), .cert_file = dir->cert("ps0"), .key_file = dir->key("ps0")};
  static const auto worker = dsgd::transport::tls_options{
      .ca_file = dir->cert("ca"), .cert_file = dir->cert("worker0"), .key_file = dir->key("worker0")};
  return task == "ps" ? ps : worker;
}

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

void row(const char* workload, const std::string& variant, std::size_t bytes, double seconds, int rep,
         std::size_t chunk_bytes, bool checksum) {
  std::printf("%s,%s,%zu,%.9f,%d,%zu,%d\n", workload, variant.c_str(), bytes, seconds, rep, chunk_bytes,
              checksum ? 1 : 0);
  std::fflush(stdout);
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "dsgd_bench_push_pull: %s\n", what.c_str());
  std::exit(1);
}

// --- raw sockets: the baseline ------------------------------------------------------------------

void check_sys(int rc, const char* what) {
  if (rc < 0) fail(std::string(what) + ": " + std::strerror(errno));
}

void tune(int fd) {
  int one = 1;
  check_sys(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), "TCP_NODELAY");
  int bytes = socket_buffer_bytes;
  check_sys(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes), "SO_SNDBUF");
  check_sys(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes), "SO_RCVBUF");
}

void send_all(int fd, const void* data, std::size_t n) {
  auto p = static_cast<const char*>(data);
  while (n > 0) {
    auto k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    check_sys(int(k < 0 ? -1 : 0), "send");
    p += k;
    n -= std::size_t(k);
  }
}

bool recv_all(int fd, void* data, std::size_t n) {
  auto p = static_cast<char*>(data);
  while (n > 0) {
    auto k = ::recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    check_sys(int(k < 0 ? -1 : 0), "recv");
    if (k == 0) return false;
    p += k;
    n -= std::size_t(k);
  }
  return true;
}

// A thread that runs @p f in the servers' network namespace (settings::ps_netns; this thread's
// own when empty): a namespace is a property of each thread, and the sockets a thread opens
// live in its namespace for good.
std::thread in_server_namespace(std::function<void()> f) {
  return std::thread([f = std::move(f)] {
    if (!servers_at.ps_netns.empty()) {
      const std::string path = "/run/netns/" + servers_at.ps_netns;
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      check_sys(fd, ("open " + path).c_str());
      check_sys(::setns(fd, CLONE_NEWNET), ("setns " + path).c_str());
      ::close(fd);
    }
    f();
  });
}

// Blocking echo server: reads an 8-byte length, then that many bytes, and sends them back.
// Length 0 ends it. Client side: ping_pong() sends the length and bytes, reads them back.
class raw_echo {
 public:
  raw_echo() {
    std::promise<sockaddr_in> listening;
    auto address = listening.get_future();
    server_ = in_server_namespace([&listening] {
      int listener = ::socket(AF_INET, SOCK_STREAM, 0);
      check_sys(listener, "socket");
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      if (::inet_pton(AF_INET, servers_at.ps_address.c_str(), &addr.sin_addr) != 1)
        fail("--ps-address=" + servers_at.ps_address + " is not an IPv4 address");
      check_sys(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), "bind");
      check_sys(::listen(listener, 1), "listen");
      socklen_t len = sizeof addr;
      check_sys(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), "getsockname");
      listening.set_value(addr);
      int fd = ::accept(listener, nullptr, nullptr);
      check_sys(fd, "accept");
      ::close(listener);
      tune(fd);
      std::vector<char> buffer;
      std::uint64_t n = 0;
      while (recv_all(fd, &n, sizeof n) && n != 0) {
        buffer.resize(n);
        if (!recv_all(fd, buffer.data(), n)) break;
        send_all(fd, buffer.data(), n);
      }
      ::close(fd);
    });
    const sockaddr_in addr = address.get();
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    check_sys(fd_, "socket");
    check_sys(::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), "connect");
    tune(fd_);
  }
  ~raw_echo() {
    std::uint64_t zero = 0;
    send_all(fd_, &zero, sizeof zero);
    server_.join();
    ::close(fd_);
  }
  raw_echo(const raw_echo&) = delete;
  raw_echo& operator=(const raw_echo&) = delete;

  void ping_pong(const void* out, void* in, std::size_t n) {
    std::uint64_t length = n;
    send_all(fd_, &length, sizeof length);
    send_all(fd_, out, n);
    if (!recv_all(fd_, in, n)) fail("raw echo server closed the connection");
  }

 private:
  std::thread server_;
  int fd_ = -1;
};

// --- dsgd: one async ps holding one variable, one worker ---------------------------------------

struct ps_variant {
  std::string name;
  std::size_t chunk_bytes = std::size_t{1} << 20;
  bool checksum = false;
  bool apply_in_chunks = true;                    // ps_options::apply_in_chunks
  bool tls = false;                               // ps_options::tls and client_options::tls
  bool shared_memory = true;                      // tcp_options::shared_memory (on loopback: payloads through it)
  std::size_t ring_bytes = std::size_t{4} << 20;  // tcp_options::shared_memory_bytes
};

// A port free on the servers' address (called in their namespace).
std::uint16_t free_port() {
  boost::asio::io_context ctx;
  boost::asio::ip::tcp::acceptor a(ctx, {boost::asio::ip::make_address(servers_at.ps_address), 0});
  return a.local_endpoint().port();
}

// One ps task on its own thread and the worker connected to it, the variable initialised to 0.
class ps_pair {
 public:
  ps_pair(const ps_variant& v, std::size_t floats) : variant_(v), values_(floats, 0.f), grad_(floats, 1.f) {
    async_ps::options o;
    o.connection.token = "bench";
    o.optimizer = {learning_rate};
    o.connection.chunk_bytes = v.chunk_bytes;
    o.serving.apply_in_chunks = v.apply_in_chunks;
    o.connection.shared_memory = {v.shared_memory, v.ring_bytes};
    o.connection.checksum_payloads =
        v.checksum ? dsgd::transport::payload_checksums::always : dsgd::transport::payload_checksums::never;
    o.connection.log = [](std::string_view) {};  // start and shutdown lines would interleave with the rows
    if (v.tls) o.connection.tls = bench_tls("ps");
    // A cluster spec names fixed ports: take one the system reports free (the worker's port is
    // never listened on).
    // The ps is made (its listener opened) and served on a thread of the servers' namespace.
    std::promise<dsgd::cluster::cluster_spec> made;
    auto listening = made.get_future();
    thread_ = in_server_namespace([this, o, &made] {
      try {
        const dsgd::cluster::cluster_spec spec(
            {{"ps", {servers_at.ps_address + ":" + std::to_string(free_port())}}, {"worker", {"127.0.0.1:1"}}});
        ps_ = std::make_unique<async_ps>(spec, 0, o);
        made.set_value(spec);
      } catch (...) {
        made.set_exception(std::current_exception());
        return;
      }
      ps_->join();
    });
    const auto spec = [&] {
      try {
        return listening.get();
      } catch (...) {
        thread_.join();
        throw;
      }
    }();
    dsgd::client::client_options c;
    c.connection.token = "bench";
    c.connection.chunk_bytes = v.chunk_bytes;
    c.connection.shared_memory = {v.shared_memory, v.ring_bytes};
    c.connection.checksum_payloads =
        v.checksum ? dsgd::transport::payload_checksums::always : dsgd::transport::payload_checksums::never;
    if (v.tls) c.connection.tls = bench_tls("worker");
    client_ = std::make_unique<dsgd::client::ps_client>(spec, dsgd::cluster::task_id{"worker", 0}, c);
    plan_ = dsgd::placement::round_robin{}.place({{"v", dsgd::shape{floats}}}, 1);
    client_->connect();
    client_->register_worker(plan_, 0, true);
    std::vector<std::span<const float>> init{std::span<const float>(values_)};
    client_->initialize(plan_, init);
    client_->wait_ready();
  }
  ~ps_pair() {
    client_->finish();
    client_->shutdown_cluster();
    thread_.join();
  }
  ps_pair(const ps_pair&) = delete;
  ps_pair& operator=(const ps_pair&) = delete;

  const ps_variant& variant() const noexcept { return variant_; }

  // One push of the all-ones gradient and one pull; checks the pulled values.
  void push_pull() {
    std::vector<std::span<const float>> g{std::span<const float>(grad_)};
    client_->push(plan_, 0, g);
    ++pushes_;
    pull();
    const float expected = -float(pushes_) * learning_rate;
    if (values_.front() != expected || values_.back() != expected || values_[values_.size() / 2] != expected)
      fail(variant_.name + ": pulled " + std::to_string(values_.front()) + " after " + std::to_string(pushes_) +
           " pushes, expected " + std::to_string(expected));
  }

  void pull() {
    std::vector<std::span<float>> dst{std::span<float>(values_)};
    client_->pull(plan_, 0, dst);
  }

 private:
  ps_variant variant_;
  std::vector<float> values_, grad_;
  std::uint64_t pushes_ = 0;
  std::unique_ptr<async_ps> ps_;
  std::thread thread_;
  std::unique_ptr<dsgd::client::ps_client> client_;
  dsgd::placement::plan plan_;
};

// --- the measurements ---------------------------------------------------------------------------

void push_pull_size(const settings& s, std::size_t bytes) {
  const std::size_t floats = bytes / sizeof(float);
  // The defaults (on loopback: payloads through shared memory, 1 MiB chunks applied as they
  // arrive, no payload CRC), then one setting changed at a time; `tcp` is the path between
  // hosts (every payload on the socket).
  constexpr std::size_t mib = std::size_t{1} << 20;
  std::vector<ps_variant> variants{{.name = "dsgd"},
                                   {.name = "dsgd_ring16m", .ring_bytes = 16 * mib},
                                   {.name = "dsgd_tcp", .shared_memory = false},
                                   {.name = "dsgd_tcp_crc", .checksum = true, .shared_memory = false},
                                   {.name = "dsgd_tcp_whole", .apply_in_chunks = false, .shared_memory = false},
                                   {.name = "dsgd_tcp_chunk4m", .chunk_bytes = 4 * mib, .shared_memory = false}};
  if (s.tls) variants.push_back({.name = "dsgd_tls", .tls = true});  // TLS: no CRC, no shared memory
  std::vector<std::unique_ptr<ps_pair>> pairs;
  for (const auto& v : variants) pairs.push_back(std::make_unique<ps_pair>(v, floats));
  raw_echo raw;
  std::vector<std::byte> out(bytes), in(bytes);
  for (std::size_t i = 0; i < bytes; ++i) out[i] = std::byte(i * 131 % 251);

  // The ps's local work per push+pull, measured alone on the same arrays sizes.
  dsgd::device::cpu cpu;
  dsgd::optim::sgd sgd{learning_rate};
  dsgd::optim::sgd::state<dsgd::device::cpu> slots(cpu, floats);
  std::vector<float> w(floats, 0.f), g(floats, 1.f);

  for (int rep = -s.warmup; rep < s.reps; ++rep) {
    auto start = clock_type::now();
    raw.ping_pong(out.data(), in.data(), bytes);
    double t = seconds_since(start);
    if (in.front() != out.front() || in.back() != out.back()) fail("raw echo returned other bytes");
    if (rep >= 0) row("push_pull", "raw", bytes, t, rep, 0, false);
    for (auto& p : pairs) {
      start = clock_type::now();
      p->push_pull();
      t = seconds_since(start);
      if (rep >= 0) row("push_pull", p->variant().name, bytes, t, rep, p->variant().chunk_bytes, p->variant().checksum);
    }
    start = clock_type::now();
    sgd.apply(cpu, slots, w.data(), g.data(), floats);
    t = seconds_since(start);
    if (rep >= 0) row("local", "sgd_apply", bytes, t, rep, 0, false);
    start = clock_type::now();
    volatile auto crc = dsgd::detail::crc32c({reinterpret_cast<const std::byte*>(g.data()), bytes});
    t = seconds_since(start);
    (void)crc;
    if (rep >= 0) row("local", "crc32c", bytes, t, rep, 0, false);
  }
}

// Round trip of a tiny message: a pull of a one-float variable against a raw 4-byte echo.
void latency(const settings& s) {
  constexpr std::size_t bytes = sizeof(float);
  ps_pair crc({.name = "dsgd_pull_crc", .checksum = true}, 1);
  ps_pair nocrc({.name = "dsgd_pull_nocrc"}, 1);
  std::vector<ps_pair*> pairs{&crc, &nocrc};
  std::unique_ptr<ps_pair> tls;
  if (s.tls)
    pairs.push_back((tls = std::make_unique<ps_pair>(ps_variant{.name = "dsgd_pull_tls", .tls = true}, 1)).get());
  raw_echo raw;
  float out = 1.f, in = 0.f;
  for (int rep = -s.warmup; rep < s.reps; ++rep) {
    auto start = clock_type::now();
    for (int i = 0; i < s.latency_iters; ++i) raw.ping_pong(&out, &in, bytes);
    double t = seconds_since(start) / s.latency_iters;
    if (in != out) fail("raw echo returned another value");
    if (rep >= 0) row("round_trip", "raw", bytes, t, rep, 0, false);
    for (auto* p : pairs) {
      start = clock_type::now();
      for (int i = 0; i < s.latency_iters; ++i) p->pull();
      t = seconds_since(start) / s.latency_iters;
      if (rep >= 0) row("round_trip", p->variant().name, bytes, t, rep, 0, p->variant().checksum);
    }
  }
}

std::vector<std::size_t> parse_sizes(const std::string& list) {
  std::vector<std::size_t> out;
  std::size_t at = 0;
  while (at <= list.size()) {
    auto comma = list.find(',', at);
    auto item = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    std::size_t used = 0;
    auto n = std::stoull(item, &used);
    if (used != item.size() || n == 0 || n % sizeof(float) != 0)
      throw std::invalid_argument("--sizes: '" + item + "' is not a positive multiple of 4 bytes");
    out.push_back(n);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&](const char* flag) -> std::string { return a.substr(std::strlen(flag)); };
      if (a == "--smoke") {
        s.sizes = {std::size_t{64} << 10};
        s.reps = 2;
        s.warmup = 1;
        s.latency_iters = 20;
      } else if (a == "--tls") {
        s.tls = true;
      } else if (a.starts_with("--sizes=")) {
        s.sizes = parse_sizes(value("--sizes="));
      } else if (a.starts_with("--reps=")) {
        s.reps = std::stoi(value("--reps="));
      } else if (a.starts_with("--warmup=")) {
        s.warmup = std::stoi(value("--warmup="));
      } else if (a.starts_with("--ps-netns=")) {
        s.ps_netns = value("--ps-netns=");
      } else if (a.starts_with("--ps-address=")) {
        s.ps_address = value("--ps-address=");
      } else if (a.starts_with("--latency-iters=")) {
        s.latency_iters = std::stoi(value("--latency-iters="));
      } else {
        throw std::invalid_argument("unknown argument '" + a + "'");
      }
    }
    if (s.reps < 1 || s.warmup < 0 || s.latency_iters < 1)
      throw std::invalid_argument("--reps and --latency-iters must be at least 1, --warmup at least 0");
    if (!s.ps_netns.empty() && s.ps_address == "127.0.0.1")
      throw std::invalid_argument("--ps-netns needs --ps-address (an address of that namespace)");
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "dsgd_bench_push_pull: %s\nusage: dsgd_bench_push_pull [--sizes=B,B,...] [--reps=N] "
                 "[--warmup=N] [--latency-iters=N] [--smoke] [--tls] [--ps-netns=NAME --ps-address=IP]\n",
                 e.what());
    return 2;
  }
  servers_at = s;
  try {
    std::printf("workload,variant,bytes,seconds,rep,chunk_bytes,checksum\n");
    for (auto bytes : s.sizes) push_pull_size(s, bytes);
    latency(s);
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return 0;
}
