// SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
// SPDX-License-Identifier: Apache-2.0
//
// The exactly-once counter model, a dsgd program for the fault tests. Every process runs it;
// TF_CONFIG says which task it is. The model is --vars counters of one float each, initialised
// to 0 and placed round-robin over the ps tasks; the optimizer is SGD with rate 1 and every
// gradient is -1, so each applied async push adds exactly 1 to every counter and each sync step
// adds exactly 1 (the mean of R gradients of -1).
//
//   counter_job [--rule sync|async] [--backup N] [--steps N] [--step-ms MS] [--vars N]
//               [--step-timeout-ms MS] [--ready-timeout-ms MS] [--startup-timeout-ms MS]
//               [--chief-timeout-ms MS] [--dead-peer-timeout-s S] [--recover] [--session DIR]
//               [--save-steps N] [--token T] [--recovery-timeout-s S]
//
//   --rule           sync (update::sync_average), async (update::async) or ssp
//                    (update::bounded_staleness, S = 2); default sync
//   --backup N       sync: each step averages the first replicas - N gradients (N backups)
//   --steps N        sync: train until the global step reaches N; async, ssp: N pushes per
//                    worker (default 20)
//   --pushes N       N pushes of this worker whatever the rule, then finish() (uneven data)
//   --step-ms MS     a worker sleeps MS ms per step, standing in for its compute (default 0)
//   --vars N         counters (default 1)
//   --step-timeout-ms, --ready-timeout-ms, --startup-timeout-ms: trainer_options' deadlines
//   --chief-timeout-ms  a ps stops with peer_lost when the chief was gone this long (default 600 s)
//   --dead-peer-timeout-s  the dead-peer deadline of every connection, ps and worker
//                    (ps_options, trainer_options::dead_peer_timeout; default 60 s)
//   --recover        a worker whose ps was lost re-creates its session (trainer::recover: it
//                    reconnects and the chief re-initialises the ps tasks from its last values)
//                    instead of failing; it prints "recover ERRC" each time
//   --session DIR    workers train in a train::monitored_session until the global step reaches
//                    --steps, checkpointing every 5 steps into DIR (the chief restores the
//                    latest there at start), recovering from a lost ps or a restore; with
//                    --pushes N under async or SSP, each task stops after N pushes of its own,
//                    resuming after each recovery at trainer::pushes_received() ("resume K"),
//                    and prints push and ack lines as outside a session
//   --save-steps N   --session: checkpoint every N global steps instead of 5
//   --token T        the cluster token, instead of DSGD_CLUSTER_TOKEN's
//   --recovery-timeout-s S  --session: the session's recovery deadline (default 60 s)
//
// A worker prints one line per event, written straight to fd 1 so that nothing is lost when it
// is killed:
//   start TASK replica R                    after create_variables
//   resume K                                async, ssp: the ps tasks already hold K pushes of
//                                           this task (an earlier process of it was killed)
//   push S at STEP                          before push S (0-based) of this task
//   ack S dropped D                         after the ps acknowledged push S (D shards dropped it)
//   done TASK pushes N                      after finish()
//   error ERRC MESSAGE                      a dsgd::error (exit status 3), ERRC as in dsgd::errc
// A ps task prints, after its join() returned:
//   ps-final TASK var V value X step S      for each counter it holds
//   ps-memory TASK vmrss_kb A vmhwm_kb B    from /proc/self/status
// The cluster token is DSGD_CLUSTER_TOKEN (a fixed test token when unset).
#include <dsgd/cluster/environment.hpp>
#include <dsgd/optim/sgd.hpp>
#include <dsgd/placement/round_robin.hpp>
#include <dsgd/server/parameter_server.hpp>
#include <dsgd/tensor/init.hpp>
#include <dsgd/train/monitored_session.hpp>
#include <dsgd/trainer.hpp>
#include <dsgd/update/async.hpp>
#include <dsgd/update/bounded_staleness.hpp>
#include <dsgd/update/sync_average.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

struct settings {
  std::string rule = "sync";
  std::size_t backup = 0;
  std::size_t steps = 20;
  std::size_t pushes = 0;  // 0: as --steps says
  int step_ms = 0;
  std::size_t vars = 1;
  long step_timeout_ms = 5'000;
  long ready_timeout_ms = 30'000;
  long chief_timeout_ms = 600'000;
  long startup_timeout_ms = 30'000;
  long dead_peer_timeout_s = -1;  // -1: the transport's default
  bool recover = false;
  std::string session_dir;       // --session: run in a monitored_session checkpointing here
  std::size_t save_steps = 5;    // --save-steps
  std::string token;             // --token: instead of DSGD_CLUSTER_TOKEN's
  long recovery_timeout_s = 60;  // --recovery-timeout-s
};

void emit(std::string line) {
  line += '\n';
  std::string_view rest = line;
  while (!rest.empty()) {
    const ssize_t n = ::write(STDOUT_FILENO, rest.data(), rest.size());
    if (n <= 0) return;
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

// dsgd::errc as its enumerator name, so that tests match a stable word.
std::string errc_name(const dsgd::error_code& ec) {
  if (ec.category() != dsgd::category()) return ec.category().name() + std::string(":") + std::to_string(ec.value());
  switch (static_cast<dsgd::errc>(ec.value())) {
    case dsgd::errc::ok:
      return "ok";
    case dsgd::errc::invalid_argument:
      return "invalid_argument";
    case dsgd::errc::bad_device_string:
      return "bad_device_string";
    case dsgd::errc::device_unavailable:
      return "device_unavailable";
    case dsgd::errc::shape_mismatch:
      return "shape_mismatch";
    case dsgd::errc::dataset_missing:
      return "dataset_missing";
    case dsgd::errc::dataset_corrupt:
      return "dataset_corrupt";
    case dsgd::errc::bad_cluster_spec:
      return "bad_cluster_spec";
    case dsgd::errc::bad_frame:
      return "bad_frame";
    case dsgd::errc::handshake_failed:
      return "handshake_failed";
    case dsgd::errc::peer_unreachable:
      return "peer_unreachable";
    case dsgd::errc::peer_lost:
      return "peer_lost";
    case dsgd::errc::timed_out:
      return "timed_out";
    case dsgd::errc::placement_mismatch:
      return "placement_mismatch";
    case dsgd::errc::checkpoint_corrupt:
      return "checkpoint_corrupt";
    case dsgd::errc::not_found:
      return "not_found";
    case dsgd::errc::cancelled:
      return "cancelled";
    case dsgd::errc::aborted:
      return "aborted";
  }
  return "errc:" + std::to_string(ec.value());
}

std::string token() {
  const char* t = std::getenv("DSGD_CLUSTER_TOKEN");
  return t != nullptr && *t != '\0' ? t : "dsgd-faults-test-token";
}

// "VmRSS:    1234 kB" -> 1234 (0 when absent).
long status_kb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
  return 0;
}

template <class Rule>
Rule make_rule(const settings& s, std::size_t replicas) {
  if constexpr (std::is_same_v<Rule, dsgd::update::sync_average>) {
    if (s.backup >= replicas)
      throw dsgd::error(dsgd::errc::invalid_argument, "--backup " + std::to_string(s.backup) +
                                                          " leaves no replica of " + std::to_string(replicas) +
                                                          " to aggregate");
    return Rule{replicas - s.backup};
  } else {
    return Rule{};
  }
}

// What a ps task's and a worker's options share: the token, the counter's optimizer, the rule,
// the step and ready deadlines, the dead-peer deadline.
template <class Options, class Rule>
Options common_options(const settings& s, const dsgd::cluster::role& me) {
  Options o;
  o.connection.token = s.token.empty() ? token() : s.token;
  o.optimizer = dsgd::optim::sgd{1.f};
  o.rule = make_rule<Rule>(s, dsgd::cluster::replicas::count(me.cluster));
  o.serving.step_timeout = std::chrono::milliseconds(s.step_timeout_ms);
  o.serving.ready_timeout = std::chrono::milliseconds(s.ready_timeout_ms);
  if (s.dead_peer_timeout_s >= 0) o.connection.dead_peer_timeout = std::chrono::seconds(s.dead_peer_timeout_s);
  return o;
}

template <class Rule>
int serve(const settings& s, const dsgd::cluster::role& me) {
  using server = dsgd::server::parameter_server<Rule, dsgd::optim::sgd>;
  auto o = common_options<typename server::options, Rule>(s, me);
  o.serving.chief_timeout = std::chrono::milliseconds(s.chief_timeout_ms);
  server ps(me.cluster, me.task.index, o);
  ps.join();
  const std::string task = me.task.to_string();
  for (std::size_t v = 0; v < s.vars; ++v) {
    const auto* shard = ps.find(static_cast<std::uint32_t>(v), 0);
    if (shard == nullptr) continue;
    // join() has returned, nothing else uses the shard: reading it through try_pull (which is
    // not const) is safe. Any replica may read at step 0 under every rule.
    float value = 0.f;
    auto step = const_cast<typename server::shard_type*>(shard)->try_pull(0, 0, &value);
    emit("ps-final " + task + " var " + std::to_string(v) + " value " + std::to_string(static_cast<long long>(value)) +
         " step " + std::to_string(step ? *step : 0));
  }
  emit("ps-memory " + task + " vmrss_kb " + std::to_string(status_kb("VmRSS")) + " vmhwm_kb " +
       std::to_string(status_kb("VmHWM")));
  return 0;
}

// --session DIR: the loop of a train::monitored_session (checkpoints every 5 global steps in
// DIR, recovery on), until the global step reaches --steps.
template <class Trainer, class Tensors>
int work_in_session(const settings& s, Trainer& t, Tensors& values, const Tensors& grads,
                    const std::vector<std::string>& names) {
  std::vector<std::unique_ptr<dsgd::train::session_hook<dsgd::device::cpu>>> hooks;
  hooks.push_back(std::make_unique<dsgd::train::stop_at_step_hook<dsgd::device::cpu>>(s.steps));
  dsgd::train::monitored_session<Trainer> session(
      t, values, names, std::move(hooks),
      {.checkpoint_dir = s.session_dir,
       .save_checkpoint_steps = s.save_steps,
       .recovery_timeout = std::chrono::seconds(s.recovery_timeout_s),
       .log = [](std::string_view line) { emit("log " + std::string(line)); }});
  const std::string task = t.task().to_string();
  emit("start " + task + " replica " + std::to_string(t.replica()) + " at " + std::to_string(session.step()) +
       (session.restored_step() ? " restored " + std::to_string(*session.restored_step()) : std::string()));
  // --pushes N under async and SSP: N pushes of this task, exactly once, resumed after every
  // recovery at the pushes the ps tasks hold (after a restore: those of the checkpoint).
  const bool resumes = s.pushes > 0 && !std::is_same_v<typename Trainer::update_rule_type, dsgd::update::sync_average>;
  std::size_t k = resumes ? t.pushes_received() : 0;
  if (k > 0) emit("resume " + std::to_string(k));
  std::size_t recoveries = 0;
  while (!session.should_stop() && (s.pushes == 0 || k < s.pushes)) {
    if (s.step_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(s.step_ms));
    if (resumes) emit("push " + std::to_string(k) + " at " + std::to_string(session.step()));
    session.run(0.f, grads);
    if (session.recoveries() == recoveries) {
      if (resumes) emit("ack " + std::to_string(k) + " dropped 0");
      ++k;
      continue;
    }
    recoveries = session.recoveries();
    if (resumes) {
      k = t.pushes_received();  // the push that failed may have arrived
      emit("resume " + std::to_string(k));
    }
  }
  session.close();
  emit("done " + task + " pushes " + std::to_string(k) + " recoveries " + std::to_string(session.recoveries()));
  return 0;
}

template <class Rule>
int work(const settings& s, const dsgd::cluster::role& me) {
  using trainer = dsgd::trainer<dsgd::device::cpu, dsgd::placement::round_robin, Rule, dsgd::optim::sgd>;
  auto o = common_options<typename trainer::options, Rule>(s, me);
  o.requests.startup_timeout = std::chrono::milliseconds(s.startup_timeout_ms);
  o.connection.log = [](std::string_view line) { emit("log " + std::string(line)); };
  trainer t(me.cluster, me.task, o);
  using tensor = dsgd::tensor<dsgd::device::cpu>;
  std::vector<tensor> values, grads;
  std::vector<std::string> names;
  for (std::size_t v = 0; v < s.vars; ++v) {
    values.emplace_back(dsgd::device::cpu{}, dsgd::shape{1}, dsgd::init::zeros{});
    grads.emplace_back(dsgd::device::cpu{}, dsgd::shape{1}, dsgd::init::constant{-1.f});
    names.push_back("counter" + std::to_string(v));
  }
  if (!s.session_dir.empty()) return work_in_session(s, t, values, grads, names);
  t.create_variables(values, names);
  const std::string task = me.task.to_string();
  emit("start " + task + " replica " + std::to_string(t.replica()));
  // Sync: until the global step reaches --steps, so that every worker stops at the same step
  // (a worker counting its own pushes could stop a step early and leave the others waiting).
  // Async: --steps pushes of this worker.
  constexpr bool sync = std::is_same_v<Rule, dsgd::update::sync_average>;
  // Async and SSP: a restarted worker resumes at the first push the ps has not received from
  // its task (each push arrived exactly once, the one in flight at a kill included).
  std::size_t k = sync ? 0 : t.pushes_received();
  if (k > 0) emit("resume " + std::to_string(k));
  auto more = [&] { return s.pushes ? k < s.pushes : sync ? t.step() < s.steps : k < s.steps; };
  while (more()) {
    if (s.step_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(s.step_ms));
    try {
      emit("push " + std::to_string(k) + " at " + std::to_string(t.step()));
      const std::size_t dropped = t.push(grads);
      emit("ack " + std::to_string(k) + " dropped " + std::to_string(dropped));
      ++k;
      if (more()) t.pull(values);
    } catch (const dsgd::error& e) {
      if (!s.recover || !trainer::recoverable(e.code())) throw;
      emit("recover " + errc_name(e.code()));
      t.recover(values);
      if (!sync) k = t.pushes_received();  // the push that failed may have arrived
    }
  }
  t.finish();
  emit("done " + task + " pushes " + std::to_string(k));
  return 0;
}

template <class Rule>
int run(const settings& s) {
  const auto me = dsgd::cluster::resolve_from_environment({});
  try {
    return me.task.job == "ps" ? serve<Rule>(s, me) : work<Rule>(s, me);
  } catch (const dsgd::error& e) {
    emit("error " + errc_name(e.code()) + " " + e.what());
    return 3;
  }
}

long number(int argc, char** argv, int& i) {
  const std::string name = argv[i];
  if (i + 1 >= argc) throw dsgd::error(dsgd::errc::invalid_argument, "option " + name + " needs a value");
  const std::string v = argv[++i];
  std::size_t used = 0;
  long n = -1;
  try {
    n = std::stol(v, &used);
  } catch (const std::exception&) {
  }
  if (used != v.size() || n < 0)
    throw dsgd::error(dsgd::errc::invalid_argument, "option " + name + ": \"" + v + "\" is not a number >= 0");
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--rule") {
        if (i + 1 >= argc) throw dsgd::error(dsgd::errc::invalid_argument, "option --rule needs a value");
        s.rule = argv[++i];
        if (s.rule != "sync" && s.rule != "async" && s.rule != "ssp")
          throw dsgd::error(dsgd::errc::invalid_argument,
                            "option --rule: \"" + s.rule + "\" is not sync, async or ssp");
      } else if (a == "--backup") {
        s.backup = static_cast<std::size_t>(number(argc, argv, i));
      } else if (a == "--steps") {
        s.steps = static_cast<std::size_t>(number(argc, argv, i));
      } else if (a == "--pushes") {
        s.pushes = static_cast<std::size_t>(number(argc, argv, i));
      } else if (a == "--step-ms") {
        s.step_ms = static_cast<int>(number(argc, argv, i));
      } else if (a == "--session") {
        if (i + 1 >= argc) throw dsgd::error(dsgd::errc::invalid_argument, "option --session needs a directory");
        s.session_dir = argv[++i];
      } else if (a == "--recovery-timeout-s") {
        s.recovery_timeout_s = number(argc, argv, i);
      } else if (a == "--token") {
        if (i + 1 >= argc) throw dsgd::error(dsgd::errc::invalid_argument, "option --token needs a value");
        s.token = argv[++i];
      } else if (a == "--save-steps") {
        s.save_steps = static_cast<std::size_t>(number(argc, argv, i));
      } else if (a == "--recover") {
        s.recover = true;
      } else if (a == "--vars") {
        s.vars = static_cast<std::size_t>(number(argc, argv, i));
      } else if (a == "--step-timeout-ms") {
        s.step_timeout_ms = number(argc, argv, i);
      } else if (a == "--chief-timeout-ms") {
        s.chief_timeout_ms = number(argc, argv, i);
      } else if (a == "--ready-timeout-ms") {
        s.ready_timeout_ms = number(argc, argv, i);
      } else if (a == "--startup-timeout-ms") {
        s.startup_timeout_ms = number(argc, argv, i);
      } else if (a == "--dead-peer-timeout-s") {
        s.dead_peer_timeout_s = number(argc, argv, i);
      } else {
        throw dsgd::error(dsgd::errc::invalid_argument, "unknown option \"" + a + "\"");
      }
    }
    if (s.vars == 0) throw dsgd::error(dsgd::errc::invalid_argument, "option --vars: at least one counter");
  } catch (const dsgd::error& e) {
    emit(std::string("counter_job: ") + e.what());
    return 2;
  }
  try {
    if (s.rule == "async") return run<dsgd::update::async>(s);
    if (s.rule == "ssp") return run<dsgd::update::bounded_staleness>(s);
    return run<dsgd::update::sync_average>(s);
  } catch (const std::exception& e) {
    emit(std::string("error other: ") + e.what());
    return 4;
  }
}
