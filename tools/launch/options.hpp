// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// dsgd-launch's command line, on Boost.Program_options: the options, their defaults and
// ranges, the usage text, and a usage_error naming the option that was wrong.
#pragma once

#include <boost/program_options.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

namespace dsgd_launch {

/// A command-line mistake: reported with the usage text and exit status 2.
struct usage_error {
  std::string message;
};

/// What the command line asked for.
struct options {
  int ps = 1;
  int workers = 2;      // worker tasks; with --workers MIN:MAX, MAX (the slots)
  int min_workers = 0;  // --workers MIN:MAX: MIN, the workers started (0: not elastic)
  bool chief = false;
  std::string host = "127.0.0.1";
  int port_base = 0;
  double timeout_s = 0;
  double ps_grace_s = 30;
  double kill_grace_s = 5;
  bool token_env = false;
  int max_restarts = 0;            // restarts per task of a task that failed, with backoff
  int nnodes = 1;                  // hosts the job spans; one dsgd-launch runs on each
  int node_rank = 0;               // which of them this launcher is
  std::vector<std::string> hosts;  // every host's name, in node-rank order (nnodes > 1)
  std::vector<std::string> command;
};

namespace po = boost::program_options;

// The options with their help lines; `o` receives the values.
inline po::options_description described(options& o) {
  po::options_description d("options", 100, 50);
  d.add_options()("ps", po::value(&o.ps)->value_name("N")->default_value(o.ps), "ps tasks (0 for none)")(
      "workers", po::value<std::string>()->value_name("N|MIN:MAX")->default_value(std::to_string(o.workers)),
      "worker tasks (at least 1); MIN:MAX: an elastic job of MAX worker slots, MIN started, SIGUSR1 to the "
      "launcher adds one, SIGUSR2 removes one, a worker that fails past --max-restarts leaves (docs/launching.md)")(
      "chief", po::bool_switch(&o.chief),
      "add a separate one-task \"chief\" job (TF2 style); by default worker 0 is the chief (TF1 style)")(
      "host", po::value(&o.host)->value_name("HOST")->default_value(o.host), "address every task listens on")(
      "port-base", po::value(&o.port_base)->value_name("P")->default_value(o.port_base),
      "task k (ps first, then chief, then workers) listens on P+k (0: pick free ports)")(
      "timeout", po::value(&o.timeout_s)->value_name("S")->default_value(o.timeout_s),
      "stop everything and exit 124 after S seconds (0: none)")(
      "ps-grace", po::value(&o.ps_grace_s)->value_name("S")->default_value(o.ps_grace_s),
      "after every worker and the chief exited 0, wait S seconds for the ps tasks to exit before "
      "killing them")("kill-grace", po::value(&o.kill_grace_s)->value_name("S")->default_value(o.kill_grace_s),
                      "after SIGTERM, wait S seconds before SIGKILL")(
      "token-env", po::bool_switch(&o.token_env),
      "give every task one random DSGD_CLUSTER_TOKEN unless one is set: what a single-host job always does "
      "(kept for old command lines; refused with --nnodes, where every host needs the same token)")(
      "max-restarts", po::value(&o.max_restarts)->value_name("N")->default_value(o.max_restarts),
      "restart a task that fails (non-zero status or a signal) up to N times, in place: same role and "
      "address, after 1, 2, 4 ... (at most 30) seconds; past N its failure stops the cluster")(
      "nnodes", po::value(&o.nnodes)->value_name("N")->default_value(o.nnodes),
      "hosts the job spans; run one dsgd-launch per host with the same options but its --node-rank")(
      "node-rank", po::value(&o.node_rank)->value_name("R")->default_value(o.node_rank),
      "this host's place in --hosts (0-based); it starts the tasks k with k mod N = R")(
      "hosts", po::value<std::string>()->value_name("H0,H1,..."),
      "every host's name or address in node-rank order (needed with --nnodes > 1); task k of the "
      "job (ps first, then chief, then workers) runs on host k mod N, on port P+k")("help,h", "show this help");
  return d;
}

/// The whole usage text: synopsis, options, exit statuses.
inline std::string usage_text() {
  options defaults;
  std::ostringstream s;
  s << "usage: dsgd-launch [options] -- PROGRAM [ARGS...]\n"
       "Runs a dsgd cluster on this machine: every task is PROGRAM with its own TF_CONFIG.\n\n"
    << described(defaults)
    << "\nexit status: 0 when every task succeeded; the failing task's status (128+signal when it\n"
       "was killed by a signal); 124 on --timeout; 128+signal when the launcher was signalled;\n"
       "1 when a ps task had to be killed or the launcher itself failed; 2 on bad usage.\n";
  return s.str();
}

inline void require_range(const char* option, long value, long low, long high) {
  if (value < low || value > high)
    throw usage_error{std::string("option --") + option + ": expected an integer in [" + std::to_string(low) + ", " +
                      std::to_string(high) + "], got " + std::to_string(value)};
}

inline void require_seconds(const char* option, double value) {
  if (!(value >= 0) || value > 1e7)
    throw usage_error{std::string("option --") + option + ": expected a number of seconds in [0, 1e7], got " +
                      (std::ostringstream() << value).str()};
}

// "--workers 3" or "--workers 2:4" into o.workers (MAX) and o.min_workers (MIN, 0 for "3").
inline void parse_workers(options& o, const std::string& v) {
  const auto whole = [&](const std::string& part) {
    std::size_t used = 0;
    long n = -1;
    try {
      if (!part.empty() && part[0] != '-' && part[0] != '+') n = std::stol(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != part.size())
      throw usage_error{"option --workers: expected N or MIN:MAX (whole numbers), got \"" + v + "\""};
    return n;
  };
  const auto colon = v.find(':');
  const long max = whole(colon == std::string::npos ? v : v.substr(colon + 1));
  require_range("workers", max, 1, 1000);
  o.workers = static_cast<int>(max);
  if (colon == std::string::npos) return;
  const long min = whole(v.substr(0, colon));
  if (min < 1 || min > max)
    throw usage_error{"option --workers " + v + ": MIN must be from 1 to MAX (" + std::to_string(max) + "), got " +
                      std::to_string(min)};
  o.min_workers = static_cast<int>(min);
}

/// Parses `dsgd-launch [options] -- PROGRAM [ARGS...]`; prints the usage and exits 0 for --help.
/// @throws usage_error naming the option (or argument) that was wrong
inline options parse_options(int argc, char** argv) {
  options o;
  // Everything after the first "--" is the program and its arguments, untouched.
  std::vector<std::string> ours;
  int i = 1;
  for (; i < argc && std::string(argv[i]) != "--"; ++i) ours.emplace_back(argv[i]);
  for (++i; i < argc; ++i) o.command.emplace_back(argv[i]);

  auto d = described(o);
  std::vector<std::string> stray;
  po::options_description all;
  all.add(d).add_options()("stray", po::value(&stray));
  po::positional_options_description positional;
  positional.add("stray", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(ours)
                  .options(all)
                  .positional(positional)
                  .style(po::command_line_style::unix_style & ~po::command_line_style::allow_guessing)
                  .run(),
              vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw usage_error{e.what()};
  }
  if (vm.count("help")) {
    std::fputs(usage_text().c_str(), stdout);
    std::exit(0);
  }
  if (!stray.empty()) throw usage_error{"unexpected argument \"" + stray.front() + "\"; put the program after \"--\""};
  require_range("ps", o.ps, 0, 1000);
  parse_workers(o, vm["workers"].as<std::string>());
  require_range("port-base", o.port_base, 0, 65535);
  require_seconds("timeout", o.timeout_s);
  require_seconds("ps-grace", o.ps_grace_s);
  require_seconds("kill-grace", o.kill_grace_s);
  require_range("max-restarts", o.max_restarts, 0, 1000000);
  require_range("nnodes", o.nnodes, 1, 1000);
  require_range("node-rank", o.node_rank, 0, o.nnodes - 1);
  if (vm.count("hosts")) {
    const std::string list = vm["hosts"].as<std::string>();
    std::size_t start = 0;
    while (start <= list.size()) {
      const std::size_t comma = std::min(list.find(',', start), list.size());
      std::string h = list.substr(start, comma - start);
      if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
      if (h.empty()) throw usage_error{"option --hosts: empty host at position " + std::to_string(o.hosts.size())};
      o.hosts.push_back(std::move(h));
      start = comma + 1;
    }
  }
  if (o.nnodes > 1 && o.min_workers > 0)
    throw usage_error{
        "option --workers MIN:MAX: an elastic job runs on one host (--nnodes 1); on many, let the "
        "cluster manager start the workers (docs/launching.md)"};
  if (o.nnodes > 1) {
    if (static_cast<int>(o.hosts.size()) != o.nnodes)
      throw usage_error{"option --hosts: " + std::to_string(o.hosts.size()) + " hosts given for --nnodes " +
                        std::to_string(o.nnodes) + "; expected one per node"};
    if (o.port_base == 0)
      throw usage_error{
          "option --port-base: a job over several hosts needs a fixed port base (every host's "
          "launcher must derive the same addresses)"};
    if (o.token_env)
      throw usage_error{
          "option --token-env: each host would draw its own token; give every host the same "
          "DSGD_CLUSTER_TOKEN instead"};
  } else if (!o.hosts.empty() && o.hosts.size() != 1) {
    throw usage_error{"option --hosts: " + std::to_string(o.hosts.size()) + " hosts given without --nnodes"};
  }
  if (o.nnodes == 1 && o.hosts.size() == 1) o.host = o.hosts.front();
  if (o.host.size() > 2 && o.host.front() == '[' && o.host.back() == ']')
    o.host = o.host.substr(1, o.host.size() - 2);  // "[::1]" as well as "::1"
  if (o.host.empty()) throw usage_error{"option --host: empty host"};
  if (o.command.empty()) throw usage_error{"no program given; expected \"-- PROGRAM [ARGS...]\""};
  const int total = o.ps + o.workers + (o.chief ? 1 : 0);
  if (o.port_base != 0 && o.port_base + total - 1 > 65535)
    throw usage_error{"option --port-base: " + std::to_string(o.port_base) + " with " + std::to_string(total) +
                      " tasks gives ports above 65535"};
  return o;
}

}  // namespace dsgd_launch
