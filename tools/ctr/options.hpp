// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0

// dsgd-ctr's command line, on Boost.Program_options: the settings with their defaults, the
// options and their help, and the checks that span several options. The values are read by
// dsgd-train's readers (tools/train/values.hpp), whose errors name the option and its range.
#pragma once

#include "../train/values.hpp"

#include <boost/program_options.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace dsgd_ctr {

using dsgd_train::usage_error;

/// What the command line asked for; every task of the job is given the same.
struct settings {
  std::string rule = "hybrid";  // sync | async | ssp | hybrid (dense sync, tables async)
  std::size_t staleness = 2;
  std::size_t backup = 0;      // hybrid: a sync MLP step averages workers - backup pushes
  std::string train;           // a .ctr file ("": the synthetic click stream)
  std::string test;            // a .ctr file ("": the click stream's test split)
  std::uint64_t examples = 0;  // training examples over all workers (0: 1M of the stream, --epochs of a file)
  std::size_t epochs = 1;      // passes over --train's file
  std::size_t batch = 512;
  std::size_t dim = 16;
  std::vector<std::size_t> hidden{256, 128};
  std::optional<std::vector<std::array<std::size_t, 2>>> crosses;  // unset: the stream's two, a file's none
  float lr = 0.05f;                                                // the deep part's Adagrad (MLP and embeddings)
  std::string wide_optimizer = "ftrl";  // the wide part's: ftrl (TF1's) or adagrad (TorchRec's choice)
  float wide_lr = 0;                    // 0: FTRL's TF default min(0.2, 1 / sqrt(wide keys)), Adagrad's --lr
  std::uint32_t admit = 1;              // a key gets a row the admit-th time it is looked up
  std::uint64_t max_rows = 0;           // rows per ps task and table (0: no cap; least frequent evicted)
  std::uint64_t seed = 1;               // the MLP's initial weights
  std::uint64_t data_seed = 7;          // the click stream's world
  double scale = 0.01;                  // the click stream's cardinality_scale
  double drift = 0.01;                  // the click stream's drift_rate
  std::uint64_t eval = 100'000;         // test examples scored (0: a file's every one)
  std::uint64_t eval_steps = 0;         // chief: an evaluation every N global steps too (0: at the end only)
  long cache = -1;                      // the deep table's row cache staleness S in steps (-1: no cache)
  double target = 0;                    // exit 1 if the final test AUC is below it
  std::uint64_t log_steps = 100;        // chief: a progress line every N global steps
  std::string logdir;
  std::uint64_t save_secs = 60, save_steps = 0;
  std::size_t deltas = 10;  // incremental checkpoints between two full ones
  std::size_t keep = 5;
  std::uint64_t summary_steps = 100;
  double recovery_timeout_s = 300, startup_timeout_s = 120;
  dsgd_train::slowdown slowdown;
};

namespace po = boost::program_options;

/// "5x8,13x16": pairs of field numbers.
inline std::vector<std::array<std::size_t, 2>> read_crosses(const std::string& option, const std::string& v) {
  std::vector<std::array<std::size_t, 2>> out;
  if (v == "none") return out;
  std::istringstream in(v);
  std::string pair;
  while (std::getline(in, pair, ',')) {
    const auto x = pair.find('x');
    if (x == std::string::npos || x == 0 || x + 1 == pair.size())
      throw usage_error(option + " " + v + ": expected pairs of field numbers like 5x8,13x16, or none");
    out.push_back({dsgd_train::read_whole(option, pair.substr(0, x), 0, 1'000'000),
                   dsgd_train::read_whole(option, pair.substr(x + 1), 0, 1'000'000)});
  }
  if (out.empty()) throw usage_error(option + " " + v + ": expected pairs of field numbers like 5x8,13x16, or none");
  return out;
}

inline po::options_description described(settings& s) {
  using dsgd_train::no_max;
  auto value = [](const char* name, const char* value_name, auto read) {
    return po::value<std::string>()
        ->value_name(value_name)
        ->notifier([option = std::string("--") + name, read](const std::string& v) { read(option, v); });
  };
  auto whole = [&](const char* name, const char* value_name, auto& field, std::uint64_t min,
                   std::uint64_t max = no_max) {
    return value(name, value_name, [&field, min, max](const std::string& option, const std::string& v) {
      field = static_cast<std::remove_reference_t<decltype(field)>>(dsgd_train::read_whole(option, v, min, max));
    });
  };
  auto real = [&](const char* name, const char* value_name, auto& field, double lo, double hi, bool open_low = false) {
    return value(name, value_name, [&field, lo, hi, open_low](const std::string& option, const std::string& v) {
      field = static_cast<std::remove_reference_t<decltype(field)>>(
          dsgd_train::read_real(option, v, lo, hi, open_low, false));
    });
  };
  auto text = [](std::string& field, const char* value_name) { return po::value(&field)->value_name(value_name); };

  po::options_description d("options", 100, 48);
  auto add = d.add_options();
  add("rule", text(s.rule, "R"),
      "sync | async | ssp (bounded staleness, --staleness S) | hybrid (the MLP sync, the tables async) [hybrid]");
  add("staleness", whole("staleness", "S", s.staleness, 0, 1'000'000), "--rule ssp: the clocks a worker may lead [2]");
  add("backup", whole("backup", "N", s.backup, 0, 1'000'000),
      "--rule hybrid: each MLP step averages the first workers - N pushes; the slowest N are backups whose late "
      "pushes are dropped (their table pushes still apply) [0]");
  add("train", text(s.train, "FILE"),
      "a .ctr file of training examples (dsgd-ctr-data, scripts/ctr_data.py) [the synthetic click stream]");
  add("test", text(s.test, "FILE"), "a .ctr file of test examples [the click stream's test split]");
  add("examples", whole("examples", "N", s.examples, 1),
      "training examples over all workers [1000000 of the stream; --epochs passes over --train]");
  add("epochs", whole("epochs", "N", s.epochs, 1), "with --train: passes over the file [1]");
  add("batch", whole("batch", "N", s.batch, 1, 1'000'000), "examples per worker and step [512]");
  add("dim", whole("dim", "N", s.dim, 1, 4096), "floats per deep embedding row [16]");
  add("hidden",
      value("hidden", "W,W,...",
            [&s](const std::string& o, const std::string& v) { s.hidden = dsgd_train::read_widths(o, v); }),
      "the MLP's hidden widths [256,128]");
  add("crosses",
      value("crosses", "AxB,...", [&s](const std::string& o, const std::string& v) { s.crosses = read_crosses(o, v); }),
      "pairs of fields (numbered from 0) crossed in the wide part, or none [the stream: 5x8,13x16; a file: none]");
  add("lr", real("lr", "X", s.lr, 0, 1e6, true), "the deep part's Adagrad learning rate, MLP and embeddings [0.05]");
  add("wide-optimizer", text(s.wide_optimizer, "O"),
      "the wide part's optimizer: ftrl | adagrad (for systems without FTRL, as TorchRec's) [ftrl]");
  add("wide-lr", real("wide-lr", "X", s.wide_lr, 0, 1e6, true),
      "the wide part's learning rate [FTRL: min(0.2, 1/sqrt(wide keys per example)), TF's; Adagrad: --lr]");
  add("admit", whole("admit", "N", s.admit, 1, 1'000'000), "a key gets a row the N-th time a worker looks it up [1]");
  add("max-rows", whole("max-rows", "N", s.max_rows, 0, (1ull << 32) - 1),
      "rows per ps task and table, the least frequent evicted past it (0: no cap) [0]");
  add("seed", whole("seed", "N", s.seed, 0), "the MLP's initial weights [1]");
  add("data-seed", whole("data-seed", "N", s.data_seed, 0), "the click stream's world [7]");
  add("scale", real("scale", "X", s.scale, 0, 4294, true),
      "the click stream's cardinality_scale (1: Criteo's cardinalities) [0.01]");
  add("drift", real("drift", "X", s.drift, 0, 1),
      "the click stream's drift: the share of each field's ids renewed every 100,000 examples [0.01]");
  add("eval", whole("eval", "N", s.eval, 0), "test examples scored (0: every one of --test) [100000]");
  add("eval-steps", whole("eval-steps", "N", s.eval_steps, 0),
      "chief: a test evaluation every N global steps as well as at the end (0: at the end) [0]");
  add("cache",
      value("cache", "S",
            [&s](const std::string& o, const std::string& v) {
              s.cache = static_cast<long>(dsgd_train::read_whole(o, v, 0, 1'000'000));
            }),
      "serve deep rows pulled at most S steps ago from a worker-side cache, pull only the misses [no cache]");
  add("target", real("target", "AUC", s.target, 0, 1), "exit 1 if the chief ends below this test AUC [0]");
  add("log-steps", whole("log-steps", "N", s.log_steps, 0), "chief: a progress line every N global steps [100]");
  add("slowdown",
      value("slowdown", "TASK=F",
            [&s](const std::string& o, const std::string& v) { s.slowdown = dsgd_train::read_slowdown(o, v); }),
      "that task sleeps after each step so that its step takes F times its compute time, e.g. worker:1=2");
  add("logdir", text(s.logdir, "DIR"),
      "checkpoints (tables full and incremental) and TensorBoard summaries; the chief resumes from the latest");
  add("save-secs", whole("save-secs", "S", s.save_secs, 0), "with --logdir: a checkpoint every S seconds [60]");
  add("save-steps", whole("save-steps", "N", s.save_steps, 0),
      "with --logdir: a checkpoint every N global steps (0: not by steps) [0]");
  add("deltas", whole("deltas", "N", s.deltas, 0, 1'000'000),
      "with --logdir: incremental checkpoints (the tables' changed rows) between two full ones [10]");
  add("keep", whole("keep", "K", s.keep, 1), "with --logdir: checkpoints kept [5]");
  add("summary-steps", whole("summary-steps", "N", s.summary_steps, 1),
      "with --logdir: summaries every N global steps [100]");
  add("recovery-timeout", real("recovery-timeout", "S", s.recovery_timeout_s, 0, 1e9),
      "how long a session lost with a ps is re-created before the task gives up [300]");
  add("startup-timeout", real("startup-timeout", "S", s.startup_timeout_s, 0, 1e9, true),
      "workers: retry an unreachable ps this long [120]");
  add("help,h", "this text");
  return d;
}

inline std::string usage_text() {
  settings defaults;
  std::ostringstream s;
  s << "usage: dsgd-ctr [OPTIONS]\n"
       "Every task of the cluster runs this program; TF_CONFIG (dsgd-launch), Open MPI, MPICH or Slurm says\n"
       "which one it is. The job trains Wide & Deep (TF1's DNNLinearCombinedClassifier) on click-through-rate\n"
       "data: the wide part's weights (ids, crosses, a bias) and the deep part's embeddings are dynamic tables\n"
       "on the ps tasks, the MLP's variables are sharded over them.\n\n"
    << described(defaults)
    << "\nEnvironment: TF_CONFIG (the task), DSGD_CLUSTER_TOKEN (the cluster's secret; dsgd-launch draws one).\n\n"
       "Exit status: 0 done (at --target or above), 1 a failure or below --target, 2 a bad option.\n";
  return s.str();
}

/// Reads the command line. @returns the settings, or nothing after --help (the usage printed).
/// @throws usage_error naming the option that was wrong
inline std::optional<settings> parse_options(int argc, char** argv) {
  settings s;
  po::variables_map vm;
  try {
    std::vector<std::string> stray;
    po::options_description all;
    all.add(described(s)).add_options()("stray", po::value(&stray));
    po::positional_options_description positional;
    positional.add("stray", -1);
    po::store(po::command_line_parser(argc, argv)
                  .options(all)
                  .positional(positional)
                  .style(po::command_line_style::unix_style & ~po::command_line_style::allow_guessing)
                  .run(),
              vm);
    if (vm.count("help")) {
      std::fputs(usage_text().c_str(), stdout);
      return std::nullopt;
    }
    po::notify(vm);
    if (!stray.empty()) throw usage_error("unexpected argument " + stray.front() + "; options start with --");
  } catch (const po::unknown_option& e) {
    throw usage_error("unknown option " + e.get_option_name());
  } catch (const po::error& e) {
    throw usage_error(e.what());
  }
  if (s.wide_optimizer != "ftrl" && s.wide_optimizer != "adagrad")
    throw usage_error("--wide-optimizer " + s.wide_optimizer + ": expected ftrl or adagrad");
  if (s.rule != "sync" && s.rule != "async" && s.rule != "ssp" && s.rule != "hybrid")
    throw usage_error("--rule " + s.rule + ": expected sync, async, ssp or hybrid");
  if (vm.count("staleness") && s.rule != "ssp") throw usage_error("--staleness: a bound of --rule ssp, not " + s.rule);
  if (s.backup > 0 && s.rule != "hybrid")
    throw usage_error("--backup: backup workers need --rule hybrid (a sync table waits for every worker), not " +
                      s.rule);
  if (s.train.empty() && vm.count("epochs"))
    throw usage_error("--epochs: passes over --train FILE, which is not given");
  if (!s.train.empty() && vm.count("examples") && vm.count("epochs"))
    throw usage_error("--examples and --epochs: give one of them");
  if (s.train.empty() != s.test.empty())
    throw usage_error("--train and --test: give both (files) or neither (the click stream)");
  if (s.logdir.empty())
    for (const char* option : {"save-secs", "save-steps", "deltas", "keep", "summary-steps"})
      if (vm.count(option)) throw usage_error(std::string("--") + option + " needs --logdir DIR");
  if (s.train.empty() && s.eval == 0) throw usage_error("--eval 0: every test example of a file; the stream needs N");
  return s;
}

}  // namespace dsgd_ctr
