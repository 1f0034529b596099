// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0

// dsgd-train's command line, on Boost.Program_options: the settings with their defaults, the
// options and their help, and the checks that span several options.
#pragma once

#include "values.hpp"

#include <dsgd/cluster/environment.hpp>
#include <dsgd/compress/selection.hpp>

#include <boost/program_options.hpp>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace dsgd_train {

/// What the command line asked for; every task of the job is given the same.
struct settings {
  std::string rule = "sync";
  std::string model = "mlp";
  std::vector<std::size_t> hidden{256, 128};  // the MLP's hidden widths
  std::uint64_t seed = 0;                     // the initial weights' seed; worker k shuffles with 1000 + k + 100 * seed
  std::size_t local_steps = 8;                // --rule local: local steps between averages
  std::size_t staleness = 2;                  // --rule ssp: the clocks a worker may run ahead
  std::size_t epochs = 12;
  std::size_t batch = 64;
  float lr = 0.05f;
  float momentum = 0.9f;
  float decay = 0.7f;  // learning rate multiplier per epoch
  double target = 0;
  std::size_t backup = 0;             // sync: aggregate workers - backup gradients per step
  struct slowdown slowdown;           // "worker:2=3": that task's steps take 3x its compute time
  std::string csv;                    // the chief writes one line per evaluation here
  dsgd::cluster::rank_layout layout;  // under mpirun, mpiexec or srun: which ranks are ps tasks, ports, hosts
  std::string hosts_variable;         // DSGD_HOSTS as given ("" unset), which filled layout.hosts
  std::string listen;                 // ps: where to listen ("" the spec's address, "*" any)
  std::size_t ps_threads = 1;         // ps: threads serving its connections
  double startup_timeout_s = 120;     // workers: how long to retry an unreachable ps
  std::string logdir;                 // checkpoints and TensorBoard summaries ("": neither)
  std::uint64_t save_steps = 0;       // chief: a checkpoint every N global steps (0: not by steps)
  std::uint64_t save_secs = 60;       // and/or every S seconds (0: not by time)
  std::size_t keep = 5;               // checkpoints kept
  std::uint64_t summary_steps = 100;  // summaries every N global steps
  std::uint64_t log_steps = 0;        // chief: a progress line every N global steps (0: epochs only)
  double recovery_timeout_s = 300;    // how long a lost session is re-created before giving up
  dsgd::compress::codec compress = dsgd::compress::none{};       // of every push
  dsgd::compress::codec pull_compress = dsgd::compress::none{};  // of every pull
};

namespace po = boost::program_options;

// The options with their help lines. Every value is taken as text and read by values.hpp,
// whose errors name the option and the range it expected; `s` receives the values.
inline po::options_description described(settings& s) {
  // An option whose text @p read turns into its setting; @p read gets "--NAME" for its errors.
  auto value = [](const char* name, const char* value_name, auto read) {
    return po::value<std::string>()
        ->value_name(value_name)
        ->notifier([option = std::string("--") + name, read](const std::string& v) { read(option, v); });
  };
  // A whole number from @p min to @p max into @p field.
  auto whole = [&](const char* name, const char* value_name, auto& field, std::uint64_t min,
                   std::uint64_t max = no_max) {
    return value(name, value_name, [&field, min, max](const std::string& option, const std::string& v) {
      field = static_cast<std::remove_reference_t<decltype(field)>>(read_whole(option, v, min, max));
    });
  };
  // A number in [lo, hi] (ends open as asked) into @p field.
  auto real = [&](const char* name, const char* value_name, auto& field, double lo, double hi, bool open_low = false,
                  bool open_high = false) {
    return value(
        name, value_name, [&field, lo, hi, open_low, open_high](const std::string& option, const std::string& v) {
          field =
              static_cast<std::remove_reference_t<decltype(field)>>(read_real(option, v, lo, hi, open_low, open_high));
        });
  };
  auto text = [](std::string& field, const char* value_name) { return po::value(&field)->value_name(value_name); };

  po::options_description d("options", 100, 48);
  auto add = d.add_options();
  add("rule", text(s.rule, "R"),
      "sync | async | ssp (bounded staleness, --staleness S) | local (local SGD: each worker steps alone, the "
      "models averaged every --local-steps steps) | allreduce (sync among the workers themselves, no ps: each "
      "applies the update to the part of the gradient it reduced) [sync]");
  add("staleness", whole("staleness", "S", s.staleness, 0, 1'000'000),
      "--rule ssp: a worker may run up to S clocks ahead of the slowest; every task needs the same S [2]");
  add("local-steps", whole("local-steps", "K", s.local_steps, 1, 1'000'000),
      "--rule local: local steps between averages (>= 1) [8]");
  add("model", text(s.model, "M"), "mlp (784-256-128-10) | softmax [mlp]");
  add("hidden",
      value("hidden", "W,W,...", [&s](const std::string& o, const std::string& v) { s.hidden = read_widths(o, v); }),
      "the MLP's hidden widths, e.g. 1024,1024 [256,128]");
  add("seed", whole("seed", "N", s.seed, 0, 1'000'000), "seed of the initial weights and the data order [0]");
  add("epochs", whole("epochs", "N", s.epochs, 1), "passes over the training set [12]");
  add("batch", whole("batch", "N", s.batch, 1), "examples per worker and step [64]");
  add("lr", real("lr", "X", s.lr, 0, infinity, true), "learning rate (> 0) [0.05]");
  add("momentum", real("momentum", "X", s.momentum, 0, 1, false, true), "momentum, in [0, 1) [0.9]");
  add("decay", real("decay", "X", s.decay, 0, 1, true), "learning-rate multiplier per epoch, in (0, 1] [0.7]");
  add("target", real("target", "ACC", s.target, 0, 1), "exit 1 if the chief ends below this test accuracy [0]");
  add("backup", whole("backup", "N", s.backup, 0),
      "sync: each step averages the first workers - N gradients; the slowest N are backups whose late gradients "
      "are dropped [0]");
  add("slowdown",
      value("slowdown", "TASK=F",
            [&s](const std::string& o, const std::string& v) { s.slowdown = read_slowdown(o, v); }),
      "that task sleeps after each step so that its step takes F times its compute time (a straggler), e.g. "
      "worker:2=3");
  add("csv", text(s.csv, "FILE"), "the chief writes one line per evaluation (bench/straggler/run.sh)");
  add("logdir", text(s.logdir, "DIR"),
      "checkpoints and TensorBoard summaries in DIR; the chief restores the latest checkpoint there on start");
  add("save-secs", whole("save-secs", "S", s.save_secs, 0),
      "with --logdir: a checkpoint every S seconds (0: not by time) [60]");
  add("save-steps", whole("save-steps", "N", s.save_steps, 0),
      "with --logdir: a checkpoint every N global steps (0: not by steps) [0]");
  add("keep", whole("keep", "K", s.keep, 1), "with --logdir: checkpoints kept (>= 1) [5]");
  add("summary-steps", whole("summary-steps", "N", s.summary_steps, 1),
      "with --logdir: summaries every N global steps (>= 1) [100]");
  add("log-steps", whole("log-steps", "N", s.log_steps, 0),
      "chief: a progress line every N global steps (0: per epoch only) [0]");
  add("recovery-timeout", real("recovery-timeout", "S", s.recovery_timeout_s, 0, 1e9),
      "how long a session lost with a ps is re-created before the task gives up (0: fail at once) [300]");
  add("compress",
      value("compress", "C",
            [&s](const std::string& o, const std::string& v) { s.compress = read_codec(o, v, false); }),
      "pushes as none | fp16 | bf16 | top_k(RATIO) | two_bit(THRESHOLD), the last two with error feedback "
      "(docs/compression.md) [none]");
  add("pull-compress",
      value("pull-compress", "C",
            [&s](const std::string& o, const std::string& v) { s.pull_compress = read_codec(o, v, true); }),
      "pulls as none | fp16 | bf16 [none]");
  add("num-ps", whole("num-ps", "N", s.layout.num_ps, 0, 1'000'000),
      "under mpirun, mpiexec or srun: ranks 0..N-1 are the ps tasks [1]");
  add("base-port", whole("base-port", "P", s.layout.base_port, 1, 65535),
      "under mpirun, mpiexec or srun: rank r listens on P + r of its host (DSGD_HOSTS) [2222]");
  add("listen", text(s.listen, "ADDR"), "ps: \"*\" any address, an IP, \"if:NAME\" [the spec's address]");
  add("ps-threads", whole("ps-threads", "N", s.ps_threads, 1, 1024),
      "ps: threads serving its connections, 1 to 1024 [1]");
  add("startup-timeout", real("startup-timeout", "S", s.startup_timeout_s, 0, 1e9, true),
      "workers: retry an unreachable or unresolvable ps this long [120]");
  add("help,h", "this text");
  return d;
}

/// The whole usage text: synopsis, options, environment, exit statuses.
inline std::string usage_text() {
  settings defaults;
  std::ostringstream s;
  s << "usage: dsgd-train [OPTIONS]\n"
       "Every task of the cluster runs this program; TF_CONFIG (dsgd-launch), Open MPI, MPICH or Slurm\n"
       "says which one it is. The job trains the Fashion-MNIST MLP (or softmax regression) data-parallel\n"
       "over the workers, its variables on the ps tasks.\n\n"
    << described(defaults)
    << "\nEnvironment: TF_CONFIG (the task), DSGD_CLUSTER_TOKEN (the cluster's secret, the same for\n"
       "every task; no default: dsgd-launch draws one for a single-host job, DSGD_INSECURE_NO_TOKEN=1\n"
       "runs without one), DSGD_MIN_REPLICAS (an elastic job: the spec's workers are slots and a sync\n"
       "step needs at least this many replicas; dsgd-launch --workers MIN:MAX sets it), DSGD_HOSTS\n"
       "(under mpirun, mpiexec or srun: the ranks' hosts, H0,H1,... one per rank in rank order or one\n"
       "for all; unset: localhost, or under srun the step's node list; TF_CONFIG names its own).\n\n"
       "Exit status: 0 done (at --target or above), 1 a failure or below --target, 2 a bad option.\n";
  return s.str();
}

// Boost's message for a command line it could not parse, in the words of our own errors.
inline usage_error reworded(const po::error& e) {
  if (const auto* unknown = dynamic_cast<const po::unknown_option*>(&e))
    return usage_error("unknown option " + unknown->get_option_name());
  if (const auto* syntax = dynamic_cast<const po::invalid_command_line_syntax*>(&e);
      syntax && syntax->kind() == po::invalid_command_line_syntax::missing_parameter)
    return usage_error(syntax->get_option_name() + " needs a value");
  return usage_error(e.what());
}

/// Reads the command line. @returns the settings, or nothing after --help (the usage printed).
/// @throws usage_error naming the option that was wrong
inline std::optional<settings> parse_options(int argc, char** argv) {
  settings s;
  std::vector<std::string> stray;
  po::options_description all;
  all.add(described(s)).add_options()("stray", po::value(&stray));
  po::positional_options_description positional;
  positional.add("stray", -1);
  po::variables_map vm;
  try {
    auto parsed = po::command_line_parser(argc, argv)
                      .options(all)
                      .positional(positional)
                      .style(po::command_line_style::unix_style & ~po::command_line_style::allow_guessing)
                      .run();
    // An option given twice takes its last value: scripts/main.sh passes its defaults before the
    // caller's options, which override them.
    std::set<std::string> later;
    std::vector<po::option> kept;
    for (auto o = parsed.options.rbegin(); o != parsed.options.rend(); ++o)
      if (o->string_key == "stray" || later.insert(o->string_key).second) kept.insert(kept.begin(), *o);
    parsed.options = std::move(kept);
    po::store(parsed, vm);
    if (vm.count("help")) {
      std::fputs(usage_text().c_str(), stdout);
      return std::nullopt;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw reworded(e);
  }
  if (!stray.empty()) throw usage_error("unexpected argument " + stray.front() + "; options start with --");
  if (s.rule != "sync" && s.rule != "async" && s.rule != "ssp" && s.rule != "local" && s.rule != "allreduce")
    throw usage_error("--rule " + s.rule + ": expected sync, async, ssp, local or allreduce");
  // The collective rule among the workers (tools/train/collective_loop.hpp) has no ps, so what
  // only a ps does is refused by name. Its replicas checkpoint together at agreed steps
  // (--save-steps and the end), never by each one's clock.
  if (s.rule == "allreduce")
    for (const char* option : {"compress", "pull-compress", "listen", "ps-threads", "save-secs"})
      if (vm.count(option)) throw usage_error(std::string("--") + option + ": not available under --rule allreduce");
  if (s.model != "mlp" && s.model != "softmax") throw usage_error("--model " + s.model + ": expected mlp or softmax");
  if (vm.count("staleness") && s.rule != "ssp")
    throw usage_error("--staleness " + std::to_string(s.staleness) + ": a bound of --rule ssp, not " + s.rule);
  if (s.backup > 0 && s.rule != "sync")
    throw usage_error("--backup " + std::to_string(s.backup) + ": backup workers need --rule sync, not " + s.rule);
  if (s.logdir.empty())
    for (const char* option : {"save-secs", "save-steps", "keep", "summary-steps"})
      if (vm.count(option)) throw usage_error(std::string("--") + option + " needs --logdir DIR");
  // The ranks' hosts under mpirun, mpiexec or srun, from the environment every rank is given
  // alike (mpirun -x DSGD_HOSTS, mpiexec -genvlist DSGD_HOSTS, srun --export=ALL).
  if (const char* hosts = std::getenv("DSGD_HOSTS"); hosts && *hosts) {
    s.hosts_variable = hosts;
    s.layout.hosts = read_hosts("DSGD_HOSTS", s.hosts_variable);
  }
  return s;
}

}  // namespace dsgd_train
