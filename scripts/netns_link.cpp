// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// netns_link: a delaying, optionally lossy Ethernet link in userspace, for scripts/netns_hosts.sh
// on kernels without the netem qdisc (a test and benchmark tool, not part of the library).
//
//   netns_link --a NETNS:TAP --b NETNS:TAP [--delay-ab D] [--delay-ba D] [--loss-ab P]
//              [--loss-ba P] [--limit-bytes N] [--seed S] [--no-realtime]
//
// Attaches to two existing tap devices, each in the network namespace whose file is NETNS (such
// as /run/netns/lab-h1; "-" for the namespace it runs in), and forwards every Ethernet frame read
// from one to the other after a fixed delay (D: 25ms, 100us, 0.1ms, 0), dropping a fraction P
// (0.1%, or 0.001) first. Frames wait in a FIFO per direction, stamped with their due time; the
// loop sleeps in ppoll until a tap is readable or the next frame is due (timer slack 1 ns
// instead of 50 us), never spinning, at real-time priority (SCHED_FIFO 1) unless --no-realtime
// or not allowed, so that a busy machine's processes do not hold frames back; docs/benchmarks.md
// measures what it costs and how late it is. A direction holding more than --limit-bytes (64 MiB)
// drops new frames at its tail, as a router's queue does.
//
// The taps carry virtio-net headers, and without loss both accept the kernel's TCP segmentation
// and checksum offloads, so a 64 KiB TCP burst crosses as one frame with its header passed through
// (as between a virtio guest and its host): far fewer system calls per byte. With loss the
// offloads stay off, so each dropped frame is one packet of at most the MTU, as netem drops.
//
// Prints "ready" on stdout once both taps are attached, and on SIGTERM or SIGINT the frames and
// bytes forwarded and dropped per direction on stderr, then exits 0. Exit 2: a bad argument; 1: a
// system call failed (named with its errno).
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct system_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string& what) { throw system_error(what + ": " + std::strerror(errno)); }

using clock_type = std::chrono::steady_clock;

/// A duration such as tc writes one ("25ms", "100us", "0.1ms", "1s", "0") as nanoseconds.
std::int64_t parse_delay(const std::string& option, const std::string& v) {
  std::size_t end = 0;
  double x = 0;
  try {
    x = std::stod(v, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  const std::string unit = v.substr(end);
  double scale = 0;
  if (unit == "s" || unit == "sec") scale = 1e9;
  else if (unit == "ms" || unit == "msec") scale = 1e6;
  else if (unit == "us" || unit == "usec") scale = 1e3;
  else if (unit == "ns" || (unit.empty() && x == 0)) scale = 1;
  if (end == 0 || scale == 0 || !(x >= 0) || x * scale > 3600e9)
    throw usage_error(option + " " + v + ": expected a duration from 0 to 1 hour with a unit (25ms, 100us, 0.1ms, 1s)");
  return static_cast<std::int64_t>(x * scale + 0.5);
}

/// A loss fraction: "0.1%" or "0.001", in [0, 1].
double parse_loss(const std::string& option, const std::string& v) {
  std::size_t end = 0;
  double x = -1;
  try {
    x = std::stod(v, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  const bool percent = end + 1 == v.size() && v[end] == '%';
  if (end == 0 || (end != v.size() && !percent)) x = -1;
  if (percent) x /= 100;
  if (!(x >= 0 && x <= 1))
    throw usage_error(option + " " + v + ": expected a fraction in [0, 1] or a percentage (0.1%)");
  return x;
}

/// A whole number in [0, 2^63).
std::uint64_t parse_count(const std::string& option, const std::string& v) {
  if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos)
    throw usage_error(option + " " + v + ": expected a whole number");
  return std::stoull(v);
}

/// Opens tap DEV in the namespace at NS ("-": this one) with virtio-net headers; non-blocking.
int open_tap(const std::string& spec, bool offload) {
  const auto colon = spec.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size() || spec.size() - colon - 1 >= IFNAMSIZ)
    throw usage_error("tap " + spec + ": expected NETNS:DEVICE (NETNS a file such as /run/netns/lab-h1, or -)");
  const std::string ns = spec.substr(0, colon), dev = spec.substr(colon + 1);
  if (ns != "-") {
    const int nsfd = ::open(ns.c_str(), O_RDONLY | O_CLOEXEC);
    if (nsfd < 0) fail("open namespace " + ns);
    if (::setns(nsfd, CLONE_NEWNET) != 0) fail("setns " + ns);
    ::close(nsfd);
  }
  const int fd = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail("open /dev/net/tun");
  ifreq ifr{};
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
  std::strncpy(ifr.ifr_name, dev.c_str(), IFNAMSIZ - 1);
  if (::ioctl(fd, TUNSETIFF, &ifr) != 0) fail("attach tap " + dev + " in " + ns);
  const unsigned flags = offload ? TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN : 0;
  if (::ioctl(fd, TUNSETOFFLOAD, flags) != 0) fail("offloads of tap " + dev + " in " + ns);
  return fd;
}

/// One direction: frames read from `from`, written to `to` when due.
struct direction {
  int from = -1, to = -1;
  std::int64_t delay_ns = 0;
  double loss = 0;
  std::size_t limit_bytes = 0;
  struct frame {
    clock_type::time_point due;
    std::vector<unsigned char> bytes;
  };
  std::deque<frame> queue;
  std::size_t queued_bytes = 0;
  bool blocked = false;  // `to` refused a frame (EAGAIN): wait until it is writable again
  std::uint64_t forwarded = 0, forwarded_bytes = 0, lost = 0, overflowed = 0, write_errors = 0;
};

// The largest frame a tap with offloads hands over: a virtio-net header and a 64 KiB packet.
constexpr std::size_t max_frame = 10 + 14 + 65536;

// Reads what `d.from` holds (at most a batch, so the other direction is served too) into its
// FIFO, dropping the lost and the overflowing.
void receive(direction& d, std::mt19937_64& rng, std::vector<unsigned char>& scratch) {
  std::uniform_real_distribution<double> uniform(0, 1);
  for (int i = 0; i < 64; ++i) {
    const ssize_t n = ::read(d.from, scratch.data(), scratch.size());
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      fail("read a frame");
    }
    if (d.loss > 0 && uniform(rng) < d.loss) {
      ++d.lost;
      continue;
    }
    if (d.queued_bytes + static_cast<std::size_t>(n) > d.limit_bytes) {
      ++d.overflowed;
      continue;
    }
    d.queue.push_back({clock_type::now() + std::chrono::nanoseconds(d.delay_ns),
                       std::vector<unsigned char>(scratch.begin(), scratch.begin() + n)});
    d.queued_bytes += static_cast<std::size_t>(n);
  }
}

// Writes every frame that is due.
void send_due(direction& d) {
  const auto now = clock_type::now();
  while (!d.queue.empty() && d.queue.front().due <= now) {
    auto& f = d.queue.front();
    if (::write(d.to, f.bytes.data(), f.bytes.size()) < 0) {
      if (errno == EAGAIN) {  // the kernel's queue is full: poll for room rather than spin
        d.blocked = true;
        return;
      }
      ++d.write_errors;  // the device went down, say: the frame is lost, as on a wire
    } else {
      ++d.forwarded;
      d.forwarded_bytes += f.bytes.size();
    }
    d.queued_bytes -= f.bytes.size();
    d.queue.pop_front();
  }
}

int run(int argc, char** argv) {
  std::string a, b;
  direction ab, ba;
  std::size_t limit = 64u << 20;
  std::uint64_t seed = 1;
  bool realtime = true;
  for (int i = 1; i < argc; ++i) {
    const std::string opt = argv[i];
    if (opt == "--no-realtime") {
      realtime = false;
      continue;
    }
    if (i + 1 >= argc) throw usage_error(opt + ": needs a value");
    const std::string v = argv[++i];
    if (opt == "--a") a = v;
    else if (opt == "--b") b = v;
    else if (opt == "--delay-ab") ab.delay_ns = parse_delay(opt, v);
    else if (opt == "--delay-ba") ba.delay_ns = parse_delay(opt, v);
    else if (opt == "--loss-ab") ab.loss = parse_loss(opt, v);
    else if (opt == "--loss-ba") ba.loss = parse_loss(opt, v);
    else if (opt == "--limit-bytes") limit = static_cast<std::size_t>(parse_count(opt, v));
    else if (opt == "--seed") seed = parse_count(opt, v);
    else throw usage_error("unknown option " + opt);
  }
  if (a.empty() || b.empty()) throw usage_error("--a and --b are required");
  if (limit < max_frame)
    throw usage_error("--limit-bytes " + std::to_string(limit) + ": must hold one frame (" + std::to_string(max_frame) +
                      ")");
  ab.limit_bytes = ba.limit_bytes = limit;
  // Timers fire within 1 ns of their time instead of the default 50 us slack, and a frame due
  // does not wait for the CPU behind the job's processes (a wire does not; the kernel's own
  // forwarding runs in softirq, ahead of every process): SCHED_FIFO where allowed. The loop
  // never spins, so it takes only the CPU its frames need.
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  if (realtime) {
    sched_param p{};
    p.sched_priority = 1;
    if (::sched_setscheduler(0, SCHED_FIFO, &p) != 0)
      std::fprintf(stderr, "netns_link: not real-time (%s): frames may wait for the CPU\n", std::strerror(errno));
  }
  const bool offload = ab.loss == 0 && ba.loss == 0;
  const int fa = open_tap(a, offload), fb = open_tap(b, offload);
  ab.from = ba.to = fa;
  ab.to = ba.from = fb;

  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  if (::sigprocmask(SIG_BLOCK, &stop, nullptr) != 0) fail("sigprocmask");
  const int sfd = ::signalfd(-1, &stop, SFD_CLOEXEC);
  if (sfd < 0) fail("signalfd");
  std::printf("ready\n");
  std::fflush(stdout);

  std::mt19937_64 rng(seed);
  std::vector<unsigned char> scratch(max_frame);
  for (;;) {
    pollfd fds[3] = {{fa, static_cast<short>(POLLIN | (ba.blocked ? POLLOUT : 0)), 0},
                     {fb, static_cast<short>(POLLIN | (ab.blocked ? POLLOUT : 0)), 0},
                     {sfd, POLLIN, 0}};
    timespec timeout{};
    timespec* wait = nullptr;  // nothing due: sleep until a frame, room or a signal comes
    clock_type::time_point next = clock_type::time_point::max();
    if (!ab.queue.empty() && !ab.blocked) next = ab.queue.front().due;
    if (!ba.queue.empty() && !ba.blocked && ba.queue.front().due < next) next = ba.queue.front().due;
    if (next != clock_type::time_point::max()) {
      const auto ns = std::max<std::int64_t>(
          0, std::chrono::duration_cast<std::chrono::nanoseconds>(next - clock_type::now()).count());
      timeout.tv_sec = ns / 1'000'000'000;
      timeout.tv_nsec = ns % 1'000'000'000;
      wait = &timeout;
    }
    if (::ppoll(fds, 3, wait, nullptr) < 0 && errno != EINTR) fail("ppoll");
    if (fds[2].revents & POLLIN) break;
    if ((fds[0].revents | fds[1].revents) & (POLLERR | POLLHUP | POLLNVAL)) {
      errno = EIO;
      fail("a tap was closed");
    }
    if (fds[0].revents & POLLOUT) ba.blocked = false;
    if (fds[1].revents & POLLOUT) ab.blocked = false;
    if (fds[0].revents & POLLIN) receive(ab, rng, scratch);
    if (fds[1].revents & POLLIN) receive(ba, rng, scratch);
    if (!ab.blocked) send_due(ab);
    if (!ba.blocked) send_due(ba);
  }
  for (const auto* d : {&ab, &ba})
    std::fprintf(stderr,
                 "netns_link %s -> %s: %llu frames (%llu bytes) forwarded, %llu lost, %llu over the queue limit, "
                 "%llu write errors, %zu still queued\n",
                 d == &ab ? a.c_str() : b.c_str(), d == &ab ? b.c_str() : a.c_str(),
                 static_cast<unsigned long long>(d->forwarded), static_cast<unsigned long long>(d->forwarded_bytes),
                 static_cast<unsigned long long>(d->lost), static_cast<unsigned long long>(d->overflowed),
                 static_cast<unsigned long long>(d->write_errors), d->queue.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "netns_link: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "netns_link: %s\n", e.what());
    return 1;
  }
}
