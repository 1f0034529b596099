// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// A cut link (no FIN, no RST) between a ps and its workers. ps:0 of a counter_job cluster runs
// in a network namespace of its own behind a veth pair; the chief and a second worker run on
// the host and reach it across the pair. Mid-run the namespace's end of the pair goes down:
// nothing is closed, packets just stop. TCP keepalive and TCP_USER_TIMEOUT
// (tcp_options::dead_peer_timeout) must then fail both workers with peer_lost naming ps:0
// within the dead-peer deadline, and the ps, its connections dropped the same way and its chief
// gone, must stop at the chief deadline with a named error. Nothing may hang.
//
// Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN for `ip netns`) and iproute2's `ip`. Where the
// namespace or the veth pair may not be made, the executable prints why and exits with
// DSGD_TEST_SKIP_RETURN_CODE, which CTest reports as skipped; with DSGD_REQUIRE_NETNS=1 in the
// environment that is a failure instead. Any other setup failure is a failure.
#include "fault_support.hpp"

#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#if !defined(DSGD_TEST_SKIP_RETURN_CODE)
#error "test/faults/CMakeLists.txt defines DSGD_TEST_SKIP_RETURN_CODE"
#endif

using namespace std::chrono_literals;
using namespace dsgd::test;

namespace {

// Every task's dead-peer deadline (counter_job --dead-peer-timeout-s) and the ps's chief
// deadline: short, so that a case takes seconds; the expectations scale with them.
constexpr std::chrono::seconds dead_peer_timeout{4};
constexpr auto chief_timeout = 3000ms;
// A worker must fail, and the ps drop its peers, within this long after the cut.
constexpr auto dead_peer_bound = std::chrono::duration_cast<std::chrono::milliseconds>(3 * dead_peer_timeout + 20s);

constexpr std::string_view namespace_prefix = "dsgd-cut-";
constexpr std::string_view interface_prefix = "dcut";

// Where the setup stopped, and whether the environment forbids it (a skip) rather than the
// setup being wrong (a failure).
struct setup_error : std::runtime_error {
  setup_error(const std::string& what, bool forbidden) : std::runtime_error(what), forbidden(forbidden) {}
  bool forbidden;
};

// iproute2's `ip`: on PATH, else in the sbin directories a non-root PATH lacks; "" if none.
std::string find_ip() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::string_view rest = path;
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      dirs.emplace_back(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    }
  }
  for (const char* d : {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) dirs.emplace_back(d);
  for (const auto& d : dirs)
    if (!d.empty() && ::access((d + "/ip").c_str(), X_OK) == 0) return d + "/ip";
  return {};
}

const std::string& ip_path() {
  static const std::string path = find_ip();
  return path;
}

// What `ip` says when the kernel, the container or the user's rights refuse a namespace or a
// veth pair: the environment, not the test.
bool forbidden_by_environment(const std::string& output) {
  for (const char* s : {"Operation not permitted", "Permission denied", "Read-only file system",
                        "Operation not supported", "Unknown device type", "Not supported", "must be root"})
    if (output.find(s) != std::string::npos) return true;
  return false;
}

struct ip_result {
  bool ok = false;
  std::string output;
};

// `ip ARGS...`, waited for at most 20 s.
ip_result run_ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv{ip_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  child_process p("ip", argv, {});
  const auto status = p.wait_exit(20s);
  if (!status) return {false, p.output() + "(still running after 20 s)"};
  return {exited_with(status, 0), p.output() + (exited_with(status, 0) ? "" : "(" + describe_status(*status) + ")")};
}

std::string joined(const std::vector<std::string>& args) {
  std::string out = "ip";
  for (const auto& a : args) out += " " + a;
  return out;
}

void run_ip_or_throw(const std::vector<std::string>& args) {
  auto r = run_ip(args);
  if (!r.ok) throw setup_error("`" + joined(args) + "` failed: " + r.output, forbidden_by_environment(r.output));
}

// Whether an address of an interface of this namespace lies in [first, first + 4).
bool block_in_use(std::uint32_t first) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool used = false;
  for (auto* a = list; a != nullptr && !used; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto addr = ntohl(reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
    used = addr >= first && addr < first + 4;
  }
  ::freeifaddrs(list);
  return used;
}

std::string dotted(std::uint32_t addr) {
  return std::to_string(addr >> 24) + "." + std::to_string((addr >> 16) & 255) + "." +
         std::to_string((addr >> 8) & 255) + "." + std::to_string(addr & 255);
}

// A locally administered unicast MAC address naming @p addr.
std::string mac_for(std::uint32_t addr) {
  char out[18];
  std::snprintf(out, sizeof out, "02:00:%02x:%02x:%02x:%02x", addr >> 24, (addr >> 16) & 255, (addr >> 8) & 255,
                addr & 255);
  return out;
}

/// A network namespace joined to this one by a veth pair, a /30 of 10.128.0.0/9 between them
/// (chosen from the pid and @p index, skipping any block an interface here already uses), both
/// ends and the namespace's lo up. Each end knows the other's MAC address permanently: after
/// the cut no ARP request fails, which would report "No route to host" to the sockets (a
/// soft error that TCP_USER_TIMEOUT then returns instead of ETIMEDOUT), so packets just vanish,
/// as they do behind a cable cut further away. Everything is removed on destruction, and by the
/// constructor itself when it fails halfway.
class cut_network {
 public:
  explicit cut_network(int index)
      : namespace_(std::string(namespace_prefix) + std::to_string(::getpid()) + "-" + std::to_string(index)),
        host_end_(std::string(interface_prefix) + std::to_string(::getpid()) + "h" + std::to_string(index)),
        ns_end_(std::string(interface_prefix) + std::to_string(::getpid()) + "n" + std::to_string(index)) {
    if (ip_path().empty()) throw setup_error("iproute2's `ip` was not found on PATH or in /usr/sbin, /sbin", true);
    // Interface names have at most 15 characters (IFNAMSIZ - 1).
    if (host_end_.size() > 15 || index > 9) throw std::logic_error("interface name too long: " + host_end_);
    std::uint32_t block =
        (static_cast<std::uint32_t>(::getpid()) * 10u + static_cast<std::uint32_t>(index)) % (1u << 21);
    std::uint32_t first = (10u << 24) + (128u << 16) + 4u * block;
    for (int tries = 0; block_in_use(first) && tries < 64; ++tries)
      first = (10u << 24) + (128u << 16) + 4u * (++block % (1u << 21));
    host_address_ = dotted(first + 1);
    ns_address_ = dotted(first + 2);
    const std::string host_mac = mac_for(first + 1), ns_mac = mac_for(first + 2);
    try {
      run_ip_or_throw({"netns", "add", namespace_});
      created_ = true;
      run_ip_or_throw({"link", "add", host_end_, "address", host_mac, "type", "veth", "peer", "name", ns_end_,
                       "address", ns_mac, "netns", namespace_});
      run_ip_or_throw({"addr", "add", host_address_ + "/30", "dev", host_end_});
      run_ip_or_throw({"neigh", "replace", ns_address_, "lladdr", ns_mac, "dev", host_end_, "nud", "permanent"});
      run_ip_or_throw({"link", "set", host_end_, "up"});
      run_ip_or_throw({"-n", namespace_, "addr", "add", ns_address_ + "/30", "dev", ns_end_});
      run_ip_or_throw({"-n", namespace_, "neigh", "replace", host_address_, "lladdr", host_mac, "dev", ns_end_, "nud",
                       "permanent"});
      run_ip_or_throw({"-n", namespace_, "link", "set", ns_end_, "up"});
      run_ip_or_throw({"-n", namespace_, "link", "set", "lo", "up"});
    } catch (...) {
      remove();
      throw;
    }
  }

  cut_network(const cut_network&) = delete;
  cut_network& operator=(const cut_network&) = delete;
  ~cut_network() { remove(); }

  const std::string& name() const noexcept { return namespace_; }
  const std::string& ns_address() const noexcept { return ns_address_; }
  const std::string& host_address() const noexcept { return host_address_; }
  std::string description() const {
    return "namespace " + namespace_ + ", " + host_end_ + " " + host_address_ + "/30 <-> " + ns_end_ + " " +
           ns_address_ + "/30";
  }

  /// Takes the namespace's end down: the host's end loses its carrier but keeps its route and
  /// its neighbour, so packets from the host vanish into it; no FIN, RST or ICMP error reaches
  /// the workers. (The ps's side loses its route: its sockets learn "Network is unreachable".)
  void cut() { run_ip_or_throw({"-n", namespace_, "link", "set", ns_end_, "down"}); }

  /// The command line running @p args inside the namespace.
  std::vector<std::string> exec(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{ip_path(), "netns", "exec", namespace_};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

 private:
  // Deleting the host's end deletes the pair at once; deleting the namespace alone would leave
  // it until the last process in the namespace is gone.
  void remove() noexcept {
    try {
      run_ip({"link", "delete", host_end_});
      if (created_) run_ip({"netns", "delete", namespace_});
    } catch (...) {
      // A destructor must not throw; a namespace left behind is removed by the next run
      // (remove_stale_networks).
    }
  }

  std::string namespace_, host_end_, ns_end_;
  std::string host_address_, ns_address_;
  bool created_ = false;
};

// Whether @p name is "<prefix><pid>..." of a process that is gone (a run killed before it
// cleaned up).
bool owner_is_gone(std::string_view name, std::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix) return false;
  const std::string rest(name.substr(prefix.size()));
  char* end = nullptr;
  const long pid = std::strtol(rest.c_str(), &end, 10);
  return end != rest.c_str() && pid > 0 && !alive(static_cast<pid_t>(pid));
}

// Removes the namespaces and veth pairs of earlier runs that were killed (by a CTest timeout,
// say) before their destructors ran.
void remove_stale_networks() {
  for (const auto& line : lines_of(run_ip({"-o", "link", "show", "type", "veth"}).output)) {
    // "12: dcut123h0@if11: <...>"
    const auto colon = line.find(": ");
    if (colon == std::string::npos) continue;
    const auto name = line.substr(colon + 2, line.find_first_of("@:", colon + 2) - colon - 2);
    if (owner_is_gone(name, interface_prefix)) run_ip({"link", "delete", name});
  }
  for (const auto& line : lines_of(run_ip({"netns", "list"}).output)) {
    const auto name = line.substr(0, line.find(' '));
    if (owner_is_gone(name, namespace_prefix)) run_ip({"netns", "delete", name});
  }
}

// Once per executable: clears what killed runs left, then makes and removes one network. If
// the environment forbids it, the whole executable is skipped (see the top of the file).
struct network_namespaces_or_skip {
  network_namespaces_or_skip() {
    if (!ip_path().empty()) remove_stale_networks();
    try {
      cut_network probe(0);
    } catch (const setup_error& e) {
      if (!e.forbidden) return;  // the test cases fail on it, showing the error
      const char* require = std::getenv("DSGD_REQUIRE_NETNS");
      const bool required = require != nullptr && std::string_view(require) == "1";
      std::printf(
          "cut_link_test: cannot make a network namespace and a veth pair here (needs root and iproute2): %s\n%s\n",
          e.what(), required ? "DSGD_REQUIRE_NETNS=1: failed" : "skipped");
      std::fflush(stdout);
      std::exit(required ? EXIT_FAILURE : DSGD_TEST_SKIP_RETURN_CODE);
    }
  }
};

// "ps:0 exit 3", "worker:1 running".
std::string state(const child_process& p) {
  return p.name() + (p.exited() ? " " + describe_status(*p.wait_exit(0ms)) : std::string(" running"));
}

std::string transcript(const std::vector<const child_process*>& tasks, const cut_network& net) {
  std::string out = net.description() + "\n";
  for (const auto* p : tasks) {
    out += "---- " + state(*p) + "\n";
    for (const auto& l : lines_of(p->output())) out += "[" + p->name() + "] " + l + "\n";
  }
  return out;
}

double seconds_between(clock_type::time_point from, clock_type::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(network_namespaces_or_skip);

BOOST_AUTO_TEST_SUITE(a_cut_link)

// Both rules: a sync worker is mostly waiting for its step (an idle connection: keepalive), an
// async one mostly sending (unacknowledged data: TCP_USER_TIMEOUT).
BOOST_DATA_TEST_CASE(every_worker_fails_with_peer_lost_naming_the_ps_and_the_ps_stops_at_its_chief_deadline,
                     boost::unit_test::data::make({"sync", "async"}) ^ boost::unit_test::data::make({1, 2}), rule,
                     index) {
  cut_network net(index);
  BOOST_TEST_MESSAGE(net.description() << "; dead-peer deadline " << dead_peer_timeout.count() << " s");

  nlohmann::json cluster;
  cluster["ps"] = {net.ns_address() + ":2222"};
  // Workers listen nowhere; their addresses only name them.
  cluster["worker"] = {"127.0.0.1:1", "127.0.0.1:2"};
  auto tf_config = [&](const std::string& job, int i) {
    return nlohmann::json{{"cluster", cluster}, {"task", {{"type", job}, {"index", i}}}}.dump();
  };

  // The request deadline (max(step, ready) + 30 s) must outlast the dead-peer bound, so that
  // only the dead-peer deadline can end a worker's wait.
  auto args = counter_args(
      rule, 1000000, 10, 10000ms,
      {"--ready-timeout-ms", std::to_string(std::max<long>(30'000, dead_peer_bound.count())), "--chief-timeout-ms",
       std::to_string(chief_timeout.count()), "--dead-peer-timeout-s", std::to_string(dead_peer_timeout.count())});
  args.insert(args.begin(), counter_job_path);
  auto env = [&](const std::string& job, int i) {
    auto e = quiet_threads();
    e.push_back("TF_CONFIG=" + tf_config(job, i));
    return e;
  };
  child_process ps("ps:0", net.exec(args), env("ps", 0));
  child_process chief("worker:0", args, env("worker", 0));
  child_process worker("worker:1", args, env("worker", 1));
  const std::vector<const child_process*> tasks{&ps, &chief, &worker};

  for (const auto* w : {&chief, &worker})
    BOOST_REQUIRE_MESSAGE(w->wait_for_lines("ack ", 5, 60s), w->name() << " did not get 5 pushes acknowledged\n"
                                                                       << transcript(tasks, net));
  net.cut();
  const auto cut = clock_type::now();
  const auto acks_at_cut = count_lines_starting(chief.output(), "ack ");

  // A reset or an error would end a connection at once: failing no earlier than half the
  // deadline shows that the dead-peer deadline did it.
  for (const auto* w : {&chief, &worker}) {
    const auto status =
        w->wait_exit(std::chrono::duration_cast<std::chrono::milliseconds>(cut + dead_peer_bound - clock_type::now()));
    const auto error = line_starting(w->output(), "error ");
    BOOST_TEST_INFO(transcript(tasks, net));
    BOOST_TEST_REQUIRE(exited_with(status, 3),
                       w->name() << " did not fail within " << dead_peer_bound.count() << " ms of the cut");
    const double after = seconds_between(cut, w->ended_at());
    BOOST_TEST_MESSAGE(rule << ": " << w->name() << " failed " << after << " s after the cut: " << error);
    BOOST_TEST(error.rfind("error peer_lost ", 0) == 0u, w->name() << ": " << error);
    BOOST_TEST(error.find(w->name() + ": connection to ps:0 lost") != std::string::npos, w->name() << ": " << error);
    BOOST_TEST(error.find("timed out") != std::string::npos, w->name() << ": " << error);
    BOOST_TEST(after >= 0.5 * static_cast<double>(dead_peer_timeout.count()),
               w->name() << " failed " << after << " s after the cut");
  }
  BOOST_TEST(count_lines_starting(chief.output(), "done ") == 0u);
  BOOST_TEST(acks_at_cut >= 5u);

  const auto ps_status = ps.wait_exit(
      std::chrono::duration_cast<std::chrono::milliseconds>(cut + dead_peer_bound + chief_timeout - clock_type::now()));
  const auto ps_error = line_starting(ps.output(), "error ");
  BOOST_TEST_INFO(transcript(tasks, net));
  BOOST_TEST_REQUIRE(exited_with(ps_status, 3), "ps:0 did not stop within its deadlines after the cut");
  BOOST_TEST_MESSAGE(rule << ": ps:0 stopped " << seconds_between(cut, ps.ended_at())
                          << " s after the cut: " << ps_error);
  BOOST_TEST(ps_error.rfind("error peer_lost ", 0) == 0u, ps_error);
  BOOST_TEST(ps_error.find("the chief has been gone for " + std::to_string(chief_timeout.count()) + " ms") !=
                 std::string::npos,
             ps_error);
}

BOOST_AUTO_TEST_SUITE_END()
